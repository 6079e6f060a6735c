"""Keras activations (``Dense(activation=...)``, ``Activation("gelu")``) as compositions of IR ops.

Each entry follows ``keras.activations.<name>`` with its default arguments (Keras 3 formulas:
``hard_sigmoid(x) = relu6(x + 3) / 6``, ``leaky_relu`` slope 0.2, ``gelu`` exact unless
``approximate=True``); tests/ops/elementwise/test_from_keras.py checks each against Keras. Any other Python
function (``keras_hub``'s ``gelu_approximate``, a user's) is traced with JAX and inlined (``KerasCall.traced``).

Example:
    >>> y = apply_activation(call, x, "swish")      # -> silu(x)
    >>> y = apply_activation(call, x, "gelu", approximate=True)
"""
from __future__ import annotations

import functools

import numpy as np

from ...ops.elementwise import BINARY
from ...ops.reduce import LOG_SOFTMAX, SOFTMAX
from ...ops.elementwise.unary import UNARY

__all__ = ["apply_activation", "activation_name", "ACTIVATIONS"]

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _scalar(call, number, hint="scalar"):
    return call.param(np.array(number, np.float32), hint)


def _linear(call, x):
    return x


def _selu(call, x):
    return call.emit(BINARY["mul"], [call.emit(UNARY["elu"], [x], {"alpha": _SELU_ALPHA}),
                                     _scalar(call, _SELU_SCALE, "selu_scale")])


def _softsign(call, x):
    denom = call.emit(BINARY["add"], [call.emit(UNARY["abs"], [x]), _scalar(call, 1.0, "one")])
    return call.emit(BINARY["div"], [x, denom])


def _unary(name, **defaults):
    """An activation that is one IR unary op; ``options`` (e.g. gelu's approximate) override ``defaults``."""
    def apply_unary(call, x, **options):
        return call.emit(UNARY[name], [x], {**defaults, **_unary_options(name, options)})
    apply_unary.__name__ = f"_apply_{name}"
    return apply_unary


def _unary_options(name, options) -> dict:
    """Keras keyword arguments -> IR attributes: gelu approximate=True -> approximate="tanh"."""
    if name == "gelu" and "approximate" in options:
        return {"approximate": "tanh" if options["approximate"] else "none"}
    return {k: float(v) for k, v in options.items() if k in ("negative_slope", "alpha")}


def _softmax(op):
    def apply_softmax(call, x, axis=-1):
        return call.emit(op, [x], {"axis": int(axis) % x.type.rank})
    return apply_softmax


#: Keras activation name -> fn(call, x, **options) -> Value
ACTIVATIONS = {
    "linear": _linear,
    "relu": _unary("relu"),
    "relu6": _unary("clamp", min=0.0, max=6.0),
    "leaky_relu": _unary("leaky_relu", negative_slope=0.2),
    "elu": _unary("elu", alpha=1.0),
    "selu": _selu,
    "gelu": _unary("gelu", approximate="none"),
    "silu": _unary("silu"),
    "swish": _unary("silu"),
    "hard_sigmoid": _unary("hardsigmoid"),
    "hard_silu": _unary("hardswish"),
    "hard_swish": _unary("hardswish"),
    "sigmoid": _unary("sigmoid"),
    "tanh": _unary("tanh"),
    "softmax": _softmax(SOFTMAX),
    "log_softmax": _softmax(LOG_SOFTMAX),
    "softplus": _unary("softplus", beta=1.0, threshold=20.0),
    "softsign": _softsign,
    "mish": _unary("mish"),
    "exponential": _unary("exp"),
}


def activation_name(spec) -> str | None:
    """``"relu"`` / a serialized dict / a keras.activations function -> its name (None if unknown)."""
    if spec is None:
        return "linear"
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        config = spec.get("config")
        return config if isinstance(config, str) else (config or {}).get("name") or spec.get("class_name")
    if isinstance(spec, functools.partial):
        return activation_name(spec.func)
    return _keras_function_name(spec)


def _keras_function_name(fn) -> str | None:
    """The name of a keras.activations function; None for any other callable (a user function)."""
    import keras

    name = getattr(fn, "__name__", None)
    try:
        return name if name and keras.activations.get(name) is fn else None
    except ValueError:
        return None


def apply_activation(call, x, spec, **options):
    """Apply activation ``spec`` (name, dict, function or functools.partial) to ``x``; options such as
    ``approximate=True`` (gelu), ``negative_slope`` (leaky_relu), ``alpha`` (elu), ``axis`` (softmax)."""
    name = activation_name(spec)
    if name not in ACTIVATIONS and callable(spec) and not options:  # a Python function: traced with JAX
        return call.traced(spec, x)
    if name not in ACTIVATIONS:
        call.unsupported(f"activation {name or spec!r} is not supported; known: {', '.join(sorted(ACTIVATIONS))}")
    if isinstance(spec, functools.partial):
        options = {**spec.keywords, **options}
    try:
        return ACTIVATIONS[name](call, x, **options)
    except TypeError:
        call.unsupported(f"activation {name} with options {sorted(options)}")
