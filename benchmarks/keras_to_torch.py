"""Keras -> PyTorch benchmark: keras.applications models through ``portx convert --to torch-xla``.

Run: .venv/bin/python benchmarks/keras_to_torch.py [--models a,b] [--repeat N] [--size S] [--keep DIR]

``--keep DIR`` keeps each converted folder as DIR/<model> (for benchmarks/torch_xla_check.py).

Prints one plain-text table, one row per model (random weights, ``weights=None``, seed 0, batch-norm
statistics redrawn as the tests do):

  model      keras.applications constructor; input (1, S, S, 3) channels-last (S defaults to the smallest
             size each architecture accepts, see SIZES)
  params     parameter count (millions)
  convert    seconds of portx.convert (load, lower, passes, emit, load-emitted, verify, tpu-lower); the
             per-stage split is in the JSON line printed after the table with --json
  max_abs    max abs error of the emitted torch module vs the Keras model (KERAS_BACKEND=jax) on the
             seeded verification input; rel is that over the output's max magnitude
  tpu        verdict of the torchax -> jax.export(platforms=("tpu",)) lowering of the emitted module
  keras_ms   median ms per call of the Keras source under jax.jit (stateless_call, weights as arguments)
  eager      median ms of the emitted nn.Module in torch eager mode (no_grad); ratio = eager / keras_ms
  torchax    median ms of the emitted module jitted through torchax (PyTorch on JAX: the TPU path);
             ratio = torchax / keras_ms, the like-for-like comparison (same compiler)

Only ratios mean something: absolute times depend on the shared machine. The candidates alternate
call by call (keras, eager, torchax, keras, ...), so load from other processes hits them alike.

Large models: ``--presets tiny,1b,3b`` instead converts keras-hub Llama 3 presets (bfloat16, weights sharded by
Keras at 1 GB) with ``portx convert PRESET --to torch-xla``, each in its own process while this one samples the
process tree's resident memory (benchmarks/large_models.py's ``watched``). A preset is made once per machine from
large_models.py's cached Hugging Face folder (``Llama3Backbone.from_preset`` + ``save_to_preset``) as
``keras-llama-<size>-bf16`` beside it. Columns: seconds, cpu s (user + system seconds of the conversion's
processes), peak GB, above GB (peak minus the imports' peak), /weights (above over the preset's weight bytes), the
verification mode and result, the TPU verdict, the stage where the process peaked (``--profile``: its peak RSS in
GB) and the slowest stages from report.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests.support
from tests.support.keras_harness import redraw_batch_norms  # noqa: E402

#: constructor name -> smallest input size it accepts with include_top=True (224 where the top needs it)
SIZES = {"MobileNetV2": 96, "MobileNetV3Small": 96, "ResNet50": 64, "EfficientNetB0": 64, "EfficientNetV2B0": 64,
         "DenseNet121": 64, "ConvNeXtTiny": 64, "Xception": 71, "InceptionV3": 75, "NASNetMobile": 224}


def build(name, size):
    keras.utils.set_random_seed(0)
    ctor = getattr(keras.applications, name)
    kwargs = {"weights": None, "input_shape": (size, size, 3)}
    if name == "NASNetMobile" and size != 224:
        kwargs["include_top"] = False
    model = ctor(**kwargs)
    redraw_batch_norms(model)  # fresh statistics are the identity, which would hide folding errors
    return model


def keras_runner(model):
    fn = jax.jit(lambda tv, ntv, x: model.stateless_call(tv, ntv, x)[0])
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    return lambda x: jax.block_until_ready(fn(tv, ntv, x))


def torch_runner(module):
    def run(x):
        with torch.no_grad():
            return module(torch.from_numpy(x))
    return run


def torchax_runner(module):
    import torchax

    states, fn = torchax.extract_jax(module)
    jitted = jax.jit(lambda st, x: fn(st, (x,)))
    return lambda x: jax.block_until_ready(jitted(states, x))


def median_ms(runners, x, repeat):
    for run in runners.values():
        run(x)  # warm-up / compile
    times = {k: [] for k in runners}
    for _ in range(repeat):
        for key, run in runners.items():
            start = time.perf_counter()
            run(x)
            times[key].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def bench(name, size, repeat, keep=None):
    model = build(name, size)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        out = os.path.join(keep, name) if keep else os.path.join(tmp, "out")
        result = portx.convert(model, to="torch-xla", out=out, force=bool(keep))
        seconds = time.perf_counter() - start
        ver = result.report["verification"]["outputs"][0]
        x = np.random.default_rng(0).standard_normal((1, size, size, 3)).astype(np.float32)
        runners = {"keras": keras_runner(model), "eager": torch_runner(result.model)}
        try:
            runners["torchax"] = torchax_runner(result.model)
        except Exception as exc:  # noqa: BLE001 - reported in the row
            print(f"# {name}: torchax runner failed: {exc}", file=sys.stderr)
        ms = median_ms(runners, x, repeat)
    return {"model": name, "size": size, "params_m": model.count_params() / 1e6, "convert_s": seconds,
            "max_abs": ver["max_abs"], "max_rel": ver["max_rel"], "tpu": result.report["tpu"]["verdict"],
            "stages": result.stage_times, **{f"{k}_ms": v for k, v in ms.items()}}


_MAKE_PRESET = ("import json, sys, keras_hub; m = keras_hub.models.Llama3Backbone.from_preset(sys.argv[1], "
                "dtype='bfloat16'); m.save_to_preset(sys.argv[2], max_shard_size=1); p = sys.argv[2] + "
                "'/config.json'; c = json.load(open(p)); c['config']['tie_word_embeddings'] = m.tie_word_embeddings; "
                "json.dump(c, open(p, 'w'), indent=4)")  # keras-hub's get_config leaves tie_word_embeddings out
_IMPORTS = "import portx.api, torch, jax, keras, keras_hub"
_PORTX = "import sys; from portx.cli import main; sys.argv[0] = 'portx'; main()"


def keras_preset(size, limit):
    """The keras-hub preset of large_models.py's Llama ``size``, made once (see the module docstring)."""
    import large_models

    folder = large_models.cached_folder(size)
    preset = folder.parent / f"keras-llama-{size}-bf16"
    if not (preset / "config.json").exists():
        print(f"# writing {preset} (once per machine)", flush=True)
        made = large_models.watched([sys.executable, "-c", _MAKE_PRESET, str(folder), f"{preset}.tmp"], limit, 3600)
        if made["code"] != 0:
            raise RuntimeError(f"making {preset} failed: {made['last']}")
        os.rename(f"{preset}.tmp", preset)
    return preset


