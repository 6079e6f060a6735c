"""Hugging Face checkpoint folders (frontends/hf.py, weights/): a small random Llama saved by transformers'
``save_pretrained`` in several shards converts to keras-jax with default options, verifies, keeps its dtype, writes
sharded Keras weights that the emitted ``load_model()`` reads, with the batch and the sequence free; damaged
folders are one line naming the file (exit 2) and leave no OUT.
"""
import json
import sys

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import portx
from portx.cli import main
from portx.errors import BadInput
from portx.frontends import load

transformers = pytest.importorskip("transformers")


def _folder(path, dtype="bfloat16", tie=False):
    """A 2-layer Llama (hidden 64, vocab 256) with random weights, saved in 3 shards with an index."""
    config = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=128, vocab_size=256,
                                      max_position_embeddings=128, tie_word_embeddings=tie)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).to(getattr(torch, dtype)).save_pretrained(path, max_shard_size="100KB")
    return path


@pytest.fixture(scope="module", params=["bfloat16", "float32"])
def converted(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"hf_{request.param}")
    folder = _folder(root / "llama", request.param)
    return request.param, folder, portx.convert(folder, out=root / "out", max_shard_size="100KB")


def test_a_sharded_folder_converts_verifies_and_keeps_its_dtype(converted):
    dtype, folder, result = converted
    assert len(list(folder.glob("model-*-of-*.safetensors"))) >= 2
    assert result.report["verification"]["passed"], result.report["verification"]
    assert result.report["outputs"][0][2] == dtype  # the logits, as the checkpoint computes them
    stored = {str(a.dtype) for name, a in result.graph.params.items() if a.ndim == 2}
    assert stored == {dtype}, stored


def test_the_batch_and_the_sequence_stay_free(converted):
    _, _, result = converted
    rows = {row["symbol"]: row for row in result.report["dynamic"]}
    assert rows["batch"]["free"] and rows["sequence"]["free"], result.report["warnings"]
    assert all(c["passed"] for row in rows.values() for c in row["verified"])
    assert "keras.Input(shape=(None,), dtype='int32'" in (result.out / "model.py").read_text()


def test_the_weights_are_sharded_and_load_model_reads_them(converted, monkeypatch):
    dtype, folder, result = converted
    index = json.loads((result.out / "model.weights.json").read_text())
    shards = sorted(p.name for p in result.out.glob("model_*.weights.h5"))
    placed = {n for v in index["weight_map"].values() for n in ([v] if isinstance(v, str) else v)}
    assert len(shards) >= 2 and sorted(placed) == shards
    monkeypatch.syspath_prepend(str(result.out))
    sys.modules.pop("model", None)
    import model as emitted  # the user's way in: model.py's load_model()

    keras_model = emitted.load_model()
    sys.modules.pop("model", None)
    ids = np.random.default_rng(0).integers(0, 256, (3, 5)).astype("int32")  # sizes the conversion did not see
    got = np.asarray(keras_model(ids), dtype="float32")
    source = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).eval()
    with torch.no_grad():
        want = source(input_ids=torch.from_numpy(ids).long()).logits.float().numpy()
    assert {v.dtype for v in keras_model.weights if len(v.shape) == 2} == {dtype}
    assert np.abs(got - want).max() <= (0.1 if dtype == "bfloat16" else 1e-4) * np.abs(want).max()


