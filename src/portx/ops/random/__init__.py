"""Random sampling: fresh numbers of an input's shape from a named distribution, and multinomial draws.

``random`` reads only the shape of its input (as ``zeros_like`` does) and draws from ``distribution``
with the numbers ``params`` (``DISTRIBUTIONS`` names them): torch's ``rand_like``/``randn_like``/
``randint_like``, ``uniform_``, ``normal_``, ``cauchy_``, ``exponential_``, ``geometric_`` and
``log_normal_``; with a ``shape`` it has no input and draws that shape (``torch.randn(3, 4)``, ``torch.rand(n)``,
``torch.randint(0, 10, (4,))``, ``torch.empty(n).normal_()``, ``randn_like`` of a buffer), and ``permutation`` draws
``torch.randperm(n)``. A random op is never constant-folded: every call of an emitted model draws fresh numbers
(frontends/torch/dynamic.py keeps it out of the frontend's folding, targets/constants.py out of the emitters').
``multinomial`` draws ``num_samples`` category ids per row of (unnormalized)
probabilities. Each node carries its own ``seed``: the NumPy reference samples with
``np.random.default_rng(seed)``, the Keras layer seeds its ``SeedGenerator`` with it.

Random numbers cannot match the source's, so verification compares an output that depends on a random
node for shape and dtype only, plus a cheap check that a random node's own output lies in its
distribution's support (``support_problem``); report.json names the random op (verification/compare.py).

Example IR:
    %r: float32[2x3] = random(%x) {distribution="uniform", params=(-1.0, 1.0), dtype="float32", seed=7}
    %n: float32[3x4] = random() {distribution="normal", params=(0.0, 1.0), dtype="float32", seed=9, shape=(3, 4)}
    %m: int64[4x2] = multinomial(%p) {num_samples=2, replacement=False, dtype="int64", seed=3}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef, TensorType
from .._util import kind

__all__ = ["RANDOM", "MULTINOMIAL", "DISTRIBUTIONS", "RANDOM_OPS", "support_problem", "seed_of"]

#: distribution -> the names of its parameters, in ``params`` order (torch's argument names)
DISTRIBUTIONS = {
    "uniform": ("low", "high"),
    "normal": ("mean", "std"),
    "randint": ("low", "high"),
    "cauchy": ("median", "sigma"),
    "exponential": ("lambd",),
    "geometric": ("p",),
    "log_normal": ("mean", "std"),
    "permutation": (),
}

RANDOM = OpDef("random", ("x?",), {"distribution": REQUIRED, "params": (), "dtype": REQUIRED, "seed": 0,
                                   "shape": None},
               family="random", doc="fresh random numbers of x's shape (or of ``shape``, without x) from "
                                    "``distribution`` with ``params`` (x's values are not read)")
MULTINOMIAL = OpDef("multinomial", ("probs",), {"num_samples": REQUIRED, "replacement": False, "dtype": "int64",
                                                "seed": 0},
                    family="random", doc="``num_samples`` category ids per row of the probabilities ``probs`` "
                                         "(last axis), with or without replacement")

#: the ops whose outputs verification checks for shape, dtype and support instead of values
RANDOM_OPS = (RANDOM, MULTINOMIAL)


def seed_of(name: str) -> int:
    """A stable 31-bit seed from a node name (each random node draws its own numbers)."""
    import zlib

    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


@RANDOM.infer
def _random_type(x=None, *, distribution, params, dtype, seed, shape=None):
    if (x is None) == (shape is None):
        raise ValueError("random takes either an input x or a shape, not both")
    if distribution == "permutation" and (shape is None or len(shape) != 1 or kind(dtype) != 1):
        raise ValueError("random permutation takes a 1-d shape (n,) and an integer dtype")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"random: unknown distribution {distribution!r}; known: {sorted(DISTRIBUTIONS)}")
    if len(params) != len(DISTRIBUTIONS[distribution]):
        raise ValueError(f"random {distribution} takes {DISTRIBUTIONS[distribution]}, got {tuple(params)}")
    if kind(dtype) not in (1, 2):
        raise ValueError(f"random {distribution}: dtype {dtype} is not an integer or float dtype")
    return x.with_dtype(dtype) if x is not None else TensorType(tuple(shape), dtype)


def _draw(rng, distribution, params, shape):
    a, b = (list(params) + [None, None])[:2]
    if distribution == "uniform":
        return rng.uniform(a, b, shape)
    if distribution == "normal":
        return rng.normal(a, b, shape)
    if distribution == "randint":
        return rng.integers(int(a), int(b), shape)
    if distribution == "cauchy":
        return a + b * rng.standard_cauchy(shape)
    if distribution == "exponential":
        return rng.exponential(1.0 / a, shape)
    if distribution == "geometric":
        return rng.geometric(a, shape)
    if distribution == "permutation":
        return rng.permutation(shape[0])
    return rng.lognormal(a, b, shape)


@RANDOM.reference
def _random_numpy(x=None, *, distribution, params, dtype, seed, shape=None):
    shape = tuple(shape) if x is None else np.shape(x)
    draws = _draw(np.random.default_rng(seed), distribution, params, shape)
    return np.asarray(draws).astype("float32" if dtype == "bfloat16" else dtype)


@MULTINOMIAL.infer
def _multinomial_type(probs, *, num_samples, replacement, dtype, seed):
    if probs.rank not in (1, 2) or kind(probs.dtype) != 2:
        raise ValueError(f"multinomial takes a 1-d or 2-d float tensor of probabilities, got {probs}")
    if not replacement and isinstance(probs.shape[-1], int) and num_samples > probs.shape[-1]:
        raise ValueError(f"multinomial without replacement: {num_samples} samples of {probs.shape[-1]} categories")
    return probs.with_shape(tuple(probs.shape[:-1]) + (int(num_samples),)).with_dtype(dtype)


@MULTINOMIAL.reference
def _multinomial_numpy(probs, *, num_samples, replacement, dtype, seed):
    rng = np.random.default_rng(seed)
    rows = np.asarray(probs, np.float64).reshape(-1, np.shape(probs)[-1])
    picks = [rng.choice(row.size, int(num_samples), replace=bool(replacement), p=row / row.sum()) for row in rows]
    return np.asarray(picks).reshape(tuple(np.shape(probs)[:-1]) + (int(num_samples),)).astype(dtype)


def support_problem(node, array) -> str:
    """'' when ``array`` (a random node's output) lies in its distribution's support, else what is wrong:
    uniform within [low, high], randint integers in [low, high), geometric integers >= 1, exponential and
    log-normal >= 0, a permutation of 0..n-1, normal and cauchy free of NaN; multinomial ids in [0, categories)."""
    a = np.asarray(array, np.float64)
    if node.op is MULTINOMIAL:
        n = node.inputs[0].type.shape[-1]
        ok = bool(np.all((a >= 0) & (a < n) & (a == np.round(a)))) if isinstance(n, int) else True
        return "" if ok else f"multinomial ids outside [0, {n})"
    dist, params = node.attrs["distribution"], tuple(node.attrs["params"])
    checks = {
        "uniform": lambda: np.all((a >= min(params)) & (a <= max(params))),
        "randint": lambda: np.all((a >= params[0]) & (a < params[1]) & (a == np.round(a))),
        "geometric": lambda: np.all((a >= 1) & (a == np.round(a))),
        "exponential": lambda: np.all(a >= 0),
        "log_normal": lambda: np.all(a >= 0),
        "permutation": lambda: np.array_equal(np.sort(a.ravel()), np.arange(a.size)),
    }
    if np.isnan(a).any():
        return f"{dist} samples hold NaN"
    inside = bool(checks.get(dist, lambda: True)())
    return "" if inside else f"{dist}{params} samples outside the distribution's support"
