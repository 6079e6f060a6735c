"""Reference benchmark: portx-emitted Keras-JAX models against keras.applications, torch and peer converters.

Run: .venv/bin/python benchmarks/reference.py [--repeat N] [--quick]

  --repeat N   timed calls per candidate and batch (default 30; median reported)
  --quick      sanity run: MobileNetV2 only, batch 1, 3 repeats, no torch.compile, small MLP for memory

Prints one plain-text table. Only ratios mean something: absolute times depend on the (shared) machine.
Everything runs in one process. The JAX candidates (portx, keras.applications) alternate call by call,
so load from other processes hits them alike; the torch candidates alternate likewise in their own
blocks, which take turns with the JAX blocks three times (see timed_blocks). Columns:

  section  latency | convert | memory | peer
  model    resnet50, mobilenet_v2: the standard architectures, random weights (benchmarks/torch_models.py);
           resnet50 is torchvision's v1.5; resnet50_v1 (stride in the first 1x1 conv) is the variant
           keras.applications.ResNet50 builds, so its keras row compares the same FLOPs (no torch rows);
           wide_mlp: 18 x (Linear(4096, 4096) + GELU), 302M float32 parameters, convert/memory rows only
  batch    batch size; torch and the emitted model take (N, 3, 224, 224), keras.applications (N, 224, 224, 3)
  portx    latency: median ms per call of the emitted Keras model under jax.jit (weights are jit
             arguments through model.stateless_call, as portx.targets.keras_jax.runtime.run_jitted does;
             warmed up; jax.block_until_ready), converted at that batch size (the batch is static)
           convert: seconds of portx.convert in a fresh process (verify on; stages in note)
           memory: MB (1e6 bytes) of peak RSS (ru_maxrss) during conversion above the import baseline (RSS after
             importing torch, keras, jax and portx and building the model)
  against  what portx is compared with: keras.applications model under the same jit, torch eager
           (no_grad), torch.compile (inductor, default mode); or the model's weight bytes (memory)
  value    that candidate's number, same unit as portx
  ratio    vs keras.applications: median over rounds of portx time / keras time in the same round
             (adjacent calls; robust to load changes). vs torch: portx / value (medians of
             neighbouring blocks). Below 1.0 portx is faster. memory: portx / value
  goal     the issue's goal for that ratio (latency vs keras.applications <= 1.05; memory <= 3.0, stated
           for models of >= 300M parameters: on small models the fixed cost of XLA compiles dominates)
  note     max abs error of the emitted model vs torch; "HLO transposes/convs t/c, g GFLOP" of the
           XLA-optimised programs (emitted model vs keras.applications; GFLOP from XLA's cost analysis);
           torch.compile's first-call seconds (inductor caches on disk, so reruns are faster);
           per-stage conversion seconds; the running memory peak after each stage; failures
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402
import portx.api  # noqa: E402,F401  (portx loads its API lazily; the memory baseline must include it)
import torch_models  # noqa: E402

TORCH_MODELS = {"resnet50": torch_models.resnet50, "mobilenet_v2": torch_models.mobilenet_v2,
                "wide_mlp": torch_models.wide_mlp,
                "resnet50_v1": lambda: torch_models.resnet50(stride_in_1x1=True)}
KERAS_APPS = {"resnet50": "ResNet50", "resnet50_v1": "ResNet50", "mobilenet_v2": "MobileNetV2"}
PEERS = ("nobuco", "onnx2tf", "torchax")
COLUMNS = (("section", 9), ("model", 13), ("batch", 6), ("portx", 10), ("against", 24), ("value", 10),
           ("ratio", 7), ("goal", 9), ("note", 0))


def row(section, model, batch="-", portx_value="-", against="-", value="-", ratio="-", goal="-", note=""):
    """One table row as a dict keyed by column name; numbers are formatted here."""
    def fmt(v, digits=2):
        return f"{v:.{digits}f}" if isinstance(v, float) else str(v)
    return dict(zip([c for c, _ in COLUMNS], [section, model, batch, fmt(portx_value), against, fmt(value),
                                              fmt(ratio), goal, note]))


def print_table(rows):
    """Print the rows as fixed-width text (the last column is free width)."""
    print("  ".join(f"{c:<{w}}" if w else c for c, w in COLUMNS))
    for r in rows:
        print("  ".join(f"{r[c]:<{w}}" if w else r[c] for c, w in COLUMNS), flush=True)


# ----------------------------------------------------------------------------- latency


def jit_stateless(model, array):
    """(call, jitted, args): the Keras model under jax.jit with its weights as arguments."""
    def forward(trainable, non_trainable, x):
        out, _ = model.stateless_call(trainable, non_trainable, x)
        return out

    jitted = jax.jit(forward)
    args = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
            jax.device_put(array))
    return (lambda: jax.block_until_ready(jitted(*args))), jitted, args


def hlo_summary(jitted, args) -> str:
    """'transposes/convolutions, GFLOP' of the XLA-optimised program (what really runs)."""
    compiled = jitted.lower(*args).compile()
    text, cost = compiled.as_text(), compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # older jax returns one dict per device
    return f"{text.count(' transpose(')}/{text.count(' convolution(')}, {cost.get('flops', 0) / 1e9:.1f} GFLOP"


def timed_blocks(groups: list, repeat: int, chunks: int = 3) -> dict:
    """Seconds per call of every candidate, in blocks: groups take turns ``chunks`` times.

    Within a block the group's candidates alternate call by call, order flipped every round, so a
    pair of adjacent calls shares the machine's load. Groups are not mixed call by call: a JAX call
    right after a torch call was measured up to ~8% slower (the two thread pools contend), so each
    block starts with one untimed call per candidate.
    """
    for call in (c for group in groups for c in group.values()):
        call(), call()  # compile and warm up
    times = {name: [] for group in groups for name in group}
    for _ in range(chunks):
        for group in groups:
            for call in group.values():
                call()
            names = list(group)
            for i in range(max(1, repeat // chunks)):
                for name in names if i % 2 == 0 else names[::-1]:
                    start = time.perf_counter()
                    group[name]()
                    times[name].append(time.perf_counter() - start)
    return {name: np.asarray(t) for name, t in times.items()}


def paired_ratio(times, name, other="portx") -> float:
    """Median over rounds of other/name: adjacent calls share the machine's load at that moment."""
    return float(np.median(times[other] / times[name]))


