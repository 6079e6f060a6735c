"""passes/blocks_suffix.py: a Keras model naming its blocks by a suffix id, as keras.applications' NASNet names its
cells (``normal_conv_1_0``; Note [blocks named by a suffix]): found, and written once on both targets, each cell
taking the two cells' outputs before it."""
import numpy as np
import pytest
import torch

import portx
from portx.options import Checks, Output
from portx.targets.codegen import import_by_path
from tests.support.structured_code import assert_structured


def _normal_cell(ip, p, filters, block_id):
    """A cell built as keras.applications' ``_normal_a_cell(ip, p, filters, block_id)``: ``p`` projected to
    ``filters`` (its ``_adjust_block``), layers named with the id last, the ReLUs named by Keras."""
    import keras
    layers = keras.layers
    if p.shape[-1] != filters:
        p = layers.Activation("relu")(p)
        p = layers.Conv2D(filters, 1, use_bias=False, name=f"adjust_conv_projection_{block_id}")(p)
        p = layers.BatchNormalization(name=f"adjust_bn_{block_id}")(p)
    h = layers.Activation("relu")(ip)
    h = layers.Conv2D(filters, 1, use_bias=False, name=f"normal_conv_1_{block_id}")(h)
    h = layers.BatchNormalization(name=f"normal_bn_1_{block_id}")(h)
    x1 = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False,
                                name=f"separable_conv_1_normal_left1_{block_id}")(layers.Activation("relu")(h))
    x1 = layers.add([x1, p], name=f"normal_add_1_{block_id}")
    x2 = layers.AveragePooling2D(3, strides=1, padding="same", name=f"normal_left2_{block_id}")(p)
    x2 = layers.add([x2, h], name=f"normal_add_2_{block_id}")
    return layers.concatenate([p, x1, x2], name=f"normal_concat_{block_id}"), ip


def _reduction_cell(ip, p, filters, block_id):
    """A reduction cell, its id a word and a number (``reduce_4``), as NASNet's ``_reduction_a_cell``."""
    import keras
    layers = keras.layers
    h = layers.Activation("relu")(ip)
    h = layers.Conv2D(filters, 1, use_bias=False, name=f"reduction_conv_1_{block_id}")(h)
    h = layers.BatchNormalization(name=f"reduction_bn_1_{block_id}")(h)
    x1 = layers.MaxPooling2D(3, strides=2, padding="same", name=f"reduction_left1_{block_id}")(h)
    x2 = layers.AveragePooling2D(3, strides=2, padding="same", name=f"reduction_right1_{block_id}")(p)
    return layers.concatenate([x1, x2], name=f"reduction_concat_{block_id}"), ip


def _cells():
    """Four normal cells and a reduction cell on a 8x8 stem; cells 1 to 3 read two cells' outputs alike."""
    import keras
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="stem_conv1")(inputs)
    p = x = keras.layers.BatchNormalization(name="stem_bn1")(x)
    for i in range(4):
        x, p = _normal_cell(x, p, 4, str(i))
    x, p = _reduction_cell(x, p, 4, "reduce_4")
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    return keras.Model(inputs, x, name="cells")


@pytest.fixture(scope="module")
def cells():
    model = _cells()
    for layer in model.layers:  # batch norms away from the identity, so that a wrong statistic shows
        if layer.__class__.__name__ == "BatchNormalization":
            layer.moving_mean.assign(np.random.default_rng(1).normal(0, 0.5, layer.moving_mean.shape))
            layer.moving_variance.assign(np.random.default_rng(2).uniform(0.5, 2, layer.moving_variance.shape))
    return model, np.random.default_rng(0).uniform(0, 1, (2, 8, 8, 3)).astype(np.float32)


def test_cells_named_by_a_suffix_are_blocks_of_their_kind(cells, tmp_path):
    model, x = cells
    result = portx.convert(model, to="keras-jax", output=Output(out=tmp_path / "o"))
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    blocks = result.graph.meta["blocks"]
    assert [(b["key"], b["parent"], b["index"]) for b in blocks] == \
        [("0", "normal", 0), ("1", "normal", 1), ("2", "normal", 2), ("3", "normal", 3), ("reduce_4", "reduction", 0)]
    assert blocks[1]["kind"] == blocks[3]["kind"] != blocks[0]["kind"]  # cell 0 reads the stem as both inputs
    shape = assert_structured(result, "keras-jax")
    assert shape["written"] == ["1", "2", "3"], shape
    code = (result.out / "model.py").read_text()
    assert 'name=f"normal_conv_1_{name}"' in code and "name='2')" in code, code
    np.testing.assert_allclose(np.asarray(result.model(x, training=False)), np.asarray(model(x, training=False)),
                               atol=1e-5, rtol=1e-4)
    # every layer holding weights keeps its source name (a separable conv is written as its two convs)
    names = {layer.name for layer in model.layers if layer.weights and "separable" not in layer.name}
    assert names <= {layer.name for layer in result.model.layers}


def test_cells_named_by_a_suffix_are_one_torch_class_nested_by_kind(cells, tmp_path):
    model, x = cells
    result = portx.convert(model, to="torch-xla", output=Output(out=tmp_path / "o"), checks=Checks())
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    shape = assert_structured(result, "torch-xla")
    assert {"1", "2", "3"} <= set(shape["written"]), shape
    net = import_by_path(result.out / "model.py").load_model()
    keys = set(net.state_dict())
    assert {"normal.2.normal_conv_1.weight", "normal.2.separable_conv_1_normal_left1.depthwise.weight",
            "normal.1.adjust_bn.running_var"} <= keys, sorted(keys)[:10]
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, np.asarray(model(x, training=False)), atol=1e-5, rtol=1e-4)


class _Numbered(torch.nn.Module):
    """A torch model naming its layers with a number last (``conv_1``, ``bn_1``, ``relu_1``): no block (Note [blocks
    named by a suffix]: no word of the last layer's name names the others)."""

    def __init__(self):
        super().__init__()
        for i in (1, 2):
            setattr(self, f"conv_{i}", torch.nn.Conv2d(4, 4, 3, padding=1))
            setattr(self, f"bn_{i}", torch.nn.BatchNorm2d(4))
            setattr(self, f"relu_{i}", torch.nn.ReLU())

    def forward(self, x):
        for i in (1, 2):
            x = getattr(self, f"relu_{i}")(getattr(self, f"bn_{i}")(getattr(self, f"conv_{i}")(x)))
        return x


def test_a_torch_model_numbering_its_layers_last_keeps_its_paths(tmp_path):
    torch.manual_seed(0)
    model = _Numbered().eval()
    result = portx.convert(model, example_inputs=(torch.randn(1, 4, 8, 8),), to="torch-xla",
                           output=Output(out=tmp_path / "o"), checks=Checks(verify=False))
    assert not result.graph.meta["blocks"]
    assert set(import_by_path(result.out / "model.py").load_model().state_dict()) == set(model.state_dict())
