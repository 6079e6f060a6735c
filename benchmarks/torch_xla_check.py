"""PyTorch/XLA check of converted ``--to torch-xla`` folders: CPU fallbacks and XLA-vs-eager numbers.

torch-xla 2.9 needs torch 2.9, so this runs in a venv of its own, not portx's: it needs only torch,
torch_xla, safetensors and NumPy (portx's ``run_on_torch_xla`` is imported from ``src/``, whose
import is NumPy-only; Keras and JAX are not needed).

    python3 -m venv /tmp/xla && /tmp/xla/bin/pip install 'torch==2.9.*' 'torch_xla==2.9.*' safetensors numpy ml_dtypes
    .venv/bin/python benchmarks/keras_to_torch.py --keep /tmp/xla_outs      # one folder per model
    PJRT_DEVICE=CPU /tmp/xla/bin/python benchmarks/torch_xla_check.py /tmp/xla_outs/*

For each folder: imports ``model.py`` as a user would, runs ``load_model()`` in torch eager mode and
on the XLA device (``PJRT_DEVICE=CPU`` here; a TPU where there is one) on the seeded inputs whose
shapes and dtypes ``report.json`` records, and prints one row: the ``aten::`` CPU-fallback counters
(``none`` is the pass) and the max abs difference of the XLA outputs from eager. Exit 1 when any
folder falls back to the CPU or differs by more than 1e-4 + 1e-4 * max|eager|.

    PJRT_DEVICE=CPU /tmp/xla/bin/python benchmarks/torch_xla_check.py --spmd batch=2,model=4 /tmp/xla_outs/*

``--spmd MESH``: the same folders under PyTorch/XLA SPMD on as many CPU devices as the mesh has
(``CPU_NUM_DEVICES``, set here when unset): model.py's ``tp_plan()`` becomes ``xs.mark_sharding``
annotations (Note [tp_plan as mark_sharding]), the inputs split along "batch", and each row prints the
annotated weights, the largest difference from the same program unannotated (one device's layout) and
from eager. Exit 1 when any folder differs by more than the tolerance above.
"""
from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from portx.targets.codegen import import_by_path  # noqa: E402
from portx.targets.torch_xla.tpu import run_on_torch_xla  # noqa: E402


