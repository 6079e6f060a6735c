"""portx's peak memory per conversion stage, on the same models, for this tree and another one, in one run.

Run: .venv/bin/python benchmarks/memory_stages.py [--models resnet50,swin_t] [--before /work/main/src]
[--stages [--steps]]

Each model converts (``portx.convert`` as users call it: verification, size checks, trace, TPU proof) in a fresh
process per tree, one after another. A progress reporter resets Linux's peak resident memory (VmHWM, through
/proc/self/clear_refs) as each stage starts and reads it as the stage ends, so every stage gets its own peak.
``--stages`` prints, per stage, ``held>peak>left``: MB above the baseline as it starts, at its peak, and as it
ends (before the stage's release, verification/memory.py); ``--steps`` also the peak of each part of a stage
between two progress messages, named by the message that starts the part (the steps of the NumPy reference or
the emitter, one per node, print only where the peak moved).
Columns (one row per model and tree):

  weights MB     the source's state_dict bytes (MiB)
  peak MB        the highest stage peak, minus the process's resident memory before ``convert``, the modules
                 a conversion imports on first use (LAZY_IMPORTS) already imported (MiB; Note [two baselines])
  old MB         the same peak above the process before those imports (the definition before 2026-12-06)
  /weights       peak MB over weights MB (the performance issue's goal: <= 2.5 for models of >= 40 MB)
  stage          the stage where the peak was
  code MB        of the peak, file-backed pages mapped in during the conversion (RssFile at that stage's end,
                 minus before): the frameworks' code first run then (XLA's compiler), a cost that does not
                 follow the model's size
  fixed          with ``sample`` among the models: the peak of that tiny CNN (0.1 MB of weights), i.e. what every
                 conversion pays whatever its size; ``/weights-fixed`` is (peak - fixed) / weights

The models come from torchvision's definitions (``.bench/torchvision``; ``benchmarks/peers.py --setup``), or are
``sample`` (a tiny CNN) and ``hf-decoder`` (a 4-layer Llama, hidden 256, vocabulary 8000, random weights, called
with token ids and returning the logits; ``transformers`` builds it, nothing downloads).
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import run_worker  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / ".bench"
#: what a conversion imports on first use (torch.export's tracer and its symbolic shapes): Note [two baselines]
LAZY_IMPORTS = ("torch.export", "torch._dynamo", "torch._functorch.aot_autograd", "sympy", "networkx")

# Note [two baselines]: torchvision imports torch._dynamo and sympy itself, so for resnet50 and swin_t they were
# loaded before the baseline, while the sample and hf-decoder paid them (~90 MB) inside ``convert``'s load stage:
# the sample's "fixed" peak counted an import the others did not. The worker now imports them for every model
# before the baseline; ``peak MB`` is above that baseline, ``old MB`` above the one before those imports (the
# old definition: larger only where the source's own imports had not loaded them). benchmarks/large_models.py's
# imports row does not import them either (``imports`` there is Python + torch + JAX + Keras + transformers), so
# its "above" counts them, as ``old MB`` does: ~90 MB of its 3.8 GB.


class StagePeaks:
    """A progress reporter (start/step/end) that records each stage's peak resident memory above ``base``."""

    def __init__(self, rss, reset, base):
        self.rss, self.reset, self.base, self.rows = rss, reset, base, []
        self.base_file = rss("RssFile")
        self.held = self.steps = None

    def start(self, stage):
        self.reset()
        self.held, self.steps, self.what = self.rss("VmRSS") - self.base, [], "start"

    def step(self, done, total=None, what=""):
        """Each step's peak too (``--steps``): the part of a stage before this step's message, named by the last."""
        if what and self.steps is not None:
            self.steps.append([self.what, round(self.rss("VmHWM") - self.base)])
            self.what = what.split(" (")[0][:40]
            self.reset()

    def end(self, stage, seconds):
        peak = max([self.rss("VmHWM") - self.base] + [s[1] for s in self.steps or ()])
        self.steps.append([self.what, round(self.rss("VmHWM") - self.base)])
        self.rows.append({"stage": stage, "seconds": seconds, "peak_mb": peak, "held_mb": self.held,
                          "after_mb": self.rss("VmRSS") - self.base, "steps": self.steps,
                          "code_mb": self.rss("RssFile") - self.base_file})
        self.reset()