def torch_call(module, x):
    """A no-grad call of ``module`` on ``x``."""
    def call():
        with torch.no_grad():
            return module(x)
    return call


def compiled_torch(model, x):
    """(call, compile seconds, None) for torch.compile, or (None, None, reason) when it fails here."""
    try:
        call = torch_call(torch.compile(model), x)
        start = time.perf_counter()
        call()
        return call, time.perf_counter() - start, None
    except Exception as exc:  # inductor needs a C++ toolchain; any failure is reported, not fatal
        return None, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"


def keras_app(name, batch):
    """(keras.applications model, NHWC input): random weights, logits out like the torch model."""
    app = getattr(keras.applications, KERAS_APPS[name])(weights=None, input_shape=(224, 224, 3),
                                                         classifier_activation=None)
    return app, np.random.default_rng(1).standard_normal((batch, 224, 224, 3), dtype=np.float32)


def latency_rows(name, batch, repeat, tmp, use_compile, with_torch=True):
    """Rows comparing the emitted model with keras.applications, and unless not ``with_torch``, torch."""
    model = TORCH_MODELS[name]()
    x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    # an inference model (BN folded, no dropout), as the peers write it; latency is what is measured here
    result = portx.convert(model, example_inputs=(x,), out=Path(tmp) / f"{name}_b{batch}", inference=True, grad=False)
    max_abs = max(o["max_abs"] for o in result.report["verification"]["outputs"])
    jax_calls, torch_calls = {}, {"eager": torch_call(model, x)} if with_torch else {}
    jax_calls["portx"], p_jit, p_args = jit_stateless(result.model, x.numpy())
    app, x_nhwc = keras_app(name, batch)
    jax_calls["keras"], k_jit, k_args = jit_stateless(app, x_nhwc)
    compiled, compile_s, why = compiled_torch(model, x) if use_compile and with_torch else (None, None, "skipped")
    if compiled:
        torch_calls["compile"] = compiled
    times = timed_blocks([g for g in (jax_calls, torch_calls) if g], repeat)
    ms = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    hlo = f"HLO transposes/convs {hlo_summary(p_jit, p_args)} vs {hlo_summary(k_jit, k_args)}"
    rows = [row("latency", name, batch, ms["portx"], "keras.applications jit", ms["keras"],
                paired_ratio(times, "keras"), "<=1.05", f"max|err| vs torch {max_abs:.1e}; {hlo}")]
    if not with_torch:
        return rows
    rows.append(row("latency", name, batch, ms["portx"], "torch eager", ms["eager"], ms["portx"] / ms["eager"]))
    if compiled:
        rows.append(row("latency", name, batch, ms["portx"], "torch.compile", ms["compile"],
                        ms["portx"] / ms["compile"], note=f"first call (compile) {compile_s:.0f} s"))
    else:
        rows.append(row("latency", name, batch, ms["portx"], "torch.compile", "n/a", note=why))
    return rows


