"""The emitted models split over a 2 x 4 mesh: per-device weight bytes against total / 4 ("model" axis), the
collectives XLA placed, and the largest sharded/unsharded output difference; the torch tp_plan() on 4 gloo
processes for the decoders.

Run: KERAS_BACKEND=jax PYTHONPATH=src:. .venv/bin/python benchmarks/sharding.py [names...]

Each model is lowered, passed and emitted here (no verification: tests do that), then one child process with 8
CPU devices (tests/support/mesh_child.py) runs the mesh proof of targets/keras_jax/mesh_proof.py for all of
them. Prints a Markdown table (docs/tpu.md "TPU slices (sharding)").

    ... benchmarks/sharding.py --abstract /work/.bench_cache/llama-8b     # a Hugging Face folder

``--abstract FOLDER``: the folder's model (config.json; its safetensors files are memory-mapped, not read) lowered
and emitted as model.py alone, then lowered sharded on the 2 x 4 mesh with abstract weights (Note [abstract mesh
proof] in targets/keras_jax/mesh_proof.py, one child process with 8 CPU devices): per-device weight bytes against
total / 4, the collectives, the TPU export, the seconds per stage and the peak RSS of this process and the child
(an upper bound: Linux carries the parent's high-water mark into a forked child). Then the gradient check's program
is lowered for the CPU and TPU on abstract weights (Note [abstract gradients] in verification/grad_program.py).
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

# benchmarks/transformers.py would shadow the transformers package for hf_llama
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402
import torch  # noqa: E402

from portx.passes.pipeline import run_passes  # noqa: E402
from portx.targets.keras_jax.emitter import emit_keras  # noqa: E402
from portx.targets.torch_xla.emitter import emit_torch  # noqa: E402
from tests.support.harness import lower_torch  # noqa: E402
from tests.support.mesh_child import run_on_mesh  # noqa: E402
from tests.support.tiny_llama import tiny_llama  # noqa: E402
from tests.support.tp_child import run_tp_plan  # noqa: E402
from tests.support.zoo import ZOO  # noqa: E402

MESH = {"batch": 2, "model": 4}
TRANSFORMERS = ("tiny_llama", "hf_llama", "gpt", "vit", "text_encoder", "swin")
CNNS = ("resnet", "convnext", "mobilenetv3", "mlp")


class Logits(torch.nn.Module):
    """A Hugging Face causal LM's logits from its token ids."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def hf_llama():
    """LlamaForCausalLM from its config (random weights, nothing downloaded), sdpa attention, 4 heads / 2 kv."""
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                                      max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(2))
    return Logits(transformers.LlamaForCausalLM(config).eval()), (ids,)


def _model(name):
    return {"tiny_llama": tiny_llama, "hf_llama": hf_llama}.get(name, ZOO.get(name))()


def _emit(name, root):
    model, inputs = _model(name)
    lowered, arrays, _ = lower_torch(model, *inputs)
    folder = root / name
    folder.mkdir()
    graph = run_passes(lowered, "keras-jax")
    emit_keras(graph, folder)
    np.savez(folder / "inputs.npz", *[a.astype(v.type.dtype) for a, v in zip(arrays, graph.inputs)])
    torch_folder = root / f"{name}_torch"
    torch_folder.mkdir()
    emit_torch(run_passes(lowered, "torch-xla"), torch_folder)
    return str(folder), torch_folder, arrays


def _torch_row(folder, arrays):
    from portx.targets.codegen import import_by_path

    with torch.no_grad():
        want = import_by_path(folder / "model.py").load_model()(*[torch.from_numpy(a) for a in arrays]).numpy()
    got, _ = run_tp_plan(folder, arrays, 4)
    return float(np.max(np.abs(got - want)))


def _row(name, proof, torch_diff) -> str:
    c = proof["collectives"]
    quarter = proof["weight_bytes"] / MESH["model"]
    return (f"| {name} | {proof['weight_bytes'] / 1024:.1f} | {proof['per_device_max'] / 1024:.1f} | "
            f"{quarter / 1024:.1f} | {proof['per_device_ratio']:.3f} | {c['all-gather']} / {c['reduce-scatter']} / "
            f"{c['all-reduce']} / {c['collective-permute']} | {proof['max_abs_diff']:.1e} | "
            f"{'-' if torch_diff is None else f'{torch_diff:.1e}'} |")


