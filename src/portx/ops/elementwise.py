"""Elementwise ops: unary math and activations, binary arithmetic and comparisons, where, cast.

Unary ops are declared from one table (name, NumPy meaning, Keras expression, ATen names, attrs);
each gets its own OpDef and rules with descriptive names.

Example:
    >>> from portx.ops.elementwise import UNARY
    >>> UNARY["relu"].reference_rule(np.array([-1.0, 2.0]))
    array([0., 2.])
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import Unsupported
from ..ir import OpDef, TensorType
from ._util import broadcast_shapes, promote, same_type

__all__ = ["UNARY", "BINARY", "WHERE", "CAST", "erf_np", "scalar_const"]

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
              "ops.clip({x}, {min}, {max})", ["aten::clamp", "aten::hardtanh"],
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


def _unary_type(name):
    if name in _BOOL_OUT:
        return lambda x, **_: x.with_dtype("bool")
    return same_type


def _make_unary(name, ref, template, aten, attr_spec):
    op = OpDef(name, ("x",), {k: d for k, (d, _) in attr_spec.items()}, family="elementwise")
    op.infer(_unary_type(name))
    op.reference(lambda x, **attrs: np.asarray(ref(x, **attrs)))

    def emit(node, k):
        fields = {a: k.lit(v) for a, v in node.attrs.items()}
        fields["approximate_bool"] = k.lit(node.attrs.get("approximate") == "tanh")
        k.assign(node, template.format(x=k.ref(node.inputs[0]), **fields))

    def import_torch(call):
        attrs = {}
        for attr, (default, sources) in attr_spec.items():
            found = [call.arg(s) for s in sources if call.arg(s) is not None]
            attrs[attr] = found[0] if found else default
        if name == "elu" and (call.arg("scale", 1) != 1 or call.arg("input_scale", 1) != 1):
            raise Unsupported("elu with scale/input_scale (selu-like) is not supported")
        if name == "clamp" and any(not isinstance(v, (int, float, type(None))) for v in attrs.values()):
            raise Unsupported("clamp with tensor bounds: use torch.minimum/maximum")
        return call.emit(op, [call.arg("self")], attrs)

    emit.__name__ = emit.__qualname__ = f"_{name}_to_keras"
    import_torch.__name__ = import_torch.__qualname__ = f"_{name}_from_aten"
    op.emits("keras-jax")(emit)
    op.imports("torch", *aten)(import_torch)
    return op


UNARY = {name: _make_unary(name, *row) for name, row in _UNARY_TABLE.items()}


def _div(a, b, rounding_mode=None):
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    if rounding_mode == "trunc":
        return np.trunc(a / b).astype(np.result_type(a, b))
    return np.true_divide(a, b)


# name: (reference, keras function, aten names, result is bool)
_BINARY_TABLE = {
    "add": (np.add, "ops.add", ["aten::add"], False),
    "sub": (np.subtract, "ops.subtract", ["aten::sub", "aten::rsub"], False),
    "mul": (np.multiply, "ops.multiply", ["aten::mul"], False),
    "div": (_div, "ops.divide", ["aten::div"], False),
    "pow": (np.power, "ops.power", ["aten::pow"], False),
    "minimum": (np.minimum, "ops.minimum", ["aten::minimum"], False),
    "maximum": (np.maximum, "ops.maximum", ["aten::maximum"], False),
    "eq": (np.equal, "ops.equal", ["aten::eq"], True),
    "ne": (np.not_equal, "ops.not_equal", ["aten::ne"], True),
    "lt": (np.less, "ops.less", ["aten::lt"], True),
    "le": (np.less_equal, "ops.less_equal", ["aten::le"], True),
    "gt": (np.greater, "ops.greater", ["aten::gt"], True),
    "ge": (np.greater_equal, "ops.greater_equal", ["aten::ge"], True),
    "logical_and": (np.logical_and, "ops.logical_and", ["aten::logical_and"], True),
    "logical_or": (np.logical_or, "ops.logical_or", ["aten::logical_or"], True),
}


def scalar_const(call, number, like):
    """A 0-d constant for a Python number operand, typed the way torch promotes it."""
    if isinstance(number, bool):
        dtype = "bool"
    elif isinstance(number, int):
        dtype = like.type.dtype if like.type.dtype != "bool" else "int64"
    else:
        dtype = like.type.dtype if like.type.dtype.startswith(("float", "bfloat", "complex")) else "float32"
    return call.const(np.array(number, dtype="float32" if dtype == "bfloat16" else dtype), "scalar")


def _binary_type(name, boolean):
    def infer(a, b, **_):
        shape = broadcast_shapes(a.shape, b.shape)
        dtype = "bool" if boolean else promote(a, b)
        if name == "div" and not boolean and dtype in ("bool", "int8", "uint8", "int16", "int32", "int64"):
            dtype = "float32"
        return TensorType(shape, dtype)
    return infer


def _binary_operands(call):
    a, b = call.arg("self"), call.arg("other")
    if not hasattr(a, "type"):
        a = scalar_const(call, a, b)
    if not hasattr(b, "type"):
        b = scalar_const(call, b, a)
    alpha = call.arg("alpha", 1)
    if alpha != 1:
        b = call.emit(BINARY["mul"], [b, scalar_const(call, alpha, b)])
    return a, b


def _make_binary(name, ref, fn, aten, boolean):
    attrs = {"rounding_mode": None} if name == "div" else {}
    op = OpDef(name, ("a", "b"), attrs, family="elementwise")
    op.infer(_binary_type(name, boolean))
    op.reference(lambda a, b, **kw: np.asarray(ref(a, b, **kw)))

    def emit(node, k):
        a, b = (k.ref(v) for v in node.inputs)
        mode = node.attrs.get("rounding_mode")
        if mode == "floor":
            k.assign(node, f"ops.floor_divide({a}, {b})")
        elif mode == "trunc":
            k.assign(node, f"ops.trunc(ops.divide({a}, {b}))")
        else:
            k.assign(node, f"{fn}({a}, {b})")

    def import_torch(call):
        a, b = _binary_operands(call)
        if call.node.target._schema.name == "aten::rsub":
            a, b = b, a
        extra = {"rounding_mode": call.arg("rounding_mode")} if name == "div" else {}
        out = call.emit(op, [a, b], extra)
        if out.type.dtype != call.out_type().dtype:
            out = call.emit(CAST, [out], {"dtype": call.out_type().dtype})
        return out

    emit.__name__ = emit.__qualname__ = f"_{name}_to_keras"
    import_torch.__name__ = import_torch.__qualname__ = f"_{name}_from_aten"
    op.emits("keras-jax")(emit)
    op.imports("torch", *aten)(import_torch)
    return op


CAST = OpDef("cast", ("x",), {"dtype": "float32"}, family="elementwise")


@CAST.infer
def _cast_type(x, *, dtype):
    return x.with_dtype(dtype)


@CAST.reference
def _cast_numpy(x, *, dtype):
    return x.astype(dtype)


@CAST.emits("keras-jax")
def _cast_to_keras(node, k):
    k.assign(node, f"ops.cast({k.ref(node.inputs[0])}, {k.lit(node.attrs['dtype'])})")


@CAST.imports("torch", "aten::_to_copy", "aten::clone", "aten::alias", "aten::detach", "aten::lift_fresh_copy",
              "aten::contiguous", "aten::dropout", "aten::feature_dropout", "aten::alpha_dropout")
def _cast_from_aten(call):
    """Copies and eval-time dropout are identities; ``_to_copy`` with a new dtype is a cast."""
    x = call.arg("self", call.arg("input"))
    dtype = call.out_type().dtype
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


BINARY = {name: _make_binary(name, *row) for name, row in _BINARY_TABLE.items()}

WHERE = OpDef("where", ("cond", "a", "b"), family="elementwise")


@WHERE.infer
def _where_type(cond, a, b):
    return TensorType(broadcast_shapes(cond.shape, a.shape, b.shape), promote(a, b))


@WHERE.reference
def _where_numpy(cond, a, b):
    return np.where(cond, a, b).astype(promote(TensorType(a.shape, str(a.dtype)), TensorType(b.shape, str(b.dtype))))


@WHERE.emits("keras-jax")
def _where_to_keras(node, k):
    c, a, b = (k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.where({c}, {a}, {b})")


@WHERE.imports("torch", "aten::where")
def _where_from_aten(call):
    a, b = call.arg("self"), call.arg("other")
    if not hasattr(a, "type"):
        a = scalar_const(call, a, b)
    if not hasattr(b, "type"):
        b = scalar_const(call, b, a)
    return call.emit(WHERE, [call.arg("condition"), a, b])
