"""PyTorch/XLA check of converted ``--to torch-xla`` folders: CPU fallbacks and XLA-vs-eager numbers.

torch-xla 2.9 needs torch 2.9, so this runs in a venv of its own, not portx's: it needs only torch,
torch_xla, safetensors and NumPy (portx's ``run_on_torch_xla`` is imported from ``src/``, whose
import is NumPy-only; Keras and JAX are not needed).

    python3 -m venv /tmp/xla && /tmp/xla/bin/pip install 'torch==2.9.*' 'torch_xla==2.9.*' safetensors numpy
    .venv/bin/python benchmarks/keras_to_torch.py --keep /tmp/xla_outs      # one folder per model
    PJRT_DEVICE=CPU /tmp/xla/bin/python benchmarks/torch_xla_check.py /tmp/xla_outs/*

For each folder: imports ``model.py`` as a user would, runs ``load_model()`` in torch eager mode and
on the XLA device (``PJRT_DEVICE=CPU`` here; a TPU where there is one) on the seeded inputs whose
shapes and dtypes ``report.json`` records, and prints one row: the ``aten::`` CPU-fallback counters
(``none`` is the pass) and the max abs difference of the XLA outputs from eager. Exit 1 when any
folder falls back to the CPU or differs by more than 1e-4 + 1e-4 * max|eager|.
"""
from __future__ import annotations

import importlib.util
import json
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


def main(argv):
    if importlib.util.find_spec("torch_xla") is None:
        print("torch_xla is not installed in this Python; see this script's docstring", file=sys.stderr)
        return 2
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
