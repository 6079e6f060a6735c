"""portx against its peers on the same models in one run: conversion time, memory, emitted latency, error.

Run: .venv/bin/python benchmarks/peers.py [--models resnet50,sample] [--repeat 10] [--json PATH] [--setup]

Each converter runs on each model in a fresh process (benchmarks/peer_workers.py), one after another,
so they share the machine's state: portx (PyTorch -> Keras-JAX, verification, gradient check and TPU
proof on, as users run it), nobuco (PyTorch -> Keras 2 on TensorFlow) and torchax (PyTorch run on JAX).
Peers that are missing are skipped with a note. ``--setup`` creates what is missing:

  .bench/torchvision   torchvision 0.28 (``pip install --no-deps --target``): the model definitions
  .bench/timm          timm 1.0 (the same way): models named ``timm:<name>`` (e.g. timm:levit_128s), not pretrained
  .bench/nobuco        a venv with torch 2.13 (CPU), tensorflow-cpu 2.15, numpy<2, nobuco 0.17, pillow
                       (nobuco needs Keras 2 and NumPy 1, so it cannot share .venv)

Columns (one row per model; latencies on 1 thread, minimum of --repeat calls after a warm-up):

  convert s        wall seconds of portx's conversion call (imports excluded, for every converter)
  vs nobuco        portx's conversion seconds / nobuco's (goal <= 0.5)
  peak MB          portx's peak resident memory during the conversion above the process before it
                   (goal <= 1 GB for models under 40 MB of weights)
  /weights         peak MB over the weight bytes (goal <= 2.5 for models >= 40 MB)
  ms               portx's emitted Keras model: its stateless_call under jax.jit, weights held (as the hand-written one)
  /torch           ms over the torch source in eager mode, measured in the same process
  /hand            ms over the hand-written keras.applications model on JAX (goal <= 1.0)
  /torchax         ms over torchax's jitted program (goal <= 1.0)
  /nobuco          portx's ms/torch over nobuco's ms/torch (each against the torch eager of its process)
  max abs          portx's verification error
  transp           transposes the layout pass added in the data path (goal 0); own: the source's own permutes
                   left in the data path (report.json layout.inner_transposes, Note [carried permutes])
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / ".bench"
WORKER = Path(__file__).resolve().parent / "peer_workers.py"
MODELS = ("resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "vit_b_16", "convnext_tiny",
          "shufflenet_v2_x1_0", "swin_t", "timm:levit_128s", "timm:mixer_b16_224", "sample")
NOBUCO_PINS = ("tensorflow-cpu==2.15.*", "numpy<2", "nobuco==0.17.0", "pillow")


def setup(log=print):
    """Create .bench/torchvision, .bench/timm and .bench/nobuco where missing (pip from the package registry)."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    if not (BENCH / "torchvision" / "torchvision").is_dir():
        log("setup: torchvision 0.28 into .bench/torchvision")
        subprocess.run(pip + ["--no-deps", "--target", str(BENCH / "torchvision"), "torchvision==0.28.0"], check=True)
    if not (BENCH / "timm" / "timm").is_dir():
        log("setup: timm 1.0 into .bench/timm")
        subprocess.run(pip + ["--no-deps", "--target", str(BENCH / "timm"), "timm==1.0.*"], check=True)
    venv = BENCH / "nobuco"
    if not (venv / "bin" / "python").exists():
        log("setup: nobuco's venv in .bench/nobuco (torch, tensorflow-cpu 2.15, numpy<2; a few minutes)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        vpip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run(vpip + ["torch==2.13.0"], check=True)
        subprocess.run(vpip + list(NOBUCO_PINS), check=True)


def interpreters() -> dict:
    """converter -> python that runs it, or a note saying why it is skipped."""
    found = {"portx": sys.executable}
    try:
        import torchax  # noqa: F401

        found["torchax"] = sys.executable
    except ImportError:
        found["torchax"] = "skipped: torchax is not installed in this venv"
    nobuco = BENCH / "nobuco" / "bin" / "python"
    found["nobuco"] = str(nobuco) if nobuco.exists() else "skipped: no .bench/nobuco venv (run with --setup)"
    return found


def measure(python, converter, model, repeat, timeout) -> dict:
    """One worker run: its PEER JSON line, or {"error": first line} when it failed."""
    cmd = [python, str(WORKER), converter, model, "--repeat", str(repeat), "--torchvision", str(BENCH / "torchvision")]
    return run_worker(cmd, ROOT / "src", "PEER ", timeout)  # this checkout


def run_worker(cmd, src, prefix, timeout) -> dict:
    """Run ``cmd`` with ``src`` (a tree's src folder) first on the path: its line starting with ``prefix`` as JSON,
    or {"error": why} (also for benchmarks/memory_stages.py)."""
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in done.stdout.splitlines():
        if line.startswith(prefix):
            return json.loads(line[len(prefix):])
    tail = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no output"]
    return {"error": f"exit {done.returncode}: {tail[0][:150]}"}


def _ratio(a, b):
    return a / b if a is not None and b else None


def summarize(model, runs) -> dict:
    """The table row of one model from its converters' runs."""
    p, n, t = (runs.get(c, {}) for c in ("portx", "nobuco", "torchax"))
    row = {"model": model, "portx_error": p.get("error"), "nobuco_error": n.get("error"),
           "torchax_error": t.get("error")}
    if "convert_s" not in p:
        return row
    weights = p["weight_mb"]
    row.update(convert_s=p["convert_s"], nobuco_s=n.get("convert_s"), torchax_s=t.get("convert_s"),
               vs_nobuco=_ratio(p["convert_s"], n.get("convert_s")), weight_mb=weights,
               peak_over_mb=p["peak_over_mb"], peak_per_weight=p["peak_over_mb"] / weights, ms=p["ms"],
               vs_torch=_ratio(p["ms"], p["torch_ms"]), vs_hand=_ratio(p["ms"], p.get("hand_ms")),
               vs_torchax=_ratio(p["ms"], t.get("ms")),
               vs_nobuco_ms=_ratio(_ratio(p["ms"], p["torch_ms"]), _ratio(n.get("ms"), n.get("torch_ms"))),
               nobuco_peak_over_mb=n.get("peak_over_mb"), max_abs=p["max_abs"],
               inner_transposes=p["inner_transposes"], own_transposes=p.get("own_transposes"),
               import_s=p["import_s"])
    row["goals"] = goals(row)
    return row


def goals(row) -> dict:
    """Each goal of issue 14 this row can judge: True (met), False (missed); absent when unmeasured."""
    out = {}
    if row.get("vs_nobuco") is not None:
        out["convert <= 0.5x nobuco"] = row["vs_nobuco"] <= 0.5
    if row["weight_mb"] >= 40:
        out["peak <= 2.5x weights"] = row["peak_per_weight"] <= 2.5
    else:
        out["peak <= 1 GB"] = row["peak_over_mb"] <= 1024
    for key, name in (("vs_hand", "latency <= hand-written"), ("vs_torchax", "latency <= torchax")):
        if row.get(key) is not None:
            out[name] = row[key] <= 1.0
    out["no layout transposes in the data path"] = row["inner_transposes"] == 0
    return out


def _fmt(value, spec):
    return format(value, spec) if isinstance(value, (int, float)) and not math.isnan(value) else "-"


def table(rows) -> str:
    head = (f"{'model':<20}{'convert s':>10}{'nobuco s':>9}{'vs nobuco':>10}{'weights MB':>11}{'peak/weights':>13}"
            f"{'ms':>9}{'/torch':>7}{'/hand':>7}{'/torchax':>9}{'/nobuco':>8}{'max abs':>10}{'transp':>7}{'own':>5}")
    lines = [head]
    for r in rows:
        if "convert_s" not in r:
            lines.append(f"{r['model']:<20}portx failed: {r['portx_error']}")
            continue
        lines.append(f"{r['model']:<20}{_fmt(r['convert_s'], '.1f'):>10}{_fmt(r['nobuco_s'], '.1f'):>9}"
                     f"{_fmt(r['vs_nobuco'], '.2f'):>10}{_fmt(r['weight_mb'], '.1f'):>11}"
                     f"{_fmt(r['peak_over_mb'], '.0f'):>8}{_fmt(r['peak_per_weight'], '.2f'):>9}{_fmt(r['ms'], '.1f'):>9}{_fmt(r['vs_torch'], '.2f'):>7}"
                     f"{_fmt(r['vs_hand'], '.2f'):>7}{_fmt(r['vs_torchax'], '.2f'):>9}"
                     f"{_fmt(r['vs_nobuco_ms'], '.2f'):>8}{_fmt(r['max_abs'], '.1e'):>10}{r['inner_transposes']:>7}"
                     f"{_fmt(r.get('own_transposes'), 'd'):>5}")
    missed = [f"{r['model']}: {goal}" for r in rows for goal, ok in r.get("goals", {}).items() if not ok]
    lines.append("goals missed: " + ("; ".join(missed) if missed else "none"))
    for r in rows:
        for peer in ("nobuco", "torchax"):
            if r.get(f"{peer}_error"):
                lines.append(f"note: {r['model']}: {peer} {r[f'{peer}_error']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per worker run")
    parser.add_argument("--json", default=None, help="write the rows and the raw runs here")
    parser.add_argument("--setup", action="store_true", help="create .bench/torchvision and .bench/nobuco first")
    args = parser.parse_args(argv)
    if args.setup:
        setup()
    if not (BENCH / "torchvision" / "torchvision").is_dir():
        sys.exit("peers: torchvision's model definitions are missing: run with --setup (see the docstring)")
    found = interpreters()
    for converter, python in found.items():
        if python.startswith("skipped"):
            print(f"note: {converter} {python}", flush=True)
    rows, raw = [], {}
    for model in args.models.split(","):
        runs = {}
        for converter, python in found.items():
            if python.startswith("skipped"):
                continue
            start = time.perf_counter()
            runs[converter] = measure(python, converter, model, args.repeat, args.timeout)
            print(f"{model} {converter}: {time.perf_counter() - start:.0f} s "
                  f"{runs[converter].get('error') or 'ok'}", flush=True)
        raw[model] = runs
        rows.append(summarize(model, runs))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "runs": raw, "machine": os.uname().nodename,
                                               "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")},
                                              indent=1))


if __name__ == "__main__":
    main()
