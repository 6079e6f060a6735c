"""How much of the per-element allowance do correct conversions use? (Note [per-element check])

Converts the test zoo (PyTorch -> Keras-JAX) and keras.applications (Keras -> PyTorch) at small
input sizes, and prints per output the scaled error (max_rel) and the worst element's share of the
per-element allowance ``atol + ELEMENT_FLOOR * scale + ELEMENT_RTOL * |ref|`` (worst_ratio: 1.0
would fail verification). The constants in portx/equivalence.py are set so that every correct
conversion stays at or below 0.1 (measured 2026-12-03: 0.005 at worst, over 6 zoo models and the
10 keras.applications models).

    .venv/bin/python benchmarks/element_errors.py            # zoo + applications, ~5 min on 2 cores
    .venv/bin/python benchmarks/element_errors.py --zoo-only
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root: tests.support

import numpy as np  # noqa: E402

import portx  # noqa: E402
from portx.errors import VerificationFailed  # noqa: E402

#: keras.applications constructor -> (smallest square input it accepts, pixel range)
APPLICATIONS = {"MobileNetV2": (32, 1.0), "ResNet50": (32, 1.0), "MobileNetV3Small": (32, 255.0),
                "EfficientNetB0": (32, 255.0), "EfficientNetV2B0": (32, 255.0), "DenseNet121": (32, 1.0),
                "ConvNeXtTiny": (32, 255.0), "Xception": (71, 1.0), "InceptionV3": (75, 1.0),
                "NASNetMobile": (32, 1.0)}


def _report(model, **kwargs):
    try:
        return portx.convert(model, out=Path(tempfile.mkdtemp()) / "out", **kwargs).report
    except VerificationFailed as exc:
        return exc.result.report


def _rows(name, direction, report, seconds):
    for row in report["verification"]["outputs"]:
        el = row["elements"]
        yield (name, direction, row["name"], row["max_rel"], el["worst_ratio"], el["violations"], seconds)


def zoo_rows():
    from tests.support.zoo import ZOO

    for name, build in ZOO.items():
        model, inputs = build()
        start = time.perf_counter()
        report = _report(model, example_inputs=inputs, to="keras-jax")
        yield from _rows(name, "torch->keras", report, time.perf_counter() - start)


def application_rows():
    import keras

    rng = np.random.default_rng(0)
    for name, (size, pixels) in APPLICATIONS.items():
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3))
        x = (rng.random((1, size, size, 3)) * pixels).astype("float32")
        start = time.perf_counter()
        report = _report(model, example_inputs=(x,), to="torch-xla")
        yield from _rows(name, "keras->torch", report, time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo-only", action="store_true")
    args = parser.parse_args()
    from portx.verification.compare import ELEMENT_FLOOR, ELEMENT_RTOL

    print(f"per-element allowance: atol + {ELEMENT_FLOOR:g} * scale + {ELEMENT_RTOL:g} * |ref|")
    print(f"{'model':<18}{'direction':<14}{'output':<16}{'max_rel':>10}{'worst_ratio':>13}{'violations':>12}"
          f"{'seconds':>9}")
    worst = 0.0
    for row in [*zoo_rows(), *([] if args.zoo_only else application_rows())]:
        name, direction, output, max_rel, ratio, violations, seconds = row
        worst = max(worst, ratio)
        print(f"{name:<18}{direction:<14}{output[:15]:<16}{max_rel:>10.2e}{ratio:>13.3f}{violations:>12}"
              f"{seconds:>9.1f}")
    print(f"worst share of the per-element allowance over all correct conversions: {worst:.3f}")


if __name__ == "__main__":
    main()