def abstract_row(folder):
    """One row for a Hugging Face folder proven sharded on abstract weights (see the module docstring)."""
    import resource
    import time

    from portx.frontends.hf import load_hf_folder
    from portx.targets.keras_jax.mesh_process import stop_all
    from portx.targets.keras_jax.mesh_proof import emit_structure, prove_sharded
    from portx.verification.compare import make_inputs

    times, start = {}, time.perf_counter()
    src = load_hf_folder(folder)
    graph = src.lower("model")
    times["load+lower"] = time.perf_counter() - start
    graph = run_passes(graph, "keras-jax")
    times["passes"] = time.perf_counter() - start - sum(times.values())
    with tempfile.TemporaryDirectory(prefix="portx-abstract-") as tmp:
        emit_structure(graph, tmp)
        times["model.py"] = time.perf_counter() - start - sum(times.values())
        proof = prove_sharded(tmp, MESH, make_inputs(graph, 0), timeout=1800, abstract=True)
        stop_all()  # the proof's process ends here, so that its peak RSS is counted below
        times["mesh proof"] = time.perf_counter() - start - sum(times.values())
        grads = _abstract_gradients(graph, Path(tmp) / "model.py")
    times["gradient program"] = time.perf_counter() - start - sum(times.values())
    gb, c = 1e9, proof["collectives"]  # GB of 10**9 bytes, like the README's other tables
    peaks = [resource.getrusage(who).ru_maxrss * 1024 / gb for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    print("| model | weights GB | max per device GB | total/4 GB | ratio | all-gather / reduce-scatter / all-reduce / "
          "permute | TPU export | seconds | peak RSS GB (this / child) |\n|---|---|---|---|---|---|---|---|---|")
    print(f"| {Path(folder).name} (abstract) | {proof['weight_bytes'] / gb:.2f} | {proof['per_device_max'] / gb:.2f} | "
          f"{proof['weight_bytes'] / MESH['model'] / gb:.2f} | {proof['per_device_ratio']:.3f} | {c['all-gather']} / "
          f"{c['reduce-scatter']} / {c['all-reduce']} / {c['collective-permute']} | {proof['tpu_export']['devices']} "
          f"devices | {sum(times.values()) - times['gradient program']:.0f} | {peaks[0]:.2f} / {peaks[1]:.2f} |")
    print("stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()) + f"; notes: {proof.get('notes')}")
    print(f"gradient program on abstract weights (Note [abstract gradients]): {grads}")


def _abstract_gradients(graph, code):
    """The gradient check's program lowered for the CPU and TPU with every weight a ShapeDtypeStruct."""
    from portx.targets.codegen import import_by_path
    from portx.targets.keras_jax.sharded import abstract_model
    from portx.verification.compare import make_inputs
    from portx.verification.grad_program import abstract_program

    rng = np.random.default_rng(1)
    weights = [rng.normal(size=v.type.shape).astype(np.float32) for v in graph.outputs]
    return abstract_program(abstract_model(import_by_path(code)), make_inputs(graph, 0), weights)


def main(names):
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="portx-sharding-") as tmp:
        emitted = {name: _emit(name, Path(tmp)) for name in names}
        results = run_on_mesh({name: e[0] for name, e in emitted.items()}, MESH, fit=())
        torch_diffs = {name: _torch_row(e[1], e[2]) for name, e in emitted.items() if name.endswith("llama")}
    print("| model | weights KB | max per device KB | total/4 KB | ratio | all-gather / reduce-scatter / "
          "all-reduce / permute | sharded vs 1 device | torch tp_plan, 4 gloo |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        print(_row(name, results[name]["proof"], torch_diffs.get(name)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--abstract"]:
        warnings.simplefilter("ignore")
        abstract_row(sys.argv[2])
    else:
        main(sys.argv[1:] or list(TRANSFORMERS + CNNS))