def seeded_inputs(report, seed=0):
    """Inputs of the shapes and dtypes in report.json: normal floats, small non-negative integers (valid ids)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for _, shape, dtype in report["verification"]["inputs"]:
        if dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def check(folder):
    """(fallback counters, max abs XLA-vs-eager difference, passed) for one converted folder."""
    report = json.loads((folder / "report.json").read_text())
    arrays = seeded_inputs(report)
    with torch.no_grad():
        eager = import_by_path(folder / "model.py").load_model()(*[torch.from_numpy(a) for a in arrays])
    eager = [t.numpy() for t in (eager if isinstance(eager, (tuple, list)) else [eager])]
    outputs, fallbacks = run_on_torch_xla(import_by_path(folder / "model.py").load_model(), arrays)
    diffs = [float(np.max(np.abs(x - e))) if e.size else 0.0 for x, e in zip(outputs, eager)]
    close = all(d <= 1e-4 + 1e-4 * float(np.max(np.abs(e), initial=0.0)) for d, e in zip(diffs, eager))
    return fallbacks, max(diffs), close and not fallbacks


# Note [tp_plan as mark_sharding]: tp_plan() names torch.distributed ParallelStyles by submodule; under SPMD
# the same plan is one PartitionSpec per weight over the mesh's "model" axis. ColwiseParallel splits an
# nn.Linear's output features, weight (out, in) dim 0 and its bias; RowwiseParallel splits its input features,
# weight dim 1, the bias stays whole; RowwiseParallel on an nn.Embedding splits the vocabulary, dim 0. The
# Replicate() layouts of the plan need no annotation: XLA's partitioner places the gathers and reductions.
def spmd_specs(module, plan) -> dict:
    """{parameter: PartitionSpec tuple} of ``plan`` (tp_plan()) for ``module`` (Note [tp_plan as mark_sharding]);
    a key may name every block's submodule (``layers.*.mlp.up_proj``), matched per component as
    ``parallelize_module`` does."""
    specs, paths = {}, [name for name, _ in module.named_modules()]
    for key, style in plan.items():
        for path in (p for p in paths if p.count(".") == key.count(".")
                     and all(fnmatch.fnmatchcase(a, b) for a, b in zip(p.split("."), key.split(".")))):
            sub = module.get_submodule(path)
            colwise = type(style).__name__ == "ColwiseParallel"
            embedding = isinstance(sub, torch.nn.Embedding)
            specs[sub.weight] = ("model", None) if colwise or embedding else (None, "model")
            if getattr(sub, "bias", None) is not None and colwise:
                specs[sub.bias] = ("model",)
    return specs


def spmd_check(folder, mesh_sizes):
    """(annotated weights, max |sharded - unannotated|, max |sharded - eager|, passed) under SPMD on the CPU."""
    import torch_xla
    import torch_xla.distributed.spmd as xs

    report = json.loads((folder / "report.json").read_text())
    arrays = seeded_inputs(report)
    module = import_by_path(folder / "model.py")
    with torch.no_grad():
        eager = [t.numpy() for t in _leaves(module.load_model()(*[torch.from_numpy(a) for a in arrays]))]
    mesh = xs.Mesh(np.arange(int(np.prod(list(mesh_sizes.values())))), tuple(mesh_sizes.values()), tuple(mesh_sizes))
    runs = []
    for annotate in (False, True):
        model = module.load_model().to(torch_xla.device())
        inputs = [torch.from_numpy(a).to(torch_xla.device()) for a in arrays]
        specs = spmd_specs(model, module.tp_plan()) if annotate else {}
        for tensor, spec in specs.items():
            xs.mark_sharding(tensor, mesh, spec)
        for x in inputs if annotate else ():
            if x.dim() and x.shape[0] % mesh_sizes.get("batch", 1) == 0:
                xs.mark_sharding(x, mesh, ("batch",) + (None,) * (x.dim() - 1))
        with torch.no_grad():
            runs.append([t.cpu().numpy() for t in _leaves(model(*inputs))])
    plain, sharded = runs
    to_plain = max(float(np.max(np.abs(a - b))) for a, b in zip(sharded, plain))
    to_eager = max(float(np.max(np.abs(a - b))) for a, b in zip(sharded, eager))
    close = all(np.max(np.abs(a - b)) <= 1e-4 + 1e-4 * float(np.max(np.abs(b), initial=0.0))
                for a, b in zip(sharded, eager))
    return len(specs), to_plain, to_eager, close


def _leaves(out):
    return [t.detach() for t in (out if isinstance(out, (tuple, list)) else [out])]


def spmd_main(mesh_text, folders):
    """``--spmd``: one row per folder (see the module docstring)."""
    mesh_sizes = {k: int(v) for k, v in (part.split("=") for part in mesh_text.split(","))}
    os.environ.setdefault("CPU_NUM_DEVICES", str(int(np.prod(list(mesh_sizes.values())))))
    import torch_xla.runtime as xr

    xr.use_spmd()
    print(f"{'folder':<20}{'devices':>8}{'annotated':>10}{'max|sharded-plain|':>20}{'max|sharded-eager|':>20}  verdict")
    failed = 0
    for folder in folders:
        count, to_plain, to_eager, ok = spmd_check(folder, mesh_sizes)
        failed += not ok
        print(f"{folder.name:<20}{xr.global_runtime_device_count():>8}{count:>10}{to_plain:>20.2e}{to_eager:>20.2e}"
              f"  {'ok' if ok else 'FAIL'}", flush=True)
    return 1 if failed or not folders else 0


def main(argv):
    if importlib.util.find_spec("torch_xla") is None:
        print("torch_xla is not installed in this Python; see this script's docstring", file=sys.stderr)
        return 2
    if argv[:1] == ["--spmd"]:
        return spmd_main(argv[1], [Path(a) for a in argv[2:] if (Path(a) / "model.py").is_file()])
    folders = [Path(a) for a in argv if (Path(a) / "model.py").is_file()]
    print(f"{'folder':<20}{'torch':>8}{'fallbacks':>12}{'max|xla-eager|':>16}  verdict")
    failed = 0
    for folder in folders:
        fallbacks, diff, ok = check(folder)
        failed += not ok
        shown = ", ".join(f"{k} x{v}" for k, v in fallbacks.items()) or "none"
        version = torch.__version__.split("+")[0]
        print(f"{folder.name:<20}{version:>8}{shown:>12}{diff:>16.2e}  {'ok' if ok else 'FAIL'}", flush=True)
    return 1 if failed or not folders else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
