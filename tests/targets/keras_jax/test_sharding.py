"""The emitted model's layout_map(mesh) and load_model(distribution=): sharded forward, TPU export with the
shardings and a 2-step fit on 8 CPU devices, against one device (one child process: tests/support/mesh_child.py).
"""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import portx
from portx.passes.pipeline import run_passes
from portx.targets.codegen import import_by_path
from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.keras_jax.sharding import resolve, split_patterns
from tests.support.harness import lower_torch
from tests.support.mesh_child import run_on_mesh
from tests.support.tiny_llama import tiny_llama
from tests.support.zoo import ZOO

MESH = {"batch": 2, "model": 4}


def _emit(model, inputs, folder):
    graph, arrays, _ = lower_torch(model, *inputs)
    graph = run_passes(graph, "keras-jax")
    emit_keras(graph, folder)
    arrays = [a.astype(v.type.dtype) for a, v in zip(arrays, graph.inputs)]
    np.savez(folder / "inputs.npz", *arrays)
    return str(folder)


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    return _emit(*tiny_llama(), tmp_path_factory.mktemp("llama"))


def test_layout_map_splits_keras_kernels_the_way_the_graph_says(llama_folder):
    import keras

    module = import_by_path(f"{llama_folder}/model.py")
    assert module.SHARDING[r"layers_\d+_self_attn_q_proj/kernel"] == ((32, 32), (1, 0))  # Dense kernel: (in, out)
    assert module.SHARDING[r"layers_\d+_mlp_down_proj/kernel"] == ((64, 32), (0, 1))  # one row for every block
    assert module.SHARDING["embed_tokens/embeddings"] == ((64, 32), (0, 1))
    mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"))
    layout = module.layout_map(mesh)
    assert tuple(layout["layers_0_self_attn_k_proj/kernel"].axes) == (None, "model")
    assert tuple(layout["lm_head/kernel"].axes) == (None, "model")  # (in, vocab)


def test_a_model_axis_that_divides_nothing_warns_and_keeps_the_weight_whole(llama_folder):
    import keras

    module = import_by_path(f"{llama_folder}/model.py")
    mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"))
    mesh._shape = (1, 3)  # layout_map reads only the sizes: 3 divides none of 16, 32, 64
    warned = re.escape(r"layout_map: layers_\d+_self_attn_k_proj/kernel (32, 16) has no dim")
    with pytest.warns(UserWarning, match=warned):
        layout = module.layout_map(mesh)
    assert tuple(layout["layers_0_self_attn_k_proj/kernel"].axes) == (None, None)


def test_block_rows_become_patterns_that_resolve_each_variable_as_before():
    flat = {f"layers_{i}_{name}/kernel": ((32, width), dims, role) for i in range(3)
            for name, width, dims, role in (("q", 32, (1, 0), "colwise"), ("o", 32, (0, 1), "rowwise"))}
    flat["layers_2_q/kernel"] = ((32, 16), (1, 0), "colwise")  # a block unlike the others keeps its rows
    flat["lm_head/kernel"] = ((32, 64), (1, 0), "vocab")
    blocks = [{"stem": "layers_"}]
    table = split_patterns(flat, blocks)
    assert set(table) == {r"layers_\d+_o/kernel", "layers_0_q/kernel", "layers_1_q/kernel", "layers_2_q/kernel",
                          "lm_head/kernel"}
    assert all(resolve(table, path) == value for path, value in flat.items())
    clash = {**flat, "layers_0_o/kernel": ((32, 32), (0, 1), "rowwise"), "xlayers_0_o/kernel": flat["lm_head/kernel"]}
    assert all(resolve(split_patterns(clash, blocks), path) == value for path, value in clash.items())


def _check_zoo(names, folders, tmp_path):
    for name in names:
        model, inputs = ZOO[name]()
        (tmp_path / name).mkdir()
        folders[name] = _emit(model, inputs, tmp_path / name)
    results = run_on_mesh(folders, MESH, fit=("tiny_llama",))  # the zoo's vit and text encoder have dropout
    for name, result in results.items():
        proof, fit = result["proof"], result["fit"]
        assert proof["passed"] and proof["max_abs_diff"] <= 1e-5, (name, proof["max_abs_diff"])
        assert proof["per_device_ratio"] <= 1.05, (name, proof["per_device_ratio"])
        assert proof["collectives"]["all-reduce"] > 0 and proof["tpu_export"]["devices"] == 8, name
        assert proof["tpu_export"]["sharded_inputs"] > 0, name
        if fit is not None:
            assert fit["moved"] > 1e-4 and fit["loss_diff"] <= 1e-5 and fit["weight_diff"] <= 1e-5, (name, fit)


