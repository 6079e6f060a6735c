"""Unary elementwise ops: math and activations, declared from one table.

Each row gives the NumPy meaning, the Keras expression, the ATen names and the attributes; each
op still gets its own OpDef and rules with descriptive names. Where torch computes in another
dtype than the input's (``exp`` of ints, ``clamp(int, 0.5)``) the import rule casts first.

Example:
    >>> from portx.ops.unary import UNARY
    >>> UNARY["relu"].reference_rule(np.array([-1.0, 2.0]))
    array([0., 2.])
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import OpDef
from .._util import kind, same_type
from ..elementwise import BINARY, CAST, scalar_const

__all__ = ["UNARY", "erf_np"]  # _UNARY_TABLE is read by the tests

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf_np(x):
    """Elementwise erf in float64, cast back to x's dtype."""
    return _erf(x).astype(x.dtype)


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _softplus(x, beta=1.0, threshold=20.0):
    x64 = x.astype(np.float64) * beta
    return np.where(x64 > threshold, x, np.logaddexp(0.0, x64) / beta).astype(x.dtype)


def _gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    else:
        y = 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))
    return y.astype(x.dtype)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype)


# name: (reference, keras expression template, aten names, attrs{name: (default, aten arg)})
_UNARY_TABLE = {
    "relu": (lambda x: np.maximum(x, 0).astype(x.dtype), "ops.relu({x})", ["aten::relu"], {}),
    "clamp": (lambda x, min=None, max=None: np.clip(x, min, max).astype(x.dtype),
              "ops.clip({x}, {min}, {max})", ["aten::clamp", "aten::clamp_min", "aten::clamp_max",
                                              "aten::hardtanh"],
              {"min": (None, ("min", "min_val")), "max": (None, ("max", "max_val"))}),
    "leaky_relu": (lambda x, negative_slope=0.01: np.where(x >= 0, x, x * negative_slope).astype(x.dtype),
                   "ops.leaky_relu({x}, negative_slope={negative_slope})", ["aten::leaky_relu"],
                   {"negative_slope": (0.01, ("negative_slope",))}),
    "elu": (_elu, "ops.elu({x}, alpha={alpha})", ["aten::elu"], {"alpha": (1.0, ("alpha",))}),
    "gelu": (_gelu, "ops.gelu({x}, approximate={approximate_bool})", ["aten::gelu"],
             {"approximate": ("none", ("approximate",))}),
    "silu": (lambda x: (x * _sigmoid(x)).astype(x.dtype), "ops.silu({x})", ["aten::silu"], {}),
    "sigmoid": (_sigmoid, "ops.sigmoid({x})", ["aten::sigmoid"], {}),
    "tanh": (lambda x: np.tanh(x), "ops.tanh({x})", ["aten::tanh"], {}),
    "hardswish": (lambda x: (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype), "ops.hard_silu({x})",
                  ["aten::hardswish"], {}),
    "hardsigmoid": (lambda x: (np.clip(x + 3, 0, 6) / 6).astype(x.dtype), "ops.hard_sigmoid({x})",
                    ["aten::hardsigmoid"], {}),
    "softplus": (_softplus, "ops.where({x} * {beta} > {threshold}, {x}, ops.softplus({x} * {beta}) / {beta})",
                 ["aten::softplus"], {"beta": (1.0, ("beta",)), "threshold": (20.0, ("threshold",))}),
    "mish": (lambda x: (x * np.tanh(_softplus(x))).astype(x.dtype), "{x} * ops.tanh(ops.softplus({x}))",
             ["aten::mish"], {}),
    "exp": (np.exp, "ops.exp({x})", ["aten::exp"], {}),
    "log": (np.log, "ops.log({x})", ["aten::log"], {}),
    "neg": (np.negative, "ops.negative({x})", ["aten::neg"], {}),
    "abs": (np.abs, "ops.abs({x})", ["aten::abs"], {}),
    "sqrt": (np.sqrt, "ops.sqrt({x})", ["aten::sqrt"], {}),
    "rsqrt": (lambda x: (1 / np.sqrt(x)).astype(x.dtype), "ops.rsqrt({x})", ["aten::rsqrt"], {}),
    "reciprocal": (lambda x: (1 / x).astype(x.dtype), "ops.reciprocal({x})", ["aten::reciprocal"], {}),
    "erf": (erf_np, "ops.erf({x})", ["aten::erf"], {}),
    "sin": (np.sin, "ops.sin({x})", ["aten::sin"], {}),
    "cos": (np.cos, "ops.cos({x})", ["aten::cos"], {}),
    "floor": (np.floor, "ops.floor({x})", ["aten::floor"], {}),
    "ceil": (np.ceil, "ops.ceil({x})", ["aten::ceil"], {}),
    "sign": (np.sign, "ops.sign({x})", ["aten::sign"], {}),
    "logical_not": (np.logical_not, "ops.logical_not({x})", ["aten::logical_not"], {}),
}
_BOOL_OUT = {"logical_not"}
_INT_IDENTITY = {"floor", "ceil"}


