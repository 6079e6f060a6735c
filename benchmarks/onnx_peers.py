"""ONNX peers: the same ONNX files through portx, onnx2torch and (where installed) onnx2tf, side by side.

Run: .venv/bin/python benchmarks/onnx_peers.py [--quick] [--repeat 10] [--only resnet50,bert] [--json PATH]

The ONNX files are made here, in one run, from models built with random weights (nothing is downloaded):
the code-built torchvision architectures of benchmarks/torch_models.py and Hugging Face text models from
their configs (tests/test_hf_text.py), each exported twice with ``torch.onnx.export``: the default (dynamo)
exporter, which writes the newest opset onnxscript knows, and ``dynamo=False`` at opset 17; and
keras.applications models through tf2onnx (a child process on Keras' TensorFlow backend; needs the [tf]
extra). One table:

  model      the model, and how its ONNX file was written (dynamo, legacy-17, tf2onnx)
  opset      the file's default-domain opset
  converter  portx (ONNX -> torch-xla, verification and TPU proof on), onnx2torch, onnx2tf
  status     ok, or the error class and its first words; "not installed" for a missing peer
  convert s  wall seconds of the conversion
  max abs    the converted model's largest absolute difference from onnxruntime on the same seeded inputs
  ms         median milliseconds per call of the converted torch module (eager, no_grad)
  vs portx   ms / portx's ms (below 1.0 the peer's module is faster)

The last line checks the goal: every file onnx2torch converts, portx converts too.
onnx2torch is installed with ``pip install --no-deps onnx2torch`` (its torchvision dependency serves only
its NonMaxSuppression and RoiAlign converters; a stand-in module lets it import beside the CPU torch).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import portx  # noqa: E402
from benchmarks import torch_models  # noqa: E402
from benchmarks.convert import median_seconds  # noqa: E402

#: keras.applications models written by tf2onnx in a child process (Keras on TensorFlow there)
_KERAS_CHILD = """
import os, sys
os.environ["KERAS_BACKEND"] = "tensorflow"; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras, tensorflow as tf, tf2onnx
keras.utils.set_random_seed(0)
model = getattr(keras.applications, sys.argv[1])(weights=None, input_shape=(96, 96, 3))
spec = [tf.TensorSpec((None, 96, 96, 3), tf.float32, name="image")]
fn = tf.function(lambda x: model(x, training=False), input_signature=spec)
tf2onnx.convert.from_function(fn, input_signature=spec, opset=17, output_path=sys.argv[2])
"""


def _hf(arch):
    hf = importlib.import_module("tests.test_hf_text")
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    return hf._model(arch, "eager"), (ids, torch.ones(2, 8, dtype=torch.long))


TORCH_MODELS = {
    "resnet50": lambda: (torch_models.resnet50(), (torch.randn(1, 3, 224, 224),)),
    "mobilenet_v2": lambda: (torch_models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),)),
    "bert": lambda: _hf("bert"),
    "gpt2": lambda: _hf("gpt2"),
}
KERAS_MODELS = ("MobileNetV2", "ResNet50")


def onnx_files(folder, only, quick):
    """{label: path}: every model exported each way (a failed export is reported as a row, not fatal)."""
    files, failed = {}, {}
    for name, build in TORCH_MODELS.items():
        if (only and name not in only) or (quick and name not in ("mobilenet_v2", "bert")):
            continue
        model, args = build()
        for how, kwargs in (("dynamo", {"dynamo": True}), ("legacy-17", {"dynamo": False, "opset_version": 17})):
            path = folder / f"{name}-{how}.onnx"
            try:
                torch.onnx.export(model.eval(), args, str(path), **kwargs)
                files[f"{name} ({how})"] = path
            except Exception as exc:  # noqa: BLE001 - an exporter failure is this row's result
                failed[f"{name} ({how})"] = f"export failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    for name in KERAS_MODELS:
        if (only and name not in only) or (quick and name != "MobileNetV2"):
            continue
        path = folder / f"{name}-tf2onnx.onnx"
        done = subprocess.run([sys.executable, "-c", _KERAS_CHILD, name, str(path)], capture_output=True, text=True,
                              timeout=900)
        if done.returncode == 0:
            files[f"{name} (tf2onnx)"] = path
        else:
            failed[f"{name} (tf2onnx)"] = f"tf2onnx failed: {(done.stderr.strip().splitlines() or ['?'])[-1][:80]}"
    return files, failed


def feeds(path):
    """Seeded inputs for every graph input: normal floats, int ids in [0, 100), from onnxruntime's input list."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    out = {}
    for info in ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).get_inputs():
        shape = [d if isinstance(d, int) else 1 if i == 0 else 8 for i, d in enumerate(info.shape)]
        out[info.name] = (rng.integers(0, 100, shape) if "int" in info.type else rng.normal(size=shape)).astype(
            np.int64 if "int64" in info.type else np.int32 if "int" in info.type else np.float32)
    return out


