"""Kinds of block that differ by their activation and by a pad's widths are one function (keras-jax) and one class
(torch-xla) with the activation and the widths as arguments (Note [the activation as an argument], Note [pad widths
as one argument] in src/portx/targets/joinable.py), as keras.applications writes MobileNetV3's
``_inverted_res_block(..., activation, ...)``; verified, Keras weight paths and torch state_dict keys the source's."""
import re

import numpy as np
import pytest

import portx
from tests.support.structured_code import assert_keras_trains_saves_reloads, structure

keras = pytest.importorskip("keras")
layers = keras.layers
PARTS = ("expand", "expand_bn", "depthwise", "depthwise_bn", "project", "project_bn")


def _block(x, name, filters, kernel, stride, pad, act):
    """MobileNetV3-style: expand, the activation, a depthwise conv (padded before stride 2), project, add."""
    h = layers.Conv2D(filters * 2, 1, use_bias=False, name=f"{name}_expand")(x)
    h = layers.BatchNormalization(name=f"{name}_expand_bn")(h)
    h = act(f"{name}_activation")(h)
    if stride == 2:
        h = layers.ZeroPadding2D(pad, name=f"{name}_pad")(h)
    h = layers.DepthwiseConv2D(kernel, strides=stride, padding="valid" if stride == 2 else "same", use_bias=False,
                               name=f"{name}_depthwise")(h)
    h = layers.BatchNormalization(name=f"{name}_depthwise_bn")(h)
    h = act(f"{name}_activation_1")(h)
    h = layers.Conv2D(filters, 1, use_bias=False, name=f"{name}_project")(h)
    h = layers.BatchNormalization(name=f"{name}_project_bn")(h)
    return layers.Add(name=f"{name}_add")([x, h]) if stride == 1 and x.shape[-1] == filters else h


def _model():
    keras.utils.set_random_seed(0)
    relu = lambda name: layers.ReLU(name=name)  # noqa: E731
    hard_swish = lambda name: layers.Activation("hard_silu", name=name)  # noqa: E731
    x = inputs = keras.Input((16, 16, 4), name="image")
    for stage, (filters, kernel, pad, act) in enumerate([(8, 3, ((0, 1), (0, 1)), relu),
                                                         (12, 5, ((1, 2), (1, 2)), hard_swish)], 1):
        for letter in "abcd":
            x = _block(x, f"block{stage}{letter}", filters, kernel, 2 if letter == "a" else 1, pad, act)
    return keras.Model(inputs, layers.GlobalAveragePooling2D(name="pool")(x), name="tiny")


@pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])
def test_the_activation_and_the_pad_are_arguments_of_one_block(target, tmp_path):
    model = _model()
    x = np.random.default_rng(0).normal(size=(2, 16, 16, 4)).astype("float32")
    result = portx.convert(model, to=target, out=tmp_path / "out", checks=portx.Checks(grad=False))
    assert result.report["verification"]["passed"], result.report["verification"]
    shape = structure(result.graph, target)
    assert shape["defs"] == 1, shape  # four kinds of block, one definition
    code = result.files["code"].read_text()
    if target == "keras-jax":
        head = re.search(r"def \w+\(([^)]*)\)", code).group(1)
        assert re.search(r"\bact\b", head) and "pad_width=None" in head, head
        assert "layers.Activation(act, " in code and "ops.pad(activation, pad_width)" in code, code
        assert "keras.activations.relu" in code and "keras.activations.hard_silu" in code, code
        assert [w.path for w in result.model.weights] == [w.path for w in model.weights]
        assert_keras_trains_saves_reloads(result.model, x, (2, 12), tmp_path)
    else:
        assert "self.act(" in code and "F.pad(activation, self.pad)" in code, code
        assert "pad=(0, 1, 0, 1)" in code and "pad=(1, 2, 1, 2)" in code and "F.hardswish" in code, code
        modules = {key.rsplit(".", 1)[0] for key in result.model.state_dict()}  # each block's at its source path
        assert modules == {f"block{stage}.{i}.{part}" for stage in (1, 2) for i in range(4) for part in PARTS}, modules
