"""Conversion benchmark over the test zoo: time per stage, emitted-model latency, max error.

Prints one table. Latencies are medians over repeated calls on this machine, and only their
ratio (Keras-JAX jitted / torch eager, same batch, same process) is meaningful on shared hardware.

Run: .venv/bin/python benchmarks/convert.py [--repeat 20] [--models resnet,gpt]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.support

import jax  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402
from tests.support.zoo import ZOO  # noqa: E402


def median_seconds(fn, repeat):
    fn()  # warm-up (and compile)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(name, repeat):
    """One row: stage times, latencies and errors for zoo model ``name``."""
    model, inputs = ZOO[name]()
    with tempfile.TemporaryDirectory() as tmp:
        result = portx.convert(model, example_inputs=inputs, out=Path(tmp) / "out", inference=True)  # as peers do
    arrays = [t.numpy() for t in inputs]
    keras_model = result.model
    jitted = jax.jit(lambda *xs: keras_model(list(xs) if len(xs) > 1 else xs[0]))

    def run_keras():
        jax.block_until_ready(jitted(*arrays))

    def run_torch():
        with torch.no_grad():
            model(*inputs)

    t_keras, t_torch = median_seconds(run_keras, repeat), median_seconds(run_torch, repeat)
    errors = result.report["verification"]["outputs"]
    return {"model": name, **{k: result.stage_times.get(k, 0.0) for k in ("load", "lower", "passes", "emit", "verify")},
            "keras_ms": t_keras * 1e3, "torch_ms": t_torch * 1e3, "ratio": t_keras / t_torch,
            "max_abs": max(r["max_abs"] for r in errors), "max_rel": max(r["max_rel"] for r in errors)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--models", default=",".join(sorted(ZOO)))
    args = parser.parse_args()
    head = (f"{'model':<12}{'load s':>8}{'lower s':>8}{'passes s':>9}{'emit s':>8}{'verify s':>9}"
            f"{'keras-jit ms':>13}{'torch ms':>10}{'ratio':>7}{'max abs':>10}{'max rel':>10}")
    rows = [measure(name, args.repeat) for name in args.models.split(",")]
    print(head)
    for r in rows:
        print(f"{r['model']:<12}{r['load']:>8.2f}{r['lower']:>8.2f}{r['passes']:>9.2f}{r['emit']:>8.2f}"
              f"{r['verify']:>9.2f}{r['keras_ms']:>13.2f}{r['torch_ms']:>10.2f}{r['ratio']:>7.2f}"
              f"{r['max_abs']:>10.2e}{r['max_rel']:>10.2e}")


if __name__ == "__main__":
    main()
