"""Conversion time with free dims found two ways, side by side: two portx trees on the same zoo models.

Note [symbolic export] (frontends/torch/symbols.py): a live module is exported once with its free axes symbolic, and
lowered once: its graph at a second size comes from torch's own shapes (Note [symbols read directly]), where portx
used to lower it again per free dim. This prints, per model (``text-llama``: a tiny Hugging Face Llama from its
config, batch and sequence free; ``keras-<name>``: a subclassed Keras model of tests/support/zoo_traced.py, whose
free dims come from JAX's symbolic trace: Note [jax symbols] in frontends/jax/symbols.py), the stages that changed
(load: the export; free-dims: the second graphs) and the
whole conversion, for each tree, each conversion in a fresh process so that imports and caches are the same for
both. Seconds are CPU seconds of the converting process (all its threads) unless ``--wall``: on a machine shared
with other jobs, wall seconds measure the other jobs.

Run: .venv/bin/python benchmarks/free_dims.py --trees main=/work/main/src,branch=src [--models mlp,vit,gpt,text-llama]
     [--repeat 1] [--hf /path/to/hf-folder] [--io-layout channels-last]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("load", "lower", "free-dims")

_WORKER = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {root!r})
import portx
import portx.progress
if {cpu!r}:  # stage times in CPU seconds of this process: wall seconds mean little on a shared machine
    portx.progress.time = type("CpuClock", (), {{"perf_counter": staticmethod(time.process_time),
                                                "process_time": staticmethod(time.process_time)}})
model, dynamic = {model!r}, ()
if model.startswith("hf:"):
    source, inputs = model[3:], None
elif model.startswith("keras-"):  # a subclassed Keras model, lowered through its traced jaxpr (Note [jax symbols])
    from tests.support.zoo_traced import TRACED
    source, inputs, dynamic = TRACED[model[6:]]()
elif model.startswith("text-"):  # a tiny Hugging Face model from its config, batch and sequence free
    import torch
    from tests.test_hf_text import _model
    source = _model(model[5:], "eager")
    inputs = (torch.randint(1, 100, (2, 8), generator=torch.Generator().manual_seed(0)), torch.ones(2, 8).long())
    dynamic = ("input_ids:1", "attention_mask:1")
else:
    from tests.support.zoo import ZOO
    source, inputs = ZOO[model]()
start = time.process_time() if {cpu!r} else time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    result = portx.convert(source, example_inputs=inputs, out=Path(tmp) / "out", verify={verify}, grad=False,
                           dynamic=dynamic, io_layout={io_layout!r})
total = (time.process_time() if {cpu!r} else time.perf_counter()) - start
found = sorted({{r.get("found_by", "-") for r in result.report["dynamic"]}})
print("RESULT " + json.dumps({{"stages": result.stage_times, "total": total, "found_by": found,
                              "free": [r["symbol"] for r in result.report["dynamic"] if r["free"]]}}))
"""


def run_one(src, model, verify, cpu, io_layout="source") -> dict:
    """One conversion of ``model`` by the portx tree at ``src``, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve()), "KERAS_BACKEND": "jax"}
    code = _WORKER.format(root=str(ROOT), model=model, verify=verify, cpu=cpu, io_layout=io_layout)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    return json.loads(line[len("RESULT "):])


def median_row(runs) -> dict:
    """The median of each stage and of the total over ``runs`` (the first run's found_by and free dims)."""
    good = [r for r in runs if "error" in r] or runs
    if "error" in good[0]:
        return good[0]
    row = {k: statistics.median(r["stages"].get(k, 0.0) for r in runs) for k in STAGES}
    return {**row, "total": statistics.median(r["total"] for r in runs), "found_by": runs[0]["found_by"],
            "free": runs[0]["free"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default=f"main=/work/main/src,branch={ROOT / 'src'}")
    parser.add_argument("--models", default="mlp,resnet,vit,gpt,text_encoder,text-llama")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--hf", action="append", default=[], help="a Hugging Face folder (verification off)")
    parser.add_argument("--wall", action="store_true", help="wall seconds (default: CPU seconds of the process)")
    parser.add_argument("--io-layout", default="source", help="--io-layout of every conversion (channels-last: "
                        "Note [free dims in the emitted layout] in passes/layout/__init__.py)")
    args = parser.parse_args(argv)
    trees = dict(pair.split("=", 1) for pair in args.trees.split(","))
    models = [(m, True) for m in args.models.split(",") if m] + [(f"hf:{p}", False) for p in args.hf]
    print(f"{'model':<16}{'tree':<8}" + "".join(f"{s + ' s':>12}" for s in STAGES) + f"{'total s':>10}  found_by")
    for model, verify in models:
        for name, src in trees.items():  # interleaved: both trees see the machine in the same state
            row = median_row([run_one(src, model, verify, not args.wall, args.io_layout) for _ in range(args.repeat)])
            label = Path(model[3:]).name if model.startswith("hf:") else model
            if "error" in row:
                print(f"{label:<16}{name:<8}error: {row['error']}")
                continue
            print(f"{label:<16}{name:<8}" + "".join(f"{row[s]:>12.2f}" for s in STAGES) +
                  f"{row['total']:>10.2f}  {', '.join(row['found_by'])} (free: {', '.join(row['free']) or '-'})",
                  flush=True)


if __name__ == "__main__":
    main()
