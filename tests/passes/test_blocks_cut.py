"""Blocks cut from the graph where the names number none (Note [blocks cut from the graph] in
src/portx/passes/blocks_cut.py): a functional Keras model whose layers Keras names itself (``conv2d_7``) and whose
three inception-like blocks (branches joined by a concatenation) are named only at their exit, converted to both
targets, verified, and written with one block function / class.
"""
import numpy as np
import pytest

import portx
from portx.frontends import load
from portx.options import Checks, Output
from portx.session.dims import lower_for
from portx.targets import TARGETS
from tests.support.structured_code import assert_structured

__all__ = []


def _inception_like(named=True, source_convs=False):
    """Three blocks of three branches (a 1x1 conv, conv-bn-relu-conv, pool-conv) and a concatenation, named
    ``mixed0``... (``named``) or by Keras; the blocks widen, so they differ in sizes only. ``source_convs``: each
    block's first conv named by the source (``b0_conv``)."""
    import keras
    from keras import layers

    keras.backend.clear_session()  # Keras numbers the layers it names from a process-wide count
    keras.utils.set_random_seed(0)
    x = inputs = keras.Input((8, 8, 3))
    # a stem: no block holds Keras' unnumbered ``conv2d`` (Note [numbered names in block functions])
    x = layers.BatchNormalization()(layers.Conv2D(8, 3, padding="same")(x))
    for i, filters in enumerate((4, 4, 6)):
        a = layers.Conv2D(filters, 1, name=f"b{i}_conv" if source_convs else None)(x)
        b = layers.BatchNormalization()(layers.Conv2D(filters, 1)(x))
        b = layers.Conv2D(filters, 3, padding="same")(layers.ReLU()(b))
        c = layers.Conv2D(filters, 1)(layers.AveragePooling2D(3, strides=1, padding="same")(x))
        x = layers.Concatenate(name=f"mixed{i}" if named else None)([a, b, c])
    return keras.Model(inputs, layers.Dense(5)(layers.GlobalAveragePooling2D()(x)))


def test_blocks_are_cut_at_the_concatenations_and_named_after_them():
    graph = lower_for(load(_inception_like(named=False)), TARGETS["torch-xla"])
    blocks = graph.meta["blocks"]
    assert [b["key"] for b in blocks] == ["block0", "block1", "block2"]  # a Keras-named exit: a generated name
    assert len({b["kind"] for b in blocks}) == 1
    # a layer with weights the source named keeps its name: no block of them is cut (Note [blocks cut from the graph])
    assert lower_for(load(_inception_like(source_convs=True)), TARGETS["torch-xla"]).meta["blocks"] == []


@pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])
def test_cut_blocks_are_written_once_and_verify(target, tmp_path):
    model = _inception_like()
    result = portx.convert(model, to=target, checks=Checks(grad=False), output=Output(out=tmp_path / "out"))
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    assert [b["key"] for b in result.graph.meta["blocks"]] == ["mixed0", "mixed1", "mixed2"]
    shape = assert_structured(result, target)
    assert shape["defs"] == 1, shape
    code = result.files["code"].read_text()
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype(np.float32)
    want = np.asarray(model(x))
    if target == "keras-jax":
        # the layers keep the source's names (Note [numbered names in block functions] in targets/auto_names.py)
        assert "def mixed_a(x, filters, n_batch_normalization, n_conv2d, name):" in code, code
        assert {w.path for w in result.model.weights} <= {w.path for w in model.weights}
        np.testing.assert_allclose(np.asarray(result.model(x)), want, rtol=1e-4, atol=1e-4)
        return
    import torch

    from portx.targets.codegen import import_by_path

    # each block's layers under ``mixed[i]``, named within the block (Note [auto names in cut blocks])
    net = import_by_path(result.out / "model.py").load_model()
    keys = set(net.state_dict())
    assert {"mixed.0.conv2d.weight", "mixed.2.conv2d_3.bias", "mixed.1.batch_normalization.running_mean"} <= keys
    with torch.no_grad():
        np.testing.assert_allclose(net(torch.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-4)
