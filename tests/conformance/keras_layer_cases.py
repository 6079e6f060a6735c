"""Every public class of ``keras.layers`` as conversion cases Keras -> torch (shared by the test and the benchmark).

``CASES`` maps a case id (``Class/variant``) to a builder returning ``(model, example_inputs or None)``: a small
functional model around the layer with one of its main options (RNN return_sequences/return_state/go_backwards,
masks, use_bias, quantized modes, float16/bfloat16 dtypes). ``REFUSED`` maps the classes that get no case to the
reason. ``run_case`` converts a case with ``portx.api.convert(model, to="torch-xla")``, verification on, and says
pass / unsupported / wrong / crash, or ``keras`` when Keras itself cannot build the case's model (no conversion
was tried: a Keras bug, not a portx outcome); ``XFAIL`` (``keras_xfail.toml``, table ``layers``) lists the cases that do not
pass, each with its reason. Builders are in ``keras_layer_specs.py``.

Example:
    >>> run_case("Dense/bias").outcome
    'pass'
    >>> coverage(["Dense/bias"])["passed"]
    1
"""
import inspect
import os
import tempfile
import time
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402

from portx.errors import PortxError, UnsupportedOps, VerificationFailed  # noqa: E402
from tests.conformance.keras_layer_specs import CASES, REFUSED  # noqa: E402

__all__ = ["CASES", "REFUSED", "QUICK", "XFAIL", "XFAIL_FILE", "OUTCOMES", "Outcome", "layer_classes",
           "uncovered", "classify", "convert_case", "run_built", "run_case", "coverage"]

OUTCOMES = ("pass", "unsupported", "wrong", "crash", "keras")
#: atol and rtol for the float16 / bfloat16 cases (ids ending in "float16")
LOW_PRECISION_TOL = 2e-2
XFAIL_FILE = Path(__file__).with_name("keras_xfail.toml")
#: case id -> reason, for the cases that do not pass (strict xfail)
XFAIL = tomllib.loads(XFAIL_FILE.read_text(encoding="utf-8")).get("layers", {}) if XFAIL_FILE.exists() else {}
#: about forty cases across the families, run in CI
QUICK = ("Dense/bias", "Dense/nobias", "Dense/float16", "Dense/int8", "EinsumDense/ellipsis", "Embedding/basic",
         "Conv1D/causal", "RNN/lstm_cell", "MixUp/inference", "Conv2D/same-strided", "Conv2DTranspose/strided",
         "DepthwiseConv2D/basic", "SeparableConv2D/basic", "Conv3D/basic", "MaxPooling2D/same",
         "GlobalAveragePooling2D/basic", "AdaptiveAveragePooling2D/basic", "BatchNormalization/basic",
         "LayerNormalization/basic", "GroupNormalization/basic", "RMSNormalization/basic", "UnitNormalization/basic",
         "Add/basic", "Concatenate/axis1", "Dot/normalize", "Reshape/basic", "Permute/basic", "ZeroPadding2D/basic",
         "Cropping2D/basic", "UpSampling2D/bilinear", "LSTM/sequences", "GRU/basic", "SimpleRNN/backwards",
         "Bidirectional/lstm", "TimeDistributed/dense", "MultiHeadAttention/self", "Attention/basic",
         "Rescaling/basic", "Normalization/adapted", "RandomFlip/inference", "Dropout/basic", "PReLU/basic",
         "Softmax/axis")


@dataclass
class Outcome:
    case: str
    outcome: str  # one of OUTCOMES
    problem: str = ""
    seconds: float = 0.0


def layer_classes() -> dict:
    """{class name: class} for every public layer class of ``keras.layers`` (aliases folded onto one class)."""
    found = {}
    for value in vars(keras.layers).values():
        if inspect.isclass(value) and issubclass(value, keras.layers.Layer):
            found[value.__name__] = value
    return found


def uncovered() -> list:
    """Layer classes with neither a case nor a refusal reason."""
    covered = {case.split("/")[0] for case in CASES} | set(REFUSED)
    return sorted(set(layer_classes()) - covered)


def classify(exc) -> tuple:
    """(outcome, one-line problem) for an exception raised by a conversion."""
    line = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, VerificationFailed):
        return "wrong", line
    if isinstance(exc, (UnsupportedOps, PortxError)):
        return "unsupported", f"{type(exc).__name__}: {line}"
    return "crash", f"{type(exc).__name__}: {line}"


def convert_case(model, example_inputs=None, low_precision=False):
    """Convert ``model`` to torch-xla into a temporary folder, verification on (outputs at three batch sizes;
    the gradient comparison left out to keep the suite short); returns the ConversionResult. A float16/bfloat16
    model is compared at ``LOW_PRECISION_TOL`` (its own rounding: bfloat16 keeps 8 bits of mantissa)."""
    from portx.api import convert

    with tempfile.TemporaryDirectory(prefix="portx-keras-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tol = {"atol": LOW_PRECISION_TOL, "rtol": LOW_PRECISION_TOL} if low_precision else {}
        return convert(model, to="torch-xla", out=Path(tmp) / "out", example_inputs=example_inputs,
                       grad=False, **tol)


def run_built(case_id, build, low_precision=False) -> Outcome:
    """Build a case with ``build() -> (model, example)`` (seeded) and convert it; never raises for a failing case
    (the keras.layers and keras.ops suites share it)."""
    start = time.perf_counter()
    try:
        keras.utils.set_random_seed(0)
        try:
            model, example = build()
        except Exception as exc:  # noqa: BLE001 - Keras' own failure to build the model: no conversion to judge
            return Outcome(case_id, "keras", f"Keras cannot build it: {classify(exc)[1]}",
                           round(time.perf_counter() - start, 2))
        convert_case(model, example, low_precision=low_precision)
        outcome, problem = "pass", ""
    except Exception as exc:  # every failure is an outcome here, classified
        outcome, problem = classify(exc)
    finally:
        keras.backend.clear_session()
    return Outcome(case_id, outcome, problem, round(time.perf_counter() - start, 2))


def run_case(case_id) -> Outcome:
    """Build case ``case_id`` (seeded) and convert it; never raises for a failing case."""
    return run_built(case_id, CASES[case_id], low_precision=case_id.endswith("float16"))


def coverage(names=None, progress=None) -> dict:
    """Run the cases (``names`` or all) and count them: {"cases", "passed", "refused", "classes", "outcomes":
    {outcome: n}, "results": {case: Outcome}}; ``progress(outcome)`` is called after each case."""
    results = {}
    for name in names or sorted(CASES):
        results[name] = run_case(name)
        if progress:
            progress(results[name])
    counts = {o: sum(r.outcome == o for r in results.values()) for o in OUTCOMES}
    return {"cases": len(results), "passed": counts["pass"], "refused": len(REFUSED),
            "classes": len(layer_classes()), "outcomes": counts, "results": results}