def test_transformers_run_sharded_on_2x4_and_fit_like_one_device(llama_folder, tmp_path):
    _check_zoo(("gpt", "vit"), {"tiny_llama": llama_folder}, tmp_path)


@pytest.mark.slow
def test_the_other_zoo_models_run_sharded_on_2x4(tmp_path):
    _check_zoo(("text_encoder", "swin", "resnet", "convnext", "mlp"), {}, tmp_path)


def test_convert_with_a_mesh_writes_report_sharding(tmp_path):
    model, inputs = tiny_llama()
    result = portx.convert(model, example_inputs=inputs, out=tmp_path / "out", mesh="batch=2,model=4",
                           grad=False)
    sharding = json.loads((tmp_path / "out" / "report.json").read_text())["sharding"]
    assert sharding["verdict"] == "ok" and sharding["mesh"] == MESH
    assert sharding["specs"]["layers_0_mlp_gate_proj/kernel"] == [None, "model"]
    assert sharding["per_device_max"] <= 1.05 * sharding["weight_bytes"] / 4
    assert sharding["roles"]["colwise"] == 10 and sharding["roles"]["rowwise"] == 4
    assert result.report["sharding"]["collectives"]["all-reduce"] > 0


def test_a_model_with_no_weight_to_split_skips_the_mesh_proof_and_says_why(tmp_path):
    import torch

    class Scale(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    result = portx.convert(Scale(), example_inputs=(torch.ones(2, 3),), out=tmp_path / "out", mesh=MESH, grad=False)
    sharding = result.report["sharding"]
    assert sharding["verdict"] == "skipped" and "no weight to split" in sharding["why"], sharding


def test_cli_refuses_a_bad_mesh_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "portx.cli", "convert", str(tmp_path / "none.pt2"), "-o",
                           str(tmp_path / "out"), "--mesh", "batch=2,tensor=4"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--mesh batch=2,tensor=4: 'tensor=4' is not AXIS=SIZE" in done.stderr


def test_a_decoder_lowers_sharded_on_abstract_weights_without_its_weights_files(tmp_path):
    from portx.targets.keras_jax import mesh_process
    from portx.targets.keras_jax.mesh_proof import emit_structure, prove_sharded

    model, inputs = tiny_llama()
    graph, arrays, _ = lower_torch(model, *inputs)
    graph = run_passes(graph, "keras-jax")
    folder = emit_structure(graph, tmp_path).parent
    assert [p.name for p in folder.iterdir()] == ["model.py"]  # no weights written, none read back
    proof = prove_sharded(folder, MESH, arrays, abstract=True)  # a child process with 8 CPU devices
    assert proof["verdict"] == "lowered" and proof["abstract"] and proof["passed"] is None, proof
    assert proof["specs"]["layers_0_mlp_gate_proj/kernel"] == [None, "model"]
    assert proof["weight_bytes"] == graph.weight_bytes() and proof["per_device_ratio"] <= 1.05, proof
    assert proof["collectives"]["all-reduce"] > 0 and proof["tpu_export"]["devices"] == 8
    assert proof["tpu_export"]["sharded_inputs"] > 0
    child = [entry[0] for entry in mesh_process._CHILDREN.values()]  # Note [reused mesh process]
    missing = prove_sharded(tmp_path / "nowhere", {"model": 2}, arrays, abstract=True)
    assert missing["verdict"] == "failed" and "FileNotFoundError" in missing["problems"][0], missing
    again = prove_sharded(folder, {"model": 2}, arrays, abstract=True)  # the same child, which served on
    assert [entry[0] for entry in mesh_process._CHILDREN.values()] == child and again["verdict"] == "lowered", again
    assert again["per_device_ratio"] <= 1.05 and again["tpu_export"]["devices"] == 2  # a mesh without "batch"
