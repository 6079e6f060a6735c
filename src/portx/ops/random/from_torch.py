"""torch import rules for the random samplers: ``rand_like``/``randn_like``/``randint_like``, the functional
forms of the in-place samplers (``uniform``, ``normal_functional``, ``cauchy``, ``exponential``, ``geometric``,
``log_normal``), ``normal`` with tensor mean/std, ``bernoulli``, ``multinomial``, and ``rrelu`` in training mode
(a random negative slope: ``where(x >= 0, x, x * uniform(lower, upper))``; in eval mode its slope is the mean),
and the samplers without a tensor input: ``randn``, ``rand``, ``randint``, ``randperm`` and a sampler of a stored
constant (``torch.empty(n).normal_()``, ``randn_like(self.buffer)``), which become a ``random`` node with a
``shape`` and no input (Note [random ops] in frontends/torch/dynamic.py: the frontend never folds them).

Every random node gets its own seed from the fx node's name (``seed_of``), so the NumPy reference and the
Keras layer draw reproducibly; a ``generator`` argument is ignored (the targets seed their own).

Example: ``torch.randn_like(x)`` -> ``random(%x) {distribution="normal", params=(0.0, 1.0), dtype="float32"}``;
``torch.rand(2, 3)`` -> ``random() {distribution="uniform", params=(0.0, 1.0), dtype="float32", shape=(2, 3)}``.
"""
from __future__ import annotations

from ..elementwise import BINARY, CAST, WHERE, scalar_const
from ..random import MULTINOMIAL, RANDOM, seed_of

__all__ = []

#: ATen name -> (distribution, [(argument name, default)] giving ``params``)
_SAMPLERS = {
    "aten::rand_like": ("uniform", [("", 0.0), ("", 1.0)]),
    "aten::randn_like": ("normal", [("", 0.0), ("", 1.0)]),
    "aten::uniform": ("uniform", [("from", 0.0), ("to", 1.0)]),
    "aten::normal_functional": ("normal", [("mean", 0.0), ("std", 1.0)]),
    "aten::cauchy": ("cauchy", [("median", 0.0), ("sigma", 1.0)]),
    "aten::exponential": ("exponential", [("lambd", 1.0)]),
    "aten::geometric": ("geometric", [("p", None)]),
    "aten::log_normal": ("log_normal", [("mean", 1.0), ("std", 2.0)]),
}


def _sample(call, x, distribution, params, dtype=None):
    """A ``random`` node drawing ``distribution(params)`` of ``x``'s shape, in ``dtype`` (else torch's). A stored
    ``x`` (a buffer, a folded ``empty``) is not read at all: the node draws its shape without an input."""
    attrs = {"distribution": distribution, "params": tuple(float(p) for p in params),
             "dtype": dtype or call.out_type().dtype, "seed": seed_of(call.node.name)}
    if call.constant(x) is not None:
        return call.emit(RANDOM, [], {**attrs, "shape": tuple(x.type.shape)})
    return call.emit(RANDOM, [x], attrs)


def _factory(call, distribution, params):
    """A sampler without a tensor input: a ``random`` node of torch's recorded (static) output shape."""
    out = call.out_type()
    attrs = {"distribution": distribution, "params": tuple(float(p) for p in params), "dtype": out.dtype,
             "seed": seed_of(call.node.name), "shape": tuple(out.shape)}
    return call.emit(RANDOM, [], attrs)


@RANDOM.imports("torch", "aten::randn", "aten::rand")
def _randn_from_aten(call):
    """``torch.randn(*size)`` / ``torch.rand(*size)``: standard normal / uniform [0, 1) draws of ``size``."""
    uniform = call.node.target._schema.name == "aten::rand"
    return _factory(call, "uniform" if uniform else "normal", (0.0, 1.0))


@RANDOM.imports("torch", "aten::randint")
def _randint_from_aten(call):
    """``torch.randint([low,] high, size)``: integers in [low, high)."""
    low, high = call.arg("low", 0), call.arg("high")
    if hasattr(low, "type") or hasattr(high, "type"):
        call.unsupported("randint with a tensor bound; pass Python ints")
    return _factory(call, "randint", (low, high))