# ----------------------------------------------------------------------------- peers


def peer_rows(names, batches):
    """A row per peer converter: 'not installed', or its latency relative to nothing (see note)."""
    rows = []
    for peer in PEERS:
        if importlib.util.find_spec(peer) is None:
            rows.append(row("peer", "all", "-", "-", peer, "n/a", note="not installed (optional)"))
            continue
        for name in names:
            for batch in batches:
                rows.append(row("peer", name, batch, "-", peer, *peer_latency(peer, name, batch)))
    return rows


def peer_latency(peer, name, batch):
    """(ms, '-', '-', note) for one model through an installed peer; failures become notes."""
    model = TORCH_MODELS[name]()
    x = torch.randn(batch, 3, 224, 224)
    try:
        if peer == "torchax":
            import torchax

            weights, fn = torchax.extract_jax(model)
            jitted = jax.jit(fn)
            xj = jax.numpy.asarray(x.numpy())
            call = lambda: jax.block_until_ready(jitted(weights, (xj,)))  # noqa: E731
        else:  # nobuco / onnx2tf produce TensorFlow Keras models; time them under tf.function
            import tensorflow as tf

            tf_model = _tf_peer_model(peer, model, x)
            fn = tf.function(tf_model)
            call = lambda: fn(x.numpy()).numpy()  # noqa: E731
        ms = float(np.median(timed_blocks([{peer: call}], 5, chunks=1)[peer])) * 1e3
        return ms, "-", "-", "median of 5; not paired with portx"
    except Exception as exc:  # optional tools: report, never fail the benchmark
        return "n/a", "-", "-", f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"


def _tf_peer_model(peer, model, x):
    """The TensorFlow Keras model nobuco or onnx2tf makes of ``model`` (NCHW input kept)."""
    if peer == "nobuco":
        import nobuco

        return nobuco.pytorch_to_keras(model, args=[x], inputs_channel_order=nobuco.ChannelOrder.PYTORCH)
    import onnx2tf

    path = Path(tempfile.mkdtemp()) / "model.onnx"
    torch.onnx.export(model, (x,), str(path))
    return onnx2tf.convert(input_onnx_file_path=str(path), output_folder_path=str(path.parent / "tf"),
                           keep_ncw_or_nchw_or_ncdhw_input_names=["input"], non_verbose=True)


# ----------------------------------------------------------------------------- conversion and memory