def worker(model_name):
    """Convert ``model_name`` in this process; print one JSON line: weights, per-stage peaks."""
    from peer_workers import _reset_peak, _rss_mb, build_source, torchvision_on_path

    torchvision_on_path(BENCH / "torchvision")
    import keras  # noqa: F401  (imported before the baseline, as benchmarks/peer_workers.py does)
    import torch

    import portx

    model, x = tiny_decoder() if model_name == "hf-decoder" else build_source(model_name)
    with torch.no_grad():
        model(x)
    weight_mb = sum(t.numel() * t.element_size() for t in model.state_dict().values()) / 2**20
    before = _rss_mb()
    for name in LAZY_IMPORTS:  # Note [two baselines]
        importlib.import_module(name)
    peaks = StagePeaks(_rss_mb, _reset_peak, _rss_mb())
    with tempfile.TemporaryDirectory() as tmp:
        portx.convert(model, example_inputs=(x,), out=Path(tmp) / "out", progress=peaks)
    print("STAGES " + json.dumps({"model": model_name, "weight_mb": weight_mb, "stages": peaks.rows,
                                  "imports_mb": peaks.base - before}))


def tiny_decoder():
    """(module, token ids): a 4-layer Llama (hidden 256, vocabulary 8000, random weights) returning its logits."""
    import torch
    from sharding import Logits  # benchmarks/sharding.py: a causal LM's logits from its token ids

    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p not in (here, "")]  # benchmarks/transformers.py is not the package
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=8000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    ids = torch.randint(0, 8000, (1, 16), generator=torch.Generator().manual_seed(0))
    return Logits(LlamaForCausalLM(config).eval()), ids


def measure(src, model, timeout) -> dict:
    """One worker run with ``src`` first on the path: its STAGES line, or {"error": why}."""
    return run_worker([sys.executable, __file__, "--worker", model], src, "STAGES ", timeout)


def table(rows) -> str:
    fixed = {r["tree"]: max(s["peak_mb"] for s in r["stages"])
             for r in rows if r["model"] == "sample" and "stages" in r}
    lines = [f"{'model':<12}{'tree':<8}{'weights MB':>11}{'peak MB':>9}{'/weights':>9}{'old MB':>8}{'/weights':>9}"
             f"{'code MB':>9}{'fixed':>7}{'/weights-fixed':>15}  stage"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['model']:<12}{r['tree']:<8}failed: {r['error']}")
            continue
        top = max(r["stages"], key=lambda s: s["peak_mb"])
        base = fixed.get(r["tree"])
        less = "" if base is None else f"{(top['peak_mb'] - base) / r['weight_mb']:.2f}"
        old = top["peak_mb"] + r.get("imports_mb", 0.0)
        lines.append(f"{r['model']:<12}{r['tree']:<8}{r['weight_mb']:>11.1f}{top['peak_mb']:>9.0f}"
                     f"{top['peak_mb'] / r['weight_mb']:>9.2f}{old:>8.0f}{old / r['weight_mb']:>9.2f}"
                     f"{top.get('code_mb', float('nan')):>9.0f}"
                     f"{'' if base is None else f'{base:.0f}':>7}{less:>15}  {top['stage']}")
    return "\n".join(lines)


def stage_lines(stages, steps=False) -> str:
    """Each stage's peak (MB above the baseline), with what it held when it started and left when it ended
    (``held>peak>left``); ``steps``: also the peak of each part between its progress messages."""
    line = "  " + "  ".join(f"{s['stage']} {s.get('held_mb', 0):.0f}>{s['peak_mb']:.0f}>{s.get('after_mb', 0):.0f}"
                            for s in stages)
    if not steps:
        return line

    def changes(steps):  # a stage of many steps (one per node) prints where its peak moved
        return [(what, mb) for k, (what, mb) in enumerate(steps) if not k or mb != steps[k - 1][1]]

    return line + "".join(f"\n    {s['stage']}: " + "; ".join(f"{what} {mb}" for what, mb in changes(s["steps"]))
                          for s in stages if len(s.get("steps", ())) > 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,swin_t")
    parser.add_argument("--before", default=None, help="another tree's src folder, measured first ('before')")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per conversion")
    parser.add_argument("--stages", action="store_true", help="also print every stage's peak")
    parser.add_argument("--steps", action="store_true", help="with --stages: each step's peak inside a stage too")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    trees = ([("before", Path(args.before))] if args.before else []) + [("after", ROOT / "src")]
    rows = []
    for model in args.models.split(","):
        for tree, src in trees:
            start = time.perf_counter()
            rows.append({"model": model, "tree": tree, **measure(src, model, args.timeout)})
            print(f"{model} {tree}: {time.perf_counter() - start:.0f} s", flush=True)
            if args.stages and "stages" in rows[-1]:
                print(stage_lines(rows[-1]["stages"], args.steps), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
