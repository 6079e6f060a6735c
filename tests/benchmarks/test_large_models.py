"""benchmarks/large_models.py's folder writer: a tiny Llama written shard by shard is a Hugging Face folder that
``transformers`` loads offline, with the index, headers and bytes ``safetensors`` expects.

Example:
    pytest tests/benchmarks/test_large_models.py
"""
import json
from pathlib import Path

import pytest
import torch

from portx.targets.codegen import import_by_path

BENCH = import_by_path(Path(__file__).resolve().parents[2] / "benchmarks" / "large_models.py")


def test_tiny_llama_folder_loads_in_transformers_from_its_shards(tmp_path):
    from safetensors import safe_open
    from transformers import LlamaForCausalLM

    folder = BENCH.write_llama_folder(tmp_path / "llama", BENCH.SIZES["tiny"], shard_bytes=200_000)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    shards = sorted(p.name for p in folder.glob("model-*.safetensors"))
    assert len(shards) == 3 and sorted(set(index["weight_map"].values())) == shards
    expected = dict(BENCH.llama_tensors(BENCH.SIZES["tiny"]))
    stored = {}
    for name in shards:
        with safe_open(folder / name, framework="pt") as f:
            stored.update({key: f.get_tensor(key) for key in f.keys()})
    assert {k: tuple(t.shape) for k, t in stored.items()} == expected
    assert index["metadata"]["total_size"] == sum(t.numel() * 2 for t in stored.values())
    assert all(t.dtype == torch.bfloat16 for t in stored.values())
    assert torch.all(stored["model.norm.weight"] == 1) and 0.015 < stored["lm_head.weight"].float().std() < 0.025

    model = LlamaForCausalLM.from_pretrained(folder, local_files_only=True)
    assert model.config.num_hidden_layers == 2 and model.config.num_key_value_heads == 2
    state = model.state_dict()
    assert all(torch.equal(state[k].to(torch.bfloat16), t) for k, t in stored.items())
    with torch.no_grad():
        logits = model(torch.tensor([[1, 2, 3, 4]])).logits
    assert logits.shape == (1, 4, 1000) and torch.isfinite(logits).all()


def test_tree_rss_counts_this_process():
    import os

    assert BENCH.tree_rss(os.getpid()) > 10 << 20


@pytest.mark.slow
def test_a_1b_folder_converts_and_verifies_block_by_block(tmp_path):
    """PORTX_SLOW=1: the Llama-3.2-1B-shaped folder (2.5 GB of bfloat16, cached per machine) through the CLI as users
    run it: above the weight budget, so each decoder block is verified on its own (Note [streaming verification])
    and the process never holds the weights twice."""
    from click.testing import CliRunner

    from portx.cli import main

    folder = BENCH.cached_folder("1b")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(folder), "--to", "keras-jax", "-o", str(out), "--no-shard-proof"])
    assert run.exit_code == 0, run.output
    report = json.loads((out / "report.json").read_text())
    ver = report["verification"]
    assert ver["mode"] == "streaming" and ver["passed"] is True
    assert [row["block"] for row in report["blocks"]][1:-1] == [f"model.model.layers.{i}" for i in range(16)]
    assert (out / "model.weights.json").is_file() and len(list(out.glob("model_*.weights.h5"))) >= 2
    code = (out / "model.py").read_text()  # one decoder layer function, called in a loop (Note [structured code])
    assert code.count("\ndef llama_decoder_layer(") == 1 and code.count("llama_decoder_layer(") <= 3, "flat layers"
