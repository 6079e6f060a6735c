"""Sharded torch-xla weights (Note [torch shards]): Hugging Face's ``model-0000k-of-0000n.safetensors`` files and
``model.safetensors.index.json``, read by the emitted ``load_model()``, by ``safetensors`` itself and by
``portx.open_converted``; and the module the emitter hands to verification shares the IR's arrays.

Example:
    pytest tests/targets/torch_xla/test_shards.py
"""
import json

import ml_dtypes
import numpy as np
import pytest
import torch

import portx
from portx.errors import BadValue
from portx.frontends.torch import export_module, lower_exported
from portx.outputs import is_portx_output
from portx.targets import TARGETS
from portx.targets.codegen import import_by_path
from portx.targets.torch_xla.runtime import run_torch
from portx.targets.torch_xla.shards import plan_shards, shard_bytes, tensor_view, write_weights
from portx.verification.recheck import open_converted


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(16, 64)
        self.blocks = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(4)])
        self.norm = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.head(self.norm(torch.relu(self.blocks(self.embed(x)))))


def _graph():
    torch.manual_seed(0)
    model = _Mlp().eval()
    x = torch.randn(3, 16)
    return model, x, lower_exported(export_module(model, (x,)))


def test_small_shard_size_writes_shards_an_index_and_a_loader(tmp_path):
    model, x, graph = _graph()
    emitted = TARGETS["torch-xla"].emit(graph, tmp_path, max_shard_size=20_000)  # a 64x64 float32 block is 16 KB
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = sorted(p.name for p in tmp_path.glob("model-*.safetensors"))
    assert len(shards) >= 4 and not (tmp_path / "model.safetensors").exists()
    assert sorted(set(index["weight_map"].values())) == shards
    assert shards[0].endswith(f"-of-{len(shards):05d}.safetensors")
    assert emitted["weights"] == tmp_path / "model.safetensors.index.json"
    from safetensors.torch import load_file

    stored = {}
    for name in shards:  # safetensors' own reader; each shard within the limit unless one tensor is larger
        part = load_file(tmp_path / name)
        assert sum(t.numel() * t.element_size() for t in part.values()) <= 20_000 or len(part) == 1
        stored.update(part)
    assert index["metadata"]["total_size"] == sum(t.numel() * t.element_size() for t in stored.values())
    loaded = import_by_path(tmp_path / "model.py").load_model()  # the emitted loader reads the index
    assert set(stored) == set(loaded.state_dict())
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_torch(loaded, [x.numpy()])[0], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run_torch(emitted["model"], [x.numpy()])[0], expected, rtol=1e-5, atol=1e-5)
    (tmp_path / "report.json").write_text("{}")
    assert is_portx_output(tmp_path) == (True, "")
    assert open_converted(tmp_path).target.name == "torch-xla"


def test_transformers_style_index_is_read_by_safetensors_and_the_loader_refuses_a_missing_shard(tmp_path):
    _, _, graph = _graph()
    TARGETS["torch-xla"].emit(graph, tmp_path, max_shard_size="20KB")
    first = sorted(tmp_path.glob("model-*.safetensors"))[0]
    first.unlink()
    with pytest.raises(FileNotFoundError):
        import_by_path(tmp_path / "model.py").load_model()


def test_weights_below_the_shard_size_stay_one_file_and_the_module_shares_the_ir_arrays(tmp_path):
    _, x, graph = _graph()
    emitted = TARGETS["torch-xla"].emit(graph, tmp_path)  # default 2 GB: one model.safetensors, as before
    assert (tmp_path / "model.safetensors").is_file() and not (tmp_path / "model.safetensors.index.json").exists()
    assert "model.safetensors.index.json" not in emitted["code"].read_text()
    arrays = list(graph.params.values())
    shared = [t for t in emitted["model"].state_dict().values()
              if any(np.shares_memory(t.numpy(), a) for a in arrays)]
    assert len(shared) == len(emitted["model"].state_dict())  # no weight was copied into the module


def test_bfloat16_arrays_are_written_without_widening(tmp_path):
    from safetensors.torch import load_file

    rng = np.random.default_rng(0)
    state = {f"layer{i}.weight": rng.standard_normal((32, 32)).astype(ml_dtypes.bfloat16) for i in range(3)}
    tensors = {k: tensor_view(a) for k, a in state.items()}
    assert all(np.shares_memory(t.view(torch.int16).numpy(), state[k]) for k, t in tensors.items())
    index = write_weights(tensors, tmp_path, max_shard_size=2_100)  # 2 KB per bfloat16 32x32 table
    assert index.name == "model.safetensors.index.json"
    assert len(list(tmp_path.glob("model-*-of-00003.safetensors"))) == 3
    for key, name in json.loads(index.read_text())["weight_map"].items():
        stored = load_file(tmp_path / name)[key]
        assert stored.dtype == torch.bfloat16 and torch.equal(stored, tensors[key])


def test_shard_sizes_and_plans():
    assert shard_bytes("2GB") == 2 * 10**9 and shard_bytes("512MiB") == 512 << 20 and shard_bytes(10) == 10
    assert shard_bytes(None) == 2 * 10**9
    with pytest.raises(BadValue, match="max_shard_size 'lots' is not a size"):
        shard_bytes("lots")
    assert plan_shards({"a": 6, "b": 6, "c": 3}, 10) == [["a"], ["b", "c"]]
    assert plan_shards({"big": 50, "c": 3}, 10) == [["big"], ["c"]]  # a tensor past the limit gets its own shard
    assert plan_shards({}, 10) == []


def test_convert_result_names_the_index(tmp_path):
    model, x, _ = _graph()
    result = portx.convert(model, example_inputs=(x,), to="torch-xla", out=tmp_path / "out", grad=False)
    assert result.files["weights"] == tmp_path / "out" / "model.safetensors"
