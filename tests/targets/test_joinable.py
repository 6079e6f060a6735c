"""Kinds of block that differ by their activation and by a pad's widths are one function (keras-jax) and one class
(torch-xla) with the activation and the widths as arguments (Note [the activation as an argument], Note [pad widths
as one argument] in src/portx/targets/joinable.py), as keras.applications writes MobileNetV3's
``_inverted_res_block(..., activation, ...)``; the pad, passed by the stride-2 blocks only, and the squeeze-excite
count, passed by the blocks with one, their parts' only tests (Note [a flag its keyword stands for] in
src/portx/targets/tested_flags.py); verified, Keras weight paths and torch state_dict keys the source's."""
import re

import numpy as np
import pytest

import portx
from portx.targets.keras_jax.choices import flag_test
from portx.targets.optional_parts import Layout
from tests.support.structured_code import assert_keras_trains_saves_reloads, structure

keras = pytest.importorskip("keras")
layers = keras.layers
PARTS = ("expand", "expand_bn", "depthwise", "depthwise_bn", "project", "project_bn")


def _block(x, name, filters, kernel, stride, pad, act, se):
    """MobileNetV3-style: expand, the activation, a depthwise conv (padded before stride 2), squeeze-excite to ``se``
    filters where ``se``, project, add."""
    h = layers.Conv2D(filters * 2, 1, use_bias=False, name=f"{name}_expand")(x)
    h = layers.BatchNormalization(name=f"{name}_expand_bn")(h)
    h = act(f"{name}_activation")(h)
    if stride == 2:
        h = layers.ZeroPadding2D(pad, name=f"{name}_pad")(h)
    h = layers.DepthwiseConv2D(kernel, strides=stride, padding="valid" if stride == 2 else "same", use_bias=False,
                               name=f"{name}_depthwise")(h)
    h = layers.BatchNormalization(name=f"{name}_depthwise_bn")(h)
    h = act(f"{name}_activation_1")(h)
    if se:
        s = layers.GlobalAveragePooling2D(keepdims=True, name=f"{name}_se_pool")(h)
        s = layers.ReLU(name=f"{name}_se_relu")(layers.Conv2D(se, 1, name=f"{name}_se_reduce")(s))
        s = layers.Conv2D(filters * 2, 1, activation="sigmoid", name=f"{name}_se_expand")(s)
        h = layers.Multiply(name=f"{name}_se_mul")([h, s])
    h = layers.Conv2D(filters, 1, use_bias=False, name=f"{name}_project")(h)
    h = layers.BatchNormalization(name=f"{name}_project_bn")(h)
    return layers.Add(name=f"{name}_add")([x, h]) if stride == 1 and x.shape[-1] == filters else h


def _model():
    keras.utils.set_random_seed(0)
    relu = lambda name: layers.ReLU(name=name)  # noqa: E731
    hard_swish = lambda name: layers.Activation("hard_silu", name=name)  # noqa: E731
    x = inputs = keras.Input((16, 16, 4), name="image")
    for stage, (filters, kernel, pad, act, ses) in enumerate([(8, 5, ((1, 2), (1, 2)), relu, (4, 6, 6, 6)),
                                                              (12, 3, ((0, 1), (0, 1)), hard_swish, (0, 0, 0, 0))], 1):
        for letter, se in zip("abcd", ses):  # squeeze-excite where the most blocks are, its counts differing
            x = _block(x, f"block{stage}{letter}", filters, kernel, 2 if letter == "a" else 1, pad, act, se)
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
        assert "if pad_width is not None:" in code and "strided" not in code, code  # one argument, not two
        assert "if filters_se_reduce:" in code and "se=" not in code, code  # the count is the part's test
        # Note [flags at the most blocks' value]: 6 of 8 blocks add their input, the two stride-2 ones pass False
        assert "residual=True" in head and code.count("residual=False") == 2 and "residual=True" not in \
            code.split(head)[1], code
        assert "keras.activations.relu" in code and "keras.activations.hard_silu" in code, code
        assert [w.path for w in result.model.weights] == [w.path for w in model.weights]
        assert_keras_trains_saves_reloads(result.model, x, (2, 12), tmp_path)
    else:
        assert "self.act(" in code and "F.pad(activation, self.pad)" in code, code
        assert "if self.pad is not None:" in code and "strided" not in code, code  # one argument, not two
        assert "if self.se_reduce is not None:" in code and "se=" not in code, code  # the count is the part's test
        assert "residual=True):" in code and code.count("residual=False)") == 2, code  # the most blocks' value
        assert "pad=(0, 1, 0, 1)" in code and "pad=(1, 2, 1, 2)" in code and "F.hardswish" in code, code
        modules = {key.rsplit(".", 1)[0] for key in result.model.state_dict()}  # each block's at its source path
        assert modules == {f"block{stage}.{i}.{part}" for stage in (1, 2) for i in range(4)
                           for part in PARTS + ("se_reduce", "se_expand") * (stage == 1)}, modules


