"""Transformers sweep: every model of the transformers issue, converted and verified, timed against its source.

Run: .venv/bin/python benchmarks/transformers.py [--repeat 10] [--only bert,gpt2-lm-head] [--quick]

Models are built from their libraries' own configs with random weights (nothing is downloaded), by the
same builders the tests use: Hugging Face text models called with input_ids + a padded attention_mask
(eager and sdpa attention), causal LM heads, encoder-decoders with decoder inputs (tests/test_hf_text.py),
keras-hub backbones to torch (tests/frontends/test_keras_hub.py) and recurrent layers both ways
(tests/ops/recurrent/), where those test modules exist. One process, one table:

  model       the model (and its attention implementation)
  direction   torch->keras-jax or keras->torch-xla
  status      ok, or the error class and its first words (a failure costs its row, not the sweep)
  convert s   wall seconds of portx.convert (load, lower, passes, emit, verification at every verified batch
              size, gradients where on by default, TPU proof)
  max abs     the largest absolute difference of any output against the source (verification's own number)
  batches     the batch sizes verified with the batch free
  lengths     the sizes verified of the other free dims (the sequence, where the model declares it free)
  emitted ms  median milliseconds per call of the emitted model: Keras under jax.jit, torch eager (no_grad)
  source ms   the same for the source model (torch eager no_grad; Keras under jax.jit)
  ratio       emitted / source in the same process and round (below 1.0 the emitted model is faster)

Only ratios mean something on a shared machine. ``--quick`` runs one model per group.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = Path(__file__).resolve().parents[1]
# this file's folder first on sys.path would make ``import transformers`` import this very script
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))  # the repository root: the tests' model builders

import jax  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402
from benchmarks.convert import median_seconds  # noqa: E402


def _median_ms(fn, repeat):
    return median_seconds(fn, repeat) * 1e3


def _hf_cases():
    """(name, build) for the Hugging Face models: build() -> (torch module, example inputs)."""
    hf = importlib.import_module("tests.test_hf_text")
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    for arch in hf.CONFIGS:
        for attention in ("eager", "sdpa"):
            yield f"{arch}-{attention}", lambda a=arch, i=attention: (hf._model(a, i), (ids, mask))
    transformers = hf.transformers
    for name, (cls, config, options, decoder) in hf.HEADS.items():
        def build(cls=cls, config=config, options=options, decoder=decoder):
            torch.manual_seed(0)
            model = hf.WithHead(getattr(transformers, cls)(getattr(transformers, config)(**options)).eval(), decoder)
            extra = (torch.randint(0, 100, (2, 5), generator=torch.Generator().manual_seed(3)),) if decoder else ()
            return model, (ids, mask) + extra
        yield name, build

    def whisper():
        torch.manual_seed(0)
        config = transformers.WhisperConfig(**hf.WHISPER)
        decoder_mask = torch.ones(2, 5, dtype=torch.long)
        decoder_mask[1, 3:] = 0
        return (hf.WhisperDecoding(transformers.WhisperModel(config).eval()),
                (torch.randn(2, 8, 32), torch.randint(0, 100, (2, 5)), decoder_mask))
    yield "whisper-encoder-decoder", whisper


def _torch_row(name, build, repeat):
    model, inputs = build()
    names = list(inspect.signature(model.forward).parameters)
    dynamic = [f"{n}:1" for n in names[:len(inputs)] if n in ("input_ids", "attention_mask")]  # the sequence
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = portx.convert(model, example_inputs=inputs, to="keras-jax", out=Path(tmp) / "o", grad=False,
                               dynamic=dynamic)
    seconds = time.perf_counter() - start
    arrays = [t.numpy() for t in inputs]
    keras_model = result.model
    jitted = jax.jit(lambda *xs: keras_model(list(xs) if len(xs) > 1 else xs[0]))

    def run_torch():
        with torch.no_grad():
            model(*inputs)

    emitted = _median_ms(lambda: jax.block_until_ready(jitted(*arrays)), repeat)
    return _row(name, "torch->keras-jax", result, seconds, emitted, _median_ms(run_torch, repeat))


def _keras_row(name, build, repeat):
    """A Keras source converts with the input specs it carries (None dims get portx's example sizes); it and
    the emitted module are timed on portx's own verification inputs."""
    from portx.frontends.keras.files import packed_inputs
    from portx.verification.compare import make_inputs

    model = build()[0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = portx.convert(model, to="torch-xla", out=Path(tmp) / "o", grad=False)
    seconds = time.perf_counter() - start
    arrays = make_inputs(result.graph, seed=0)
    module, tensors = result.model, [torch.from_numpy(np.asarray(a)) for a in arrays]
    jitted = jax.jit(lambda *xs: model(packed_inputs(model, xs)))

    def run_emitted():
        with torch.no_grad():
            module(*tensors)

    source = _median_ms(lambda: jax.block_until_ready(jitted(*arrays)), repeat)
    return _row(name, "keras->torch-xla", result, seconds, _median_ms(run_emitted, repeat), source)


def _row(name, direction, result, seconds, emitted, source):
    outputs = result.report["verification"].get("outputs", [])
    free = [row for row in result.report.get("dynamic", []) if row["free"]]
    batches = [c["size"] for row in free if row["symbol"] == "batch" for c in row["verified"]]
    lengths = [c["size"] for row in free if row["symbol"] != "batch" for c in row["verified"]]
    return {"model": name, "direction": direction, "status": "ok", "convert": seconds,
            "max_abs": max((o["max_abs"] for o in outputs), default=float("nan")),
            "batches": ",".join(map(str, batches)) or "-", "lengths": ",".join(map(str, lengths)) or "-",
            "emitted": emitted, "source": source}


def _optional_cases(module, function):
    """Cases another test module offers (``function() -> [(name, build)]``), or none where it is absent."""
    try:
        return list(getattr(importlib.import_module(module), function)())
    except (ImportError, AttributeError):
        return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--quick", action="store_true", help="one model per group")
    args = parser.parse_args()
    groups = [(list(_hf_cases()), _torch_row),
              (_optional_cases("tests.frontends.test_keras_hub", "benchmark_cases"), None),
              (_optional_cases("tests.ops.recurrent.test_models", "benchmark_cases"), None)]
    wanted = set(filter(None, args.only.split(",")))
    rows = []
    for cases, row in groups:
        cases = [c for c in cases if not wanted or c[0] in wanted][:1 if args.quick else None]
        for case in cases:
            name, build = case[:2]
            measure = row or (_torch_row if case[2] == "torch" else _keras_row)
            print(f"... {name}", file=sys.stderr, flush=True)
            try:
                rows.append(measure(name, build, args.repeat))
            except Exception as exc:  # a failure costs its row, not the sweep
                rows.append({"model": name, "direction": "-", "status": f"{type(exc).__name__}: {str(exc)[:60]}"})
    print(f"{'model':<24}{'direction':<18}{'status':<8}{'convert s':>10}{'max abs':>10}{'batches':>9}{'lengths':>9}"
          f"{'emitted ms':>11}{'source ms':>10}{'ratio':>7}")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['model']:<24}{r['direction']:<18}{r['status']}")
            continue
        print(f"{r['model']:<24}{r['direction']:<18}{'ok':<8}{r['convert']:>10.1f}{r['max_abs']:>10.1e}"
              f"{r['batches']:>9}{r['lengths']:>9}{r['emitted']:>11.2f}{r['source']:>10.2f}{r['emitted'] / r['source']:>7.2f}")
    ok = sum(r["status"] == "ok" for r in rows)
    print(f"\n{ok} of {len(rows)} converted and verified")


if __name__ == "__main__":
    main()