def bench_preset(size, limit, timeout) -> dict:
    """One row: ``portx convert`` of the ``size`` preset to torch-xla, watched (see the module docstring)."""
    import large_models

    preset = keras_preset(size, limit)
    weights = sum(p.stat().st_size for p in preset.glob("model*.weights.h5"))
    base = large_models.watched([sys.executable, "-c", _IMPORTS], limit, timeout)
    with tempfile.TemporaryDirectory(prefix="portx-bench-", dir=preset.parent) as tmp:
        before = _children_cpu()
        run = large_models.watched([sys.executable, "-c", _PORTX, "convert", str(preset), "--to", "torch-xla",
                                    "-o", f"{tmp}/out", "--no-grad", "--profile"], limit, timeout)
        cpu = _children_cpu() - before
        report = os.path.join(tmp, "out", "report.json")
        report = json.load(open(report)) if os.path.exists(report) else {}
    ver = report.get("verification", {})
    slow = sorted(report.get("stages", {}).items(), key=lambda kv: -kv[1])[:3]
    stages = report.get("profile", {}).get("stages", [])
    top = max(stages, key=lambda row: row["peak_rss_mb"], default=None)
    return {"size": size, "weights": weights, "seconds": run["seconds"], "cpu": cpu, "peak": run["peak"],
            "above": run["peak"] - base["peak"], "code": run["code"], "last": run["last"], "killed": run["killed"],
            "verification": f"{ver.get('mode', 'whole')}:{ver.get('passed')}",
            "tpu": report.get("tpu", {}).get("verdict"), "slowest": " ".join(f"{k}={v:.0f}s" for k, v in slow),
            "peak_stage": f"{top['stage']}:{top['peak_rss_mb'] / 1e3:.2f}" if top else "-"}


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and the processes they waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def presets(sizes, limit_gb, timeout):
    print(f"{'size':<5}{'weights GB':>11}{'seconds':>9}{'cpu s':>8}{'peak GB':>9}{'above GB':>9}{'/weights':>9}  "
          f"{'verification':<16}{'tpu':<9}{'peak at':<14}slowest stages")
    for size in sizes.split(","):
        r = bench_preset(size, int(limit_gb * 1e9), timeout)
        result = "" if r["code"] == 0 else f"  FAILED ({r['killed'] or r['code']}): {r['last']}"
        print(f"{size:<5}{r['weights'] / 1e9:>11.3f}{r['seconds']:>9.1f}{r['cpu']:>8.1f}{r['peak'] / 1e9:>9.2f}"
              f"{r['above'] / 1e9:>9.2f}{r['above'] / r['weights']:>9.2f}  {r['verification']:<16}"
              f"{str(r['tpu']):<9}{r['peak_stage']:<14}{r['slowest']}{result}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--presets", default=None, help="keras-hub Llama sizes (tiny,1b,3b) instead of --models")
    parser.add_argument("--mem-limit-gb", type=float, default=16.0, help="with --presets: kill a run above this")
    parser.add_argument("--timeout", type=float, default=3600, help="with --presets: kill a run after this many s")
    parser.add_argument("--models", default=",".join(SIZES))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", default=None, help="write each converted folder to KEEP/<model> (replacing it)")
    args = parser.parse_args()
    if args.presets:
        return presets(args.presets, args.mem_limit_gb, args.timeout)
    head = (f"{'model':<18}{'size':>5}{'params':>8}{'convert':>9}{'max_abs':>10}{'rel':>9}{'tpu':>6}"
            f"{'keras_ms':>10}{'eager':>8}{'ratio':>7}{'torchax':>9}{'ratio':>7}")
    print(head)
    rows = []
    for name in args.models.split(","):
        try:
            row = bench(name, args.size or SIZES[name], args.repeat, args.keep)
        except Exception as exc:  # noqa: BLE001 - one failing model must not hide the others
            print(f"{name:<18} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}")
            continue
        rows.append(row)
        k = row["keras_ms"]
        tx = row.get("torchax_ms")
        print(f"{name:<18}{row['size']:>5}{row['params_m']:>7.1f}M{row['convert_s']:>8.1f}s{row['max_abs']:>10.2e}"
              f"{row['max_rel']:>9.1e}{row['tpu']:>6}{k:>10.1f}{row['eager_ms']:>8.1f}{row['eager_ms'] / k:>7.2f}"
              + (f"{tx:>9.1f}{tx / k:>7.2f}" if tx else f"{'-':>9}{'-':>7}"), flush=True)
    if args.json:
        print(json.dumps(rows, default=str))


if __name__ == "__main__":
    main()