def _onnx2torch():
    """onnx2torch's ``convert``, or None; its torchvision imports get a stand-in (see the module docstring)."""
    if importlib.util.find_spec("onnx2torch") is None:
        return None
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - absent, or broken beside this torch build
        stand_in, ops = types.ModuleType("torchvision"), types.ModuleType("torchvision.ops")
        stand_in.__path__, stand_in.ops = [], ops
        ops.nms = ops.roi_align = ops.box_convert = None  # used only by converters of ops these models lack
        sys.modules.update({"torchvision": stand_in, "torchvision.ops": ops})
    return importlib.import_module("onnx2torch").convert


def _run_torch(module, arrays, repeat):
    tensors = [torch.from_numpy(a) for a in arrays]
    with torch.no_grad():
        got = module(*tensors)
        ms = median_seconds(lambda: module(*tensors), repeat) * 1e3
    flat = got if isinstance(got, (list, tuple)) else [got]
    return [t.detach().numpy() for t in flat if isinstance(t, torch.Tensor)], ms


def _max_abs(got, want):
    return max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)))) if np.size(w) else 0.0
               for g, w in zip(got, want))


def measure(label, path, repeat):
    """The rows of one ONNX file: portx, onnx2torch, onnx2tf."""
    import onnx
    import onnxruntime as ort

    opset = next((o.version for o in onnx.load(str(path), load_external_data=False).opset_import
                  if o.domain in ("", "ai.onnx")), None)
    inputs = feeds(path)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, inputs)
    arrays = list(inputs.values())
    rows = []

    def attempt(name, convert):
        start = time.perf_counter()
        try:
            module = convert()
            seconds = time.perf_counter() - start
            got, ms = _run_torch(module, arrays, repeat)
            rows.append({"model": label, "opset": opset, "converter": name, "status": "ok", "convert_s": seconds,
                         "max_abs": _max_abs(got, want), "ms": ms})
        except Exception as exc:  # noqa: BLE001 - a converter failure is this row's result
            rows.append({"model": label, "opset": opset, "converter": name,
                         "status": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"})

    with tempfile.TemporaryDirectory() as tmp:
        attempt("portx", lambda: portx.convert(str(path), to="torch-xla", out=Path(tmp) / "o").model.eval())
    o2t = _onnx2torch()
    if o2t is None:
        rows.append({"model": label, "opset": opset, "converter": "onnx2torch", "status": "not installed"})
    else:
        attempt("onnx2torch", lambda: o2t(str(path)).eval())
    rows.append({"model": label, "opset": opset, "converter": "onnx2tf",
                 "status": "installed; not run (TensorFlow output)" if importlib.util.find_spec("onnx2tf")
                 else "not installed"})
    portx_ms = rows[0].get("ms")
    for row in rows:
        if row.get("ms") and portx_ms:
            row["vs_portx"] = row["ms"] / portx_ms
    return rows


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="mobilenet_v2, bert and MobileNetV2 only")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    only = {n for n in args.only.split(",") if n}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files, failed = onnx_files(Path(tmp), only, args.quick)
        rows += [{"model": label, "opset": None, "converter": "-", "status": why} for label, why in failed.items()]
        for label, path in files.items():
            print(f"onnx_peers: {label} ...", file=sys.stderr, flush=True)
            rows += measure(label, path, args.repeat)
    print(f"{'model':28} {'opset':>5} {'converter':11} {'status':34} {'convert s':>9} {'max abs':>9} {'ms':>8} "
          f"{'vs portx':>8}")
    for r in rows:
        print(f"{r['model']:28} {_fmt(r['opset'], 'd'):>5} {r['converter']:11} {r['status'][:34]:34} "
              f"{_fmt(r.get('convert_s'), '.2f'):>9} {_fmt(r.get('max_abs'), '.1e'):>9} {_fmt(r.get('ms'), '.2f'):>8} "
              f"{_fmt(r.get('vs_portx'), '.2f'):>8}")
    ok = {(r["model"], r["converter"]) for r in rows if r["status"] == "ok"}
    theirs = {m for m, c in ok if c == "onnx2torch"}
    missed = sorted(m for m in theirs if (m, "portx") not in ok)
    beyond = sorted(m for m, c in ok if c == "portx" and m not in theirs)
    print(f"goal: every file onnx2torch converts, portx converts too: {'met' if not missed else 'NOT met ' + str(missed)}"
          f"; portx alone converts {len(beyond)}: {', '.join(beyond) or '-'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
