"""Keras -> PyTorch against the hand-written peer: portx's torch of keras.applications vs torchvision's model.

Run: .venv/bin/python benchmarks/peers_torch.py [--models ResNet50,MobileNetV2] [--batches 1,8] [--repeat N]
     [--no-compile] [--out DIR [--reuse]] [--json rows.json]

Each keras.applications model (``weights=None``, seed 0, batch-norm statistics redrawn, 224x224, with its
classifier) is converted with ``portx.convert(model, to="torch-xla", out=...)`` (verified against Keras as
every conversion is) and its emitted ``model.py`` loaded as a user would (``load_model()``). Its peer is
torchvision's definition of the same architecture (``weights=None``, seed 0, eval mode), imported from
.bench/torchvision without installing it (benchmarks/peer_workers.py ``torchvision_on_path``). Both run in
this one process on one thread (``torch.set_num_threads(1)``), on a seeded random batch: NHWC for portx's
module (the Keras model's interface: its first statement permutes), NCHW for torchvision's.

Columns, one row per model and batch size (ms: the minimum over ``--repeat`` calls after ``--warmup``;
the eager pair is timed in turns, tv, px, tv, ..., for every batch, then the compiled pair the same way
(Note [eager before compiled]), so load from other processes hits both sides alike; only the ratios mean
something on a shared machine):

  model        keras.applications constructor (its torchvision peer in PAIRS)
  batch        batch size
  tv_eager     ms per call of torchvision's module in eager mode, under torch.no_grad()
  px_eager     ms per call of portx's emitted module in eager mode, under torch.no_grad()
  eager        px_eager / tv_eager (the goal: <= 1.00)
  tv_comp      ms per call of torch.compile(torchvision's module, dynamic=False), under torch.no_grad()
  px_comp      the same for portx's module
  comp         px_comp / tv_comp (the goal: <= 1.00)
  tv_cs, px_cs seconds of the first compiled call (Dynamo + Inductor, caches off unless --cache), per batch

``--clock cpu`` times with the calling thread's CPU clock (``time.thread_time``, page faults included)
instead of the wall clock: on a machine other processes load, wall time mostly measures waiting for a core.

The goals line counts the rows meeting each goal and names the worst. What the two modules compute is not
identical: the Keras models end in a softmax and EfficientNetB0 begins with its preprocessing (rescale and
normalise), which torchvision's leave to the caller; Keras' stride-2 "same" convolutions pad (0, 1) where
torchvision pads (1, 1). ``--json PATH`` writes the rows (with conversion seconds and max_abs vs Keras).

``--out DIR`` keeps each converted folder as DIR/<model>; with ``--reuse`` a folder already there is loaded
instead of converting again (it must come from the current emitter to measure it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: keras.applications constructor -> torchvision.models constructor of the same architecture
PAIRS = {"ResNet50": "resnet50", "MobileNetV2": "mobilenet_v2", "EfficientNetB0": "efficientnet_b0",
         "DenseNet121": "densenet121"}
SIZE = 224


def _torchvision_models():
    """torchvision.models from .bench/torchvision (or an installed torchvision)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from peer_workers import torchvision_on_path

    folder = ROOT / ".bench" / "torchvision"
    torchvision_on_path(folder if folder.is_dir() else None)
    from torchvision import models

    return models


def torchvision_module(name):
    """torchvision's hand-written peer of ``name``, seeded, in eval mode."""
    import torch

    torch.manual_seed(0)
    return getattr(_torchvision_models(), PAIRS[name])(weights=None).eval()


def portx_module(name, out_dir, reuse):
    """(portx's emitted module for keras.applications ``name`` in eval mode, conversion facts). The conversion
    runs in a child process: its TPU proof imports torchax, whose "jax" device makes torch.compile fail in
    the same process ("PyTorch is not linked with support for jax devices")."""
    from portx.targets.codegen import import_by_path

    folder = Path(out_dir) / name
    facts = {"converted": False}
    if not (reuse and (folder / "model.py").is_file()):
        done = subprocess.run([sys.executable, __file__, "--convert-only", "--models", name, "--out", str(out_dir)],
                              capture_output=True, text=True, env=dict(os.environ, KERAS_BACKEND="jax"))
        lines = [line for line in done.stdout.splitlines() if line.startswith("FACTS ")]
        if not lines:
            tail = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no output"]
            raise RuntimeError(f"conversion failed (exit {done.returncode}): {tail[0][:150]}")
        facts = json.loads(lines[0][len("FACTS "):])
    return import_by_path(folder / "model.py").load_model(), facts