def _layout(tested, keywords):
    layout = Layout(None, [], [], [], [], list(tested), {}, keywords=keywords)
    layout.tested, layout.names = dict(tested), {3: "pad_width", 4: "filters_se", 5: "filters_extra"}
    return layout


def test_a_flag_test_reads_a_lone_text_piece_only():
    """Note [a flag its keyword stands for]: a place's test is one text piece; other statements' pieces may hold
    tuples (an auto-named layer's ``k``: the cut blocks, NASNet's cells) and are no test (they crashed ``join``)."""
    layout = _layout({"strided": 3, "se": 4}, {3: "None", 4: "0"})
    assert flag_test(layout, [("t", "if strided:")]) == "if pad_width is not None:"
    assert flag_test(layout, [("t", "if se:")]) == "if filters_se:"
    assert flag_test(layout, [("t", "if residual:")]) is None
    assert flag_test(layout, [("v", "x"), ("t", " = layers.Conv2D(8, name="), ("k", ("conv2d", 3)), ("t", ")(y)")]) \
        is None
    assert flag_test(layout, [("k", ("conv2d", 3))]) is None and flag_test(None, [("t", "if strided:")]) is None


def test_a_count_two_flags_share_or_no_submodule_to_test_keeps_the_flags():
    """Note [a flag its keyword stands for]: the zoo MobileNetV3's squeeze-excite and residual are set by the same
    blocks, so its ``__init__``-only count would stand for both; torch-xla's ``residual`` (an add in ``forward``)
    has no submodule to test (it raised KeyError), so it keeps its flag, and the count stands for ``se`` alone."""
    names = {3: "pad_width", 4: "out_channels_se_fc1", 5: "out_channels_extra"}.get
    layout = _layout({"se": 4, "residual": 4}, {4: "0"})
    layout.counted(names)  # one column, two flags: neither
    assert layout.tested == {}
    layout = _layout({"se": 4, "residual": 4}, {4: "0"})
    layout.counted(names, lambda flag, col: flag == "se")  # torch: only se's part holds a submodule
    assert layout.tested == {"se": 4} and layout.test("se", "out_channels_se_fc1") == "out_channels_se_fc1"
    layout = _layout({"strided": 3, "se": 5}, {3: "None", 5: "0"})
    layout.counted({3: "pad_width", 5: "strides"}.get)  # a stride stands for no part
    assert layout.tested == {"strided": 3}


def test_a_flag_defaults_to_the_most_blocks_value():
    """Note [flags at the most blocks' value]: a flag most blocks set defaults to True and the others pass False;
    a tie or fewer default to False, and the blocks that set it pass True."""
    blocks = [object() for _ in range(4)]
    sets = [{"residual", "expand"}, {"residual"}, {"residual", "expand"}, set()]
    layout = Layout(None, [], [], [], [], ["expand", "residual"], {id(b): s for b, s in zip(blocks, sets)})
    layout.numbers = {id(b): [] for b in blocks}
    assert [layout.default(f) for f in layout.flags] == [False, True]  # expand: 2 of 4, a tie
    assert [layout.flags_of(b) for b in blocks] == [[("expand", True)], [], [("expand", True)], [("residual", False)]]
