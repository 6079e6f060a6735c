"""Per-block rows of a model verified whole (Note [block rows] in verification/block_rows.py): each repeated block,
cut from the loaded emitted model (no second build), run on the source's values at its inputs; rows in report.json,
errors small, and a wrong weight in one emitted block fails that block's row only."""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402
from portx.options import Output  # noqa: E402
from portx.session.conversion import Conversion  # noqa: E402
from portx.session.report import BlockRow, ConversionReport  # noqa: E402
from portx.targets import TARGETS  # noqa: E402
from portx.verification.block_rows import block_problem, block_rows  # noqa: E402
from tests.support.zoo import ZOO  # noqa: E402

TARGET_NAMES = ["keras-jax", "torch-xla"]


def _rows(source, to, tmp_path, example_inputs=None, wrong=None):
    """The block rows of ``source`` converted up to its emitted, loaded model; ``wrong``: the block whose first
    weight matrix is scaled by 1.5 in the emitted model first (a constant added would vanish after a norm)."""
    conversion = Conversion(source, TARGETS[to], example_inputs=example_inputs, output=Output(out=tmp_path / "out"))
    with conversion.staged():  # the staging folder holds model.py while the blocks are cut
        for stage in (conversion.load, conversion.lower, conversion.passes, conversion.free_dims, conversion.emit):
            stage()
        if wrong is not None:
            _scale(conversion.model, wrong)
        return block_rows(conversion.src, conversion.graph, conversion.model, conversion.emitted, conversion.target)


def _scale(model, key):
    if isinstance(model, torch.nn.Module):
        weight = next(p for n, p in model.named_parameters() if key in n and p.ndim == 2)
        with torch.no_grad():
            weight.mul_(1.5)
        return
    variable = next(v for v in model.weights if v.path.startswith(key.replace(".", "_")) and len(v.shape) == 2)
    variable.assign(variable.value * 1.5)


@pytest.mark.parametrize("to", TARGET_NAMES)
def test_a_vit_gets_a_row_per_encoder_layer_in_report_json(to, tmp_path):
    model, inputs = ZOO["vit"]()
    result = portx.convert(model, to=to, example_inputs=inputs, output=Output(out=tmp_path / "out"))
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    rows = ConversionReport.read(written).blocks
    assert [row.block for row in rows] == ["encoder.layers.0", "encoder.layers.1"], written["blocks"]
    for row in rows:
        assert isinstance(row, BlockRow) and row.passed is True and row.kind == 0, row
        assert row.outputs and all(o.paired and o.max_abs < 1e-4 for o in row.outputs), row
    assert result.stage_times["blocks"] >= 0 and not block_problem(rows)


@pytest.mark.parametrize("to", TARGET_NAMES)
def test_a_resnet_compares_its_blocks_in_the_source_s_axis_order(to, tmp_path):
    """keras-jax stores the activations channels-last (Note [stored orders]); the rows compare them all the same."""
    model, inputs = ZOO["resnet"]()
    rows = _rows(model, to, tmp_path, inputs)
    assert [row.block for row in rows] == ["layer1.0", "layer1.1", "layer2.1"]  # layer2.0 (strided) is one of a kind
    assert all(row.passed and row.worst() < 1e-4 for row in rows), rows


@pytest.mark.parametrize("to", TARGET_NAMES)
def test_a_wrong_weight_in_one_emitted_block_fails_that_row_only(to, tmp_path):
    model, inputs = ZOO["gpt"]()
    rows = _rows(model, to, tmp_path, inputs, wrong="blocks.1")
    assert [(row.block, row.passed) for row in rows] == [("blocks.0", True), ("blocks.1", False)], rows
    assert rows[0].worst() < 1e-4 < rows[1].worst()
    assert block_problem(rows).startswith("block blocks.1 ")


def _keras_blocks():
    """A functional Keras model of three residual blocks named as keras.applications names them."""
    keras.utils.set_random_seed(0)
    x = inputs = keras.Input((8, 16))
    x = keras.layers.Dense(16, name="stem")(x)
    for i in range(1, 4):
        h = keras.layers.LayerNormalization(name=f"block_{i}_norm")(x)
        h = keras.layers.Dense(32, activation="gelu", name=f"block_{i}_up")(h)
        h = keras.layers.Dense(16, name=f"block_{i}_down")(h)
        x = keras.layers.Add(name=f"block_{i}_out")([x, h])
    return keras.Model(inputs, keras.layers.Dense(4, name="head")(x))


@pytest.mark.parametrize("to", TARGET_NAMES)
def test_a_keras_file_gets_rows_and_a_wrong_weight_shows_in_its_block(to, tmp_path):
    path = tmp_path / "blocks.keras"
    _keras_blocks().save(path)
    rows = _rows(str(path), to, tmp_path / "right")
    assert [row.block for row in rows] == ["block_1", "block_2", "block_3"], rows
    assert all(row.passed and row.worst() < 1e-4 for row in rows), rows
    rows = _rows(str(path), to, tmp_path / "wrong", wrong="block_2_up" if to == "keras-jax" else "block.1.up")
    assert [row.passed for row in rows] == [True, False, True], rows


def test_a_keras_hub_backbone_gets_a_row_per_transformer_layer(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    keras.utils.set_random_seed(0)
    model = keras_hub.models.GPT2Backbone(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64,
                                          num_heads=2, max_sequence_length=16)
    result = portx.convert(model, to="torch-xla", out=tmp_path / "out", grad=False)
    rows = result.typed.blocks
    assert [row.block for row in rows] == ["transformer_layer_0", "transformer_layer_1"], rows
    assert all(row.passed and row.worst() < 1e-4 for row in rows), rows