def rss_kb() -> int:
    """Current resident set size of this process in kB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _maxrss_kb() -> int:
    """Peak resident set size of this process so far, in kB (Linux ru_maxrss)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_child(name, verify, quick):
    """Subprocess body: build, take the baseline, convert at batch 1, print one JSON line."""
    import portx.targets.keras_jax  # noqa: F401  (imports belong to the baseline, not the conversion)
    import portx.frontends.torch  # noqa: F401

    model = torch_models.wide_mlp(width=1024, depth=4) if name == "wide_mlp" and quick else TORCH_MODELS[name]()
    features = model[0].in_features if name == "wide_mlp" else None
    x = torch.randn(1, features) if features else torch.randn(1, 3, 224, 224)
    baseline, peaks = rss_kb(), []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = portx.convert(model, example_inputs=(x,), out=Path(tmp) / "out", verify=verify,
                               progress=lambda stage, _: peaks.append((stage, _maxrss_kb())))
        wall = time.perf_counter() - start
        peak = _maxrss_kb()
    outputs = result.report["verification"].get("outputs") or [{"max_abs": float("nan")}]
    print(json.dumps({"baseline_kb": baseline, "peak_kb": peak, "wall": wall, "stages": result.stage_times,
                      "weight_bytes": torch_models.param_bytes(model), "verify": verify,
                      "params": sum(p.numel() for p in model.parameters()),
                      "max_abs": max(o["max_abs"] for o in outputs),
                      "peaks": peaks}))


def run_child(name, verify, quick, timeout):
    """Run ``memory_child`` in a fresh interpreter; its JSON, or {'error': reason}."""
    cmd = [sys.executable, __file__, "--memory-child", name] + ([] if verify else ["--no-verify"])
    cmd += ["--quick"] if quick else []
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        return {"error": f"exit {done.returncode}: {(done.stderr.strip().splitlines() or ['?'])[-1][:100]}"}
    return json.loads(lines[-1])


def conversion_rows(name, quick, timeout=300):
    """convert + memory rows for one model from a fresh process; verify off only if verify-on times out."""
    data = run_child(name, True, quick, timeout)
    if "error" in data and "timed out" in data["error"]:
        data = run_child(name, False, quick, timeout)
    if "error" in data:
        return [row("memory", name, 1, "n/a", note=data["error"])]
    stages = " ".join(f"{k} {v:.1f}" for k, v in data["stages"].items())
    above = (data["peak_kb"] - data["baseline_kb"]) * 1024
    verify_note = "verify on" if data["verify"] else "verify OFF (verify on took over the time limit)"
    rows = [row("convert", name, 1, data["wall"], note=f"s per stage: {stages}; max|err| {data['max_abs']:.1e}")]
    big = data["params"] >= 300e6  # the memory goal is stated for models of >= 300M parameters
    rows.append(row("memory", name, 1, above / 1e6, "weight bytes (MB)", data["weight_bytes"] / 1e6,
                    above / data["weight_bytes"], "<=3.0" if big else "(>=300M)",
                    f"{data['params'] / 1e6:.0f}M params; baseline {data['baseline_kb'] * 1024 / 1e6:.0f} MB; "
                    f"peak {data['peak_kb'] * 1024 / 1e6:.0f} MB; {verify_note}; peak above baseline after each "
                    "stage (MB): " + " ".join(f"{stage} {(kb - data['baseline_kb']) * 1024 / 1e6:.0f}"
                                              for stage, kb in data["peaks"])))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per candidate (default 30, quick 3)")
    parser.add_argument("--quick", action="store_true", help="MobileNetV2 at batch 1 only, small MLP")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--no-verify", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        return memory_child(args.memory_child, not args.no_verify, args.quick)
    names, batches = (["mobilenet_v2"], [1]) if args.quick else (["resnet50", "mobilenet_v2"], [1, 8])
    repeat = args.repeat or (3 if args.quick else 30)
    rows = []
    for name in names + ["wide_mlp"]:
        rows += conversion_rows(name, args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names[:1] + ([] if args.quick else ["resnet50_v1"]) + names[1:]:
            for batch in batches:
                rows += latency_rows(name, batch, repeat, tmp, use_compile=not args.quick,
                                     with_torch=name != "resnet50_v1")
    rows += peer_rows(names, batches)
    print(f"portx reference benchmark: {os.cpu_count()} CPUs, torch {torch.__version__}, jax {jax.__version__}, "
          f"keras {keras.__version__}, repeat {repeat}")
    print_table(rows)


if __name__ == "__main__":
    main()