def convert_only(name, out_dir) -> dict:
    """Convert keras.applications ``name`` into OUT/<name> (the child process of ``portx_module``)."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from keras_to_torch import build  # seed 0, weights=None, batch norms redrawn

    import portx

    model = build(name, SIZE)
    start = time.perf_counter()
    result = portx.convert(model, to="torch-xla", out=Path(out_dir) / name, force=True)
    ver = result.report["verification"]
    return {"converted": True, "convert_s": time.perf_counter() - start, "verified": ver["passed"],
            "max_abs": ver["outputs"][0]["max_abs"]}


def first_call(module, x):
    """(torch.compile(module), seconds of its first call on ``x``)."""
    import torch

    compiled = torch.compile(module, dynamic=False)
    start = time.perf_counter()
    with torch.no_grad():
        compiled(x)
    return compiled, time.perf_counter() - start


def turns_min_ms(calls: dict, repeat: int, warmup: int, clock=time.perf_counter) -> dict:
    """{key: minimum ms} of each (function, input) in ``calls``, timed in turns after ``warmup`` calls each."""
    import torch

    with torch.no_grad():
        for fn, x in calls.values():
            for _ in range(warmup):
                fn(x)
        best = dict.fromkeys(calls, float("inf"))
        for _ in range(repeat):
            for key, (fn, x) in calls.items():
                start = clock()
                fn(x)
                best[key] = min(best[key], clock() - start)
    return {key: seconds * 1e3 for key, seconds in best.items()}


def bench_pair(name, batches, args, out_dir):
    """The rows of one pair: one per batch size."""
    import torch

    px, facts = portx_module(name, out_dir, args.reuse)
    tv = torchvision_module(name)
    torch.set_num_threads(1)  # conversion may have changed nothing, but make sure
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    rows, inputs = [], {}
    for batch in batches:  # eager first: a compiled module timed in turns with eager ones slows them (Note below)
        gen = torch.Generator().manual_seed(batch)
        nchw = torch.randn(batch, 3, SIZE, SIZE, generator=gen)
        inputs[batch] = nchw, nchw.permute(0, 2, 3, 1).contiguous()
        calls = {"tv_eager": (tv, inputs[batch][0]), "px_eager": (px, inputs[batch][1])}
        row = {"model": name, "peer": PAIRS[name], "batch": batch, **facts, "clock": args.clock}
        row.update({f"{k}_ms": v for k, v in turns_min_ms(calls, args.repeat, args.warmup, clock).items()})
        row["eager_ratio"] = row["px_eager_ms"] / row["tv_eager_ms"]
        rows.append(row)
    for row in rows if args.compile else ():
        nchw, nhwc = inputs[row["batch"]]
        torch._dynamo.reset()
        tv_c, row["tv_compile_s"] = first_call(tv, nchw)
        px_c, row["px_compile_s"] = first_call(px, nhwc)
        calls = {"tv_comp": (tv_c, nchw), "px_comp": (px_c, nhwc)}
        row.update({f"{k}_ms": v for k, v in turns_min_ms(calls, args.repeat, args.warmup, clock).items()})
        row["comp_ratio"] = row["px_comp_ms"] / row["tv_comp_ms"]
    for row in rows:
        print(_line(row), flush=True)
    return rows

# Note [eager before compiled]: timed in turns with torch.compile'd modules in one process, the eager modules
# of both sides ran 1.2-1.7x slower and unevenly (2026-12-05, 2 cores: DenseNet121 batch 1 eager 1.46x with
# compiled modules in turn, 0.91x in an eager-only run). Eager pairs are therefore timed first, every batch,
# then the compiled pairs, each pair still in turns.


HEAD = (f"{'model':<16}{'batch':>6}{'tv_eager':>10}{'px_eager':>10}{'eager':>7}{'tv_comp':>9}{'px_comp':>9}"
        f"{'comp':>7}{'tv_cs':>7}{'px_cs':>7}")


def _line(row):
    text = (f"{row['model']:<16}{row['batch']:>6}{row['tv_eager_ms']:>10.1f}{row['px_eager_ms']:>10.1f}"
            f"{row['eager_ratio']:>6.2f}x")
    if "comp_ratio" in row:
        text += (f"{row['tv_comp_ms']:>9.1f}{row['px_comp_ms']:>9.1f}{row['comp_ratio']:>6.2f}x"
                 f"{row['tv_compile_s']:>6.0f}s{row['px_compile_s']:>6.0f}s")
    return text


def goals_line(rows) -> str:
    """``goals (px/tv <= 1.00x): eager 7/8 (worst 1.04x MobileNetV2 b8); compiled 8/8 (worst 0.97x ...)``."""
    parts = []
    for key, label in (("eager_ratio", "eager"), ("comp_ratio", "compiled")):
        have = [r for r in rows if key in r]
        if have:
            worst = max(have, key=lambda r: r[key])
            met = sum(r[key] <= 1.0 for r in have)
            parts.append(f"{label} {met}/{len(have)} (worst {worst[key]:.2f}x {worst['model']} b{worst['batch']})")
    return "goals (px/tv <= 1.00x): " + ("; ".join(parts) or "no rows")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(PAIRS))
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--repeat", type=int, default=10, help="timed calls per candidate (the minimum counts)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per candidate first")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the thread's CPU seconds instead of wall time (a machine others load)")
    parser.add_argument("--no-compile", dest="compile", action="store_false", help="eager mode only")
    parser.add_argument("--cache", action="store_true", help="let Inductor use its caches (compile_s is then warm)")
    parser.add_argument("--out", default=None, help="keep each converted folder as OUT/<model>")
    parser.add_argument("--reuse", action="store_true", help="load OUT/<model> when there instead of converting")
    parser.add_argument("--json", default=None, help="write the rows to this file")
    parser.add_argument("--convert-only", action="store_true", help=argparse.SUPPRESS)  # portx_module's child
    args = parser.parse_args(argv)
    if args.convert_only:
        for name in args.models.split(","):
            print("FACTS " + json.dumps(convert_only(name, args.out)), flush=True)
        return []
    if not args.cache:
        os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
        os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    import torch

    torch.set_num_threads(1)
    unknown = sorted(set(args.models.split(",")) - set(PAIRS))
    if unknown:
        parser.error(f"--models: no torchvision peer for {unknown}; choose from {', '.join(PAIRS)}")
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(HEAD, flush=True)
        for name in args.models.split(","):
            try:
                rows += bench_pair(name, batches, args, args.out or tmp)
            except Exception as exc:  # noqa: BLE001 - one failing pair must not hide the others
                print(f"{name:<16} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}", flush=True)
    print(goals_line(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
