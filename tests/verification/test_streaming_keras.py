"""Block-by-block verification of a Keras source (Note [keras layer outputs], Note [streaming verification]): a
keras-hub preset with sharded weights, above a small weight budget, converts to torch-xla verified one top-level
layer at a time against the Keras layers' own outputs; a wrong weight fails the layer that holds it."""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import portx  # noqa: E402
from portx.frontends import load  # noqa: E402
from portx.passes.pipeline import inference_skip  # noqa: E402
from portx.targets import TARGETS  # noqa: E402
from portx.verification.compare import make_inputs  # noqa: E402
from portx.verification.recheck import prepared  # noqa: E402
from portx.verification.streaming import layer_of, segments, stream_verify  # noqa: E402

keras_hub = pytest.importorskip("keras_hub")
pytest.importorskip("torch")

_LAYERS = ["token_embedding", "transformer_layer_0", "transformer_layer_1", "sequence_output_layernorm"]


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """A 2-layer Llama 3 preset (100 KB of float32 weights) that keras-hub wrote as shards of about 32 KB."""
    folder = tmp_path_factory.mktemp("keras") / "preset"
    keras.utils.set_random_seed(0)
    model = keras_hub.models.Llama3Backbone(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64,
                                            num_query_heads=4, num_key_value_heads=2)
    model.save_to_preset(str(folder), max_shard_size=0.00003)
    assert len(list(folder.glob("model_*.weights.h5"))) >= 3
    return folder


def test_layer_of_is_the_top_level_layer():
    assert layer_of("transformer_layer_3.self_attention.query") == "transformer_layer_3"
    assert layer_of("token_embedding") == "token_embedding"


def test_above_the_budget_each_layer_verifies_against_the_keras_layer_output(preset, tmp_path, monkeypatch):
    monkeypatch.setenv("PORTX_WEIGHT_BUDGET", "20KB")  # Note [weight budget]: the preset holds 100 KB
    result = portx.convert(preset, to="torch-xla", out=tmp_path / "out", max_shard_size="30KB", grad=False)
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    ver = written["verification"]
    assert ver["mode"] == "streaming" and ver["passed"] is True, ver
    weighty = [row for row in written["blocks"] if row["weight_bytes"] > 100]  # not a pass's hoisted constants
    assert [row["block"] for row in weighty] == _LAYERS
    for row in weighty:  # every layer's output was compared with the Keras layer's own
        assert row["outputs"] and all(o["paired"] and o["max_abs"] is not None for o in row["outputs"]), row
    assert ver["outputs"][0]["paired"] and ver["outputs"][0]["max_abs"] < 1e-5
    errors = result.report["node_errors"]  # Note [trace per segment]: the layers up to the first block
    assert errors["segments"][-2:] == _LAYERS[:2] and errors["first_divergence"] is None, errors
    assert {row["node"].split(".")[0] for row in errors["rows"]} >= set(_LAYERS[:2])
    index = json.loads((tmp_path / "out" / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) >= 3  # written shard by shard
    tpu = result.report["tpu"]
    assert tpu["verdict"] == "ok" and tpu["abstract_weights"] is True, tpu  # Note [abstract torch proof]
    assert result.report["training"]["problem"] == ""  # the meta-device module's counts are the source's


def test_a_wrong_weight_fails_the_layer_that_holds_it(preset):
    src = load(preset)
    target = TARGETS["torch-xla"]
    graph = prepared(src.lower(), target, inference_skip(False, False), "source")
    name = next(p for p in graph.params if p.startswith("transformer_layer_1.") and graph.params[p].size > 100)
    wrong = graph.replace(params={**graph.params, name: graph.params[name] * np.float32(1.5)})
    report = stream_verify(src, wrong, target, make_inputs(graph, seed=0))
    failed = [row.block for row in report["segments"] if not row.passed]
    assert report["passed"] is False and failed == ["transformer_layer_1"], report["segments"]
    assert [s.key for s in segments(graph) if s.params and len(s.nodes) > 2] == _LAYERS


def test_a_preset_s_variables_are_views_of_its_h5_files(preset):
    """Note [mapped keras weights]: nothing is copied into memory when the folder is loaded."""
    import mmap

    def root(array):
        while isinstance(array, np.ndarray) and array.base is not None:
            array = array.base
        return getattr(array, "obj", array)  # np.frombuffer's memoryview of the mapping

    model = load(preset).model
    assert all(isinstance(root(np.asarray(v.value)), mmap.mmap) for v in model.weights)


def test_a_torch_segment_is_built_without_a_weights_file_and_holds_the_ir_arrays(preset, tmp_path, monkeypatch):
    """Note [torch segments in memory]: nothing written but model.py; a weight kept as it is is not copied."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    target = TARGETS["torch-xla"]
    graph = prepared(load(preset).lower(), target, inference_skip(False, False), "source")
    seg = next(s for s in segments(graph) if s.key == "transformer_layer_0")
    model = target.build(graph.replace(nodes=seg.nodes, inputs=seg.inputs, outputs=seg.outputs,
                                       params={p: graph.params[p] for p in seg.params},
                                       param_values={p: graph.param_values[p] for p in seg.params}))
    assert not list(tmp_path.rglob("*.safetensors"))
    pointers = {np.asarray(graph.params[p]).__array_interface__["data"][0] for p in seg.params
                if graph.params[p].ndim == 1}  # the norms' scales keep their layout
    held = {t.untyped_storage().data_ptr() for t in model.state_dict().values()}
    assert pointers and pointers <= held