def _bool_type(x, **_attrs):
    """Shape rule for predicates such as logical_not: same shape, bool."""
    return x.with_dtype("bool")


def _unary_attrs(call, attr_spec) -> dict:
    attrs = {}
    for attr, (default, sources) in attr_spec.items():
        found = [call.arg(s) for s in sources if call.arg(s) is not None]
        attrs[attr] = found[0] if found else default
    return attrs


def _unary_input(call, name):
    """The input, cast first where torch computes in another dtype (exp of ints, clamp(int, 0.5))."""
    x, dtype = call.arg("self"), call.out_type().dtype
    if name in _INT_IDENTITY and kind(x.type.dtype) == 1:
        return x
    return x if name in _BOOL_OUT or x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


def _named(rule, name, suffix):
    """Name a generated rule after its op (``_relu_to_keras``) so tracebacks and listings read well."""
    rule.__name__ = rule.__qualname__ = f"_{name}_{suffix}"
    return rule


def _unary_reference(name, ref):
    def reference(x, **attrs):
        return np.asarray(ref(x, **attrs))
    return _named(reference, name, "numpy")


def _unary_emit(name, template):
    def emit(node, k):
        fields = {a: k.lit(v) for a, v in node.attrs.items()}
        fields["approximate_bool"] = k.lit(node.attrs.get("approximate") == "tanh")
        k.assign(node, template.format(x=k.ref(node.inputs[0]), **fields))
    return _named(emit, name, "to_keras")


def _unary_import(op, attr_spec):
    name = op.name

    def import_torch(call):
        attrs, x = _unary_attrs(call, attr_spec), _unary_input(call, name)
        if name == "elu" and (call.arg("scale", 1) != 1 or call.arg("input_scale", 1) != 1):
            call.unsupported("elu with scale/input_scale (selu-like) is not supported")
        if name in _INT_IDENTITY and kind(x.type.dtype) == 1:
            return x  # floor/ceil of an integer tensor is the tensor itself, in its own dtype
        if name == "clamp" and any(hasattr(v, "type") for v in attrs.values()):
            return _clamp_by_tensors(call, x, attrs["min"], attrs["max"])
        return call.emit(op, [x], attrs)
    return _named(import_torch, name, "from_aten")


def _make_unary(name, ref, template, aten, attr_spec):
    op = OpDef(name, ("x",), {k: d for k, (d, _) in attr_spec.items()}, family="elementwise")
    op.infer(_bool_type if name in _BOOL_OUT else same_type)
    op.reference(_unary_reference(name, ref))
    op.emits("keras-jax")(_unary_emit(name, template))
    op.imports("torch", *aten)(_unary_import(op, attr_spec))
    return op


def _clamp_by_tensors(call, x, low, high):
    """clamp with tensor bounds is maximum then minimum (bounds broadcast like any operand)."""
    for bound, op_name in ((low, "maximum"), (high, "minimum")):
        if bound is not None:
            x = call.emit(BINARY[op_name], [x, bound if hasattr(bound, "type") else scalar_const(call, bound, x)])
    dtype = call.out_type().dtype
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


UNARY = {name: _make_unary(name, *row) for name, row in _UNARY_TABLE.items()}


@UNARY["clamp"].imports("torch", "aten::relu6")
def _relu6_from_aten(call):
    return call.emit(UNARY["clamp"], [_unary_input(call, "clamp")], {"min": 0.0, "max": 6.0})


@UNARY["logical_not"].imports("torch", "aten::bitwise_not")
def _bitwise_not_from_aten(call):
    """``~mask`` on a bool tensor (the padding-mask idiom) is logical not; on integers it is refused."""
    x = call.arg("self")
    if x.type.dtype != "bool":
        call.unsupported(f"bitwise not on {x.type.dtype} (only bool tensors are supported)")
    return call.emit(UNARY["logical_not"], [x])