def test_above_the_weight_budget_blocks_verify_one_at_a_time_and_the_tpu_proof_is_abstract(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTX_WEIGHT_BUDGET", "100KB")  # Note [weight budget]: the folder holds 209 kB
    result = portx.convert(_folder(tmp_path / "llama"), out=tmp_path / "out", max_shard_size="100KB", grad=True)
    report = result.report
    ver = report["verification"]  # Note [streaming verification]: each block on the source's own values
    assert ver["mode"] == "streaming" and ver["passed"] is True, ver
    assert [row["block"] for row in report["blocks"]] == ["(glue)", "model.model.layers.0", "model.model.layers.1",
                                                         "(glue)"]
    assert all(o["paired"] for row in report["blocks"] for o in row["outputs"])
    assert ver["outputs"][0]["passed"] and ver["outputs"][0]["max_abs"] is not None  # the logits, end to end
    errors = report["node_errors"]  # Note [trace per segment]: the embeddings and the first block, node by node
    assert errors["segments"] == ["(glue)", "model.model.layers.0"] and len(errors["rows"]) > 10, errors
    grads = report["gradients"]  # Note [abstract gradients]: lowered for the CPU and TPU, nothing compared
    assert grads["passed"] is None and grads["abstract"]["platforms"] == {"cpu": "lowered", "tpu": "lowered"}, grads
    assert grads["abstract"]["parameters"] == len(result.model.trainable_variables)
    assert report["tpu"]["verdict"] in ("ok", "problems"), report["tpu"]  # lowered on ShapeDtypeStructs
    assert report["training"]["trainable_match"], report["training"]
    assert not any(v._value is not None for v in result.model.weights)  # no weight memory was allocated
    model = portx.targets.TARGETS["keras-jax"].load(result.out)
    assert model(np.zeros((1, 3), "int32")).shape == (1, 3, 256)


def test_an_hf_folder_is_not_taken_for_a_savedmodel(tmp_path):
    src = load(_folder(tmp_path / "llama"))
    assert type(src).__name__ == "TorchSource" and src.dynamic_dims()[0]["symbol"] == "sequence"
    assert src.module.model.lm_head.weight.dtype == torch.bfloat16


def test_tied_embeddings_take_the_one_stored_table(tmp_path):
    src = load(_folder(tmp_path / "llama", tie=True))
    model = src.module.model
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def test_dtype_float32_widens_a_bfloat16_folder(tmp_path):
    src = load(_folder(tmp_path / "llama"), dtype="float32")
    assert {p.dtype for p in src.module.parameters()} == {torch.float32}


# -- bad input: one line naming the file, exit 2, no OUT -----------------------------------------------------


def _convert_cli(folder, out, *extra):
    return CliRunner().invoke(main, ["convert", str(folder), "-o", str(out), *extra])


def _missing_shard(folder):
    victim = sorted(folder.glob("model-*.safetensors"))[1]
    victim.unlink()
    return victim.name, "missing"


def _index_disagrees(folder):
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    name = next(iter(index["weight_map"]))
    first = sorted(folder.glob("model-*.safetensors"))
    index["weight_map"][name] = next(p.name for p in first if p.name != index["weight_map"][name])
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return index["weight_map"][name], "lacks 1 tensors the index places in it"


def _config_disagrees(folder):
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] = 96
    (folder / "config.json").write_text(json.dumps(config))
    return "model-0000", r"mlp\.\w+_proj\.weight is \[\d+, \d+\], config\.json makes it"


def _truncated_header(folder):
    victim = sorted(folder.glob("model-*.safetensors"))[0]
    victim.write_bytes(victim.read_bytes()[:40])
    return victim.name, "truncated safetensors header"


@pytest.mark.parametrize("damage", [_missing_shard, _index_disagrees, _config_disagrees, _truncated_header])
def test_a_damaged_folder_is_one_line_naming_the_file(damage, tmp_path):
    folder = _folder(tmp_path / "llama")
    name, what = damage(folder)
    run = _convert_cli(folder, tmp_path / "out")
    assert run.exit_code == 2, run.output
    assert run.output.count("\n") <= 2 and "Traceback" not in run.output
    assert name in run.output and pytest.importorskip("re").search(what, run.output), run.output
    assert not (tmp_path / "out").exists()


def test_remote_code_is_refused_without_trust(tmp_path):
    folder = _folder(tmp_path / "llama")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w')\n")
    run = _convert_cli(folder, tmp_path / "out")
    assert run.exit_code == 2 and "auto_map" in run.output and "--trust-remote-code" in run.output, run.output
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()
    with pytest.raises(BadInput, match="auto_map"):
        load(folder)