@RANDOM.imports("torch", "aten::randperm")
def _randperm_from_aten(call):
    """``torch.randperm(n)``: a random permutation of 0..n-1 (Keras: ``keras.random.shuffle`` of an arange)."""
    return _factory(call, "permutation", ())


@RANDOM.imports("torch", *_SAMPLERS)
def _sampler_from_aten(call):
    """A sampler whose arguments are numbers: its parameters by schema name (``""``: fixed by the op)."""
    distribution, args = _SAMPLERS[call.node.target._schema.name]
    params = [default if not name else call.arg(name, default) for name, default in args]
    if any(hasattr(p, "type") for p in params):
        call.unsupported(f"{distribution} parameters given as tensors; pass Python numbers")
    return _sample(call, call.arg("self"), distribution, params)


@RANDOM.imports("torch", "aten::randint_like")
def _randint_like_from_aten(call):
    """``randint_like(x, [low,] high)``: integers in [low, high) in x's (or the given) dtype."""
    low, high = call.arg("low", 0), call.arg("high")
    if hasattr(low, "type") or hasattr(high, "type"):
        call.unsupported("randint_like with a tensor bound; pass Python ints")
    return _sample(call, call.arg("self"), "randint", (low, high))


@RANDOM.imports("torch", "aten::normal")
def _normal_from_aten(call):
    """``normal(mean, std)`` with a tensor mean and/or std: ``mean + std * normal(0, 1)`` over the output's shape,
    drawn over whichever tensor has that shape (else of that shape without an input)."""
    mean, std = call.arg("mean"), call.arg("std", 1.0)
    shape = call.out_type().shape
    carrier = next((v for v in (mean, std) if hasattr(v, "type") and v.type.shape == shape), None)
    z = _sample(call, carrier, "normal", (0.0, 1.0)) if carrier is not None else _factory(call, "normal", (0.0, 1.0))
    std = std if hasattr(std, "type") else scalar_const(call, std, z)
    mean = mean if hasattr(mean, "type") else scalar_const(call, mean, z)
    return call.emit(BINARY["add"], [mean, call.emit(BINARY["mul"], [std, z])])


@MULTINOMIAL.imports("torch", "aten::multinomial")
def _multinomial_from_aten(call):
    probs = call.arg("self")
    attrs = {"num_samples": int(call.arg("num_samples")), "replacement": bool(call.arg("replacement", False)),
             "dtype": call.out_type().dtype, "seed": seed_of(call.node.name)}
    return call.emit(MULTINOMIAL, [probs], attrs)


@RANDOM.imports("torch", "aten::rrelu", "aten::rrelu_with_noise_functional")
def _rrelu_from_aten(call):
    """Training: a slope drawn from U(lower, upper) per negative element; eval: the mean slope (deterministic).
    ``rrelu_with_noise_functional``'s second output (the slopes it drew) is not converted."""
    x = call.arg("self")
    lower, upper = float(call.arg("lower", 0.125)), float(call.arg("upper", 1.0 / 3.0))
    if call.arg("training", False):
        slope = _sample(call, x, "uniform", (lower, upper))
    else:
        slope = scalar_const(call, (lower + upper) / 2, x)
    zero = scalar_const(call, 0.0, x)
    y = call.emit(WHERE, [call.emit(BINARY["ge"], [x, zero]), x, call.emit(BINARY["mul"], [x, slope])])
    return [y, None] if "noise" in call.node.target._schema.name else y


@RANDOM.imports("torch", "aten::bernoulli")
def _bernoulli_from_aten(call):
    """``bernoulli(x)`` (x the probabilities), ``bernoulli(x, p)``: ``uniform(0, 1) < p`` in x's dtype. Imported
    whole: its decomposition draws with ``rand(shape)``, which the frontend would fold into one frozen draw."""
    x = call.arg("self")
    p = call.arg("p", x)
    float_dtype = x.type.dtype if x.type.dtype in ("float16", "bfloat16", "float32", "float64") else "float32"
    u = _sample(call, x, "uniform", (0.0, 1.0), float_dtype)
    drawn = call.emit(BINARY["lt"], [u, p if hasattr(p, "type") else scalar_const(call, float(p), u)])
    return call.emit(CAST, [drawn], {"dtype": call.out_type().dtype})
