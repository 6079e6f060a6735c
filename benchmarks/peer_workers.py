"""One measurement of benchmarks/peers.py in a fresh process: a converter on one model, printed as one JSON line.

Run by peers.py, each in its own interpreter (portx and torchax in .venv, nobuco in its own venv), so
every converter starts from the same cold process and its memory is its own:

    python benchmarks/peer_workers.py portx resnet50 --torchvision .bench/torchvision

Fields: ``convert_s`` (wall seconds of the conversion call, frameworks already imported),
``import_s`` (the imports before it), ``peak_over_mb`` (the process's peak resident memory during the
conversion minus its resident memory before it; Linux's VmHWM, reset through /proc/self/clear_refs),
``weight_mb``, ``ms`` (minimum milliseconds per call of the converted model, 1 thread), ``torch_ms``
(the source in eager mode, same process, 1 thread), ``hand_ms`` (the hand-written keras.applications
model on JAX where one exists), ``max_abs`` (largest difference from the torch source on the example),
``inner_transposes`` (portx: layout transposes left inside the graph).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path

START = time.perf_counter()
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
ROOT = Path(__file__).resolve().parents[1]

#: model -> the keras.applications class written by hand for the same architecture
HAND_WRITTEN = {"resnet50": "ResNet50", "mobilenet_v2": "MobileNetV2", "efficientnet_b0": "EfficientNetB0",
                "densenet121": "DenseNet121"}


def _rss_mb(field="VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak():
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


def interleaved_min_ms(calls: dict, repeat) -> dict:
    """{name: minimum ms} of each callable, timed in turns (a, b, c, a, b, c, ...) after one warm-up each, so
    load on a shared machine hits them alike and only their ratios are compared."""
    for fn in calls.values():
        fn()  # warm-up (and compile)
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: seconds * 1e3 for name, seconds in best.items()}


def torchvision_on_path(folder):
    """Make ``import torchvision`` work from ``folder`` (or an installed one) beside a CPU torch of another build.

    torchvision's compiled ops (nms, roi_align) do not load there; its classification models need none of
    them, so its meta registrations of those ops are skipped. nobuco imports torchvision itself.
    """
    if folder:
        sys.path.insert(0, str(folder))
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torch

    if not hasattr(torch.ops.torchvision, "nms"):  # nobuco registers a converter for it at import
        torch.library.define("torchvision::nms", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def timm_on_path(folder=ROOT / ".bench" / "timm"):
    """Make ``import timm`` work from ``folder`` (``pip install --no-deps --target``); timm imports torchvision,
    so call :func:`torchvision_on_path` first."""
    if folder and str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def build_source(name):
    """(module in eval mode, example input): torchvision's architecture, a timm one (``timm:levit_128s``, not
    pretrained: no downloads) or the bundled sample, seeded."""
    import torch

    torch.manual_seed(0)
    if name.startswith("timm:"):
        timm_on_path()
        import timm

        return timm.create_model(name[len("timm:"):], pretrained=False).eval(), torch.randn(1, 3, 224, 224)
    if name == "sample":
        sys.path.insert(0, str(ROOT / "samples"))
        from make_samples import TinyCNN

        return TinyCNN().eval(), torch.randn(2, 3, 32, 32)
    from torchvision import models

    return getattr(models, name)().eval(), torch.randn(1, 3, 224, 224)


def held_forward(keras_model, data):
    """A call of ``keras_model`` on ``data``: its stateless_call under jax.jit, weights read once (portx's
    emitted model and the hand-written one are timed the same way)."""
    import jax

    forward = jax.jit(lambda w, nw, a: keras_model.stateless_call(w, nw, a)[0])
    state = [v.value for v in keras_model.trainable_variables], [v.value for v in keras_model.non_trainable_variables]
    return lambda: jax.block_until_ready(forward(*state, data))


def run_portx(name, model, x, out):
    import keras

    import portx

    start = time.perf_counter()
    result = portx.convert(model, example_inputs=(x,), out=out)
    seconds = time.perf_counter() - start
    peak = _rss_mb("VmHWM")
    calls = {"ms": held_forward(result.model, x.numpy())}
    inner = [t for t in result.report["layout"]["inner_transposes"] if t["data_path"]]
    row = {"convert_s": seconds, "peak_mb": peak, "calls": calls,
           "max_abs": max(o["max_abs"] for o in result.report["verification"]["outputs"]),
           "inner_transposes": sum(t["origin"] == "layout" for t in inner),
           "own_transposes": sum(t["origin"] == "source" for t in inner)}
    hand = HAND_WRITTEN.get(name)
    if hand:
        keras.utils.set_random_seed(0)
        app = getattr(keras.applications, hand)(weights=None, input_shape=(224, 224, 3))
        calls["hand_ms"] = held_forward(app, x.numpy().transpose(0, 2, 3, 1))
    return row


def run_torchax(model, x):
    import jax
    import numpy as np
    import torchax

    start = time.perf_counter()
    weights, fn = torchax.extract_jax(model)
    forward = jax.jit(fn)
    arrays = (jax.numpy.asarray(x.numpy()),)
    out = np.asarray(jax.block_until_ready(forward(weights, arrays)))
    seconds = time.perf_counter() - start
    peak = _rss_mb("VmHWM")
    return {"convert_s": seconds, "peak_mb": peak, "output": out,
            "calls": {"ms": lambda: jax.block_until_ready(forward(weights, arrays))}}


def run_nobuco(model, x):
    import nobuco
    import numpy as np
    import tensorflow as tf
    from nobuco import ChannelOrder

    start = time.perf_counter()
    keras_model = nobuco.pytorch_to_keras(model, args=[x], inputs_channel_order=ChannelOrder.PYTORCH,
                                          outputs_channel_order=ChannelOrder.PYTORCH, trace_shape=True)
    seconds = time.perf_counter() - start
    peak = _rss_mb("VmHWM")
    forward = tf.function(lambda a: keras_model(a, training=False))
    tensor = tf.constant(x.numpy())
    out = np.asarray(forward(tensor))
    return {"convert_s": seconds, "peak_mb": peak, "output": out, "calls": {"ms": lambda: forward(tensor).numpy()}}


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("converter", choices=("portx", "torchax", "nobuco"))
    parser.add_argument("model")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--torchvision", default=None, help="folder holding torchvision (pip install --target)")
    args = parser.parse_args(argv)
    torchvision_on_path(args.torchvision)
    import numpy as np
    import torch

    if args.converter == "nobuco":
        import nobuco  # noqa: F401  (its imports: TensorFlow)
    elif args.converter == "torchax":
        import torchax  # noqa: F401
    else:
        import keras  # noqa: F401

        import portx  # noqa: F401
    model, x = build_source(args.model)
    imported = time.perf_counter() - START
    torch.set_num_threads(1)
    with torch.no_grad():
        expected = model(x).numpy()
    weight_mb = sum(t.numel() * t.element_size() for t in model.state_dict().values()) / 2**20
    base = _rss_mb()
    _reset_peak()
    with tempfile.TemporaryDirectory() as tmp:
        if args.converter == "portx":
            row = run_portx(args.model, model, x, Path(tmp) / "out")
        elif args.converter == "torchax":
            row = run_torchax(model, x)
        else:
            row = run_nobuco(model, x)
    if "output" in row:
        row["max_abs"] = float(np.max(np.abs(row.pop("output") - expected)))
    calls = row.pop("calls")

    def eager():
        with torch.no_grad():
            model(x)
    row.update(interleaved_min_ms({**calls, "torch_ms": eager}, args.repeat))
    row.update(converter=args.converter, model=args.model, import_s=imported,
               weight_mb=weight_mb, peak_over_mb=row.pop("peak_mb") - base)
    print("PEER " + json.dumps(row))


if __name__ == "__main__":
    main(sys.argv[1:])
