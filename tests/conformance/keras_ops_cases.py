"""Every public function of ``keras.ops`` as a conversion case through the JAX frontend to torch.

Each case is a small subclassed ``keras.Model`` whose ``call(self, x)`` or ``call(self, x, y)`` applies the op
(``keras_ops_specs.SPECS``) to seeded inputs in the op's domain; ``run_case`` converts it with
``portx.api.convert(model, to="torch-xla", example_inputs=...)``, verification on. Functions with no case are in
``REFUSED`` with the reason; ``XFAIL`` (``keras_xfail.toml``, table ``ops``) lists the cases that do not pass.

Example:
    >>> run_case("add").outcome
    'pass'
"""
import inspect
import os
import tomllib

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402

from tests.conformance.keras_layer_cases import OUTCOMES, XFAIL_FILE, Outcome, run_built  # noqa: E402
from tests.conformance.keras_ops_specs import REFUSED, SPECS, domain_input  # noqa: E402

__all__ = ["CASES", "REFUSED", "QUICK", "XFAIL", "functions", "uncovered", "case_model", "run_case", "coverage"]

#: function name -> (fn, input domains)
CASES = SPECS
XFAIL = tomllib.loads(XFAIL_FILE.read_text(encoding="utf-8")).get("ops", {}) if XFAIL_FILE.exists() else {}
#: about forty functions across the families, run in CI
QUICK = ("add", "subtract", "multiply", "divide", "matmul", "einsum", "exp", "log", "sqrt", "tanh", "sigmoid",
         "relu", "gelu", "softmax", "log_softmax", "sum", "mean", "max", "var", "argmax", "cumsum", "concatenate",
         "stack", "reshape", "transpose", "expand_dims", "squeeze", "where", "clip", "pad", "take", "tile",
         "broadcast_to", "conv", "max_pool", "average_pool", "layer_normalization", "one_hot", "maximum",
         "logsumexp", "abs", "square", "erf")


class UnaryOp(keras.Model):
    """``call(self, x)`` applies ``fn``."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def call(self, x):
        return self.fn(x)


class BinaryOp(keras.Model):
    """``call(self, x, y)`` applies ``fn``: two positional inputs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def call(self, x, y):
        return self.fn(x, y)


def functions() -> dict:
    """{name: function} for every public function of ``keras.ops`` (submodules and classes left out)."""
    return {name: value for name, value in vars(keras.ops).items() if not name.startswith("_") and callable(value)
            and not inspect.isclass(value) and not inspect.ismodule(value)}


def uncovered() -> list:
    """Functions with neither a case nor a refusal reason."""
    return sorted(set(functions()) - set(CASES) - set(REFUSED))


def case_model(name):
    """(subclassed model, example inputs) for function ``name``."""
    fn, domains = CASES[name]
    model = (UnaryOp if len(domains) == 1 else BinaryOp)(fn)
    return model, tuple(domain_input(d, seed) for seed, d in enumerate(domains))


def run_case(name) -> Outcome:
    """Convert the case for function ``name``; never raises for a failing case."""
    return run_built(name, lambda: case_model(name))


def coverage(names=None, progress=None) -> dict:
    """Run the cases (``names`` or all) and count them: {"cases", "passed", "refused", "functions", "outcomes",
    "results"}; ``progress(outcome)`` is called after each case."""
    results = {}
    for name in names or sorted(CASES):
        results[name] = run_case(name)
        if progress:
            progress(results[name])
    counts = {o: sum(r.outcome == o for r in results.values()) for o in OUTCOMES}
    return {"cases": len(results), "passed": counts["pass"], "refused": len(REFUSED), "functions": len(functions()),
            "outcomes": counts, "results": results}
