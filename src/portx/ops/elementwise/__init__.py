"""Elementwise binary ops (arithmetic, comparisons, logic), where, and cast; unary ops are in unary.py.

Python-number operands become 0-d constants typed the way torch promotes them (``scalar_const``),
so every node's type equals torch's; where torch's result dtype still differs (``a // 2`` on
ints), a cast follows.

Example:
    >>> from portx.ops.elementwise import BINARY
    >>> BINARY["add"].reference_rule(np.array([1.0]), np.array([2.0]))
    array([3.])
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef, TensorType
from .._util import broadcast_shapes, kind, promote

__all__ = ["BINARY", "WHERE", "CAST", "scalar_const"]

def _div(a, b, rounding_mode=None):
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    if rounding_mode == "trunc":
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
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
    """A 0-d constant for a Python number operand, typed the way torch promotes it.

    ``like`` is the other operand (a Value), or a number / None when no operand is a tensor.
    Example: ``x_float16 + 2`` makes a float16 2; ``x_int64 * 0.5`` a float32 0.5.
    """
    like_dtype = like.type.dtype if hasattr(like, "type") else "bool"
    if isinstance(number, bool):
        dtype = "bool"
    elif isinstance(number, int):
        dtype = like_dtype if like_dtype != "bool" else "int64"
    else:
        dtype = like_dtype if kind(like_dtype) >= 2 else "float32"
    return call.const(np.array(number, dtype="float32" if dtype == "bfloat16" else dtype), "scalar")


def _binary_type(name, boolean):
    def infer(a, b, **attrs):
        shape = broadcast_shapes(a.shape, b.shape)
        dtype = "bool" if boolean else promote(a, b)
        if name == "div" and attrs.get("rounding_mode") is None and kind(dtype) < 2:
            dtype = "float32"  # true division of integers gives torch's default float dtype
        return TensorType(shape, dtype)
    return infer


def _binary_operands(call):
    """(a, b) with numbers as typed constants; rsub swaps, and alpha scales the subtrahend/addend."""
    a, b = call.arg("self"), call.arg("other", call.arg("exponent"))
    if not hasattr(a, "type"):
        a = scalar_const(call, a, b)
    if not hasattr(b, "type"):
        b = scalar_const(call, b, a)
    if call.node.target._schema.name == "aten::rsub":  # rsub(self, other, alpha) = other - alpha * self
        a, b = b, a
    alpha = call.arg("alpha", 1)
    if alpha != 1:
        b = call.emit(BINARY["mul"], [b, scalar_const(call, alpha, b)])
    return a, b


def _div_to_keras(node, k, a, b):
    """Division by rounding mode; integer trunc stays exact (no float round trip)."""
    mode = node.attrs.get("rounding_mode")
    if mode == "floor":
        return f"ops.floor_divide({a}, {b})"
    if mode == "trunc" and kind(node.outputs[0].type.dtype) == 1:
        return f"ops.multiply(ops.multiply(ops.sign({a}), ops.sign({b})), ops.floor_divide(ops.abs({a}), ops.abs({b})))"
    if mode == "trunc":
        return f"ops.trunc(ops.divide({a}, {b}))"
    return f"ops.divide({a}, {b})"


def _named(rule, name, suffix):
    """Name a generated rule after its op (``_add_to_keras``) so tracebacks and listings read well."""
    rule.__name__ = rule.__qualname__ = f"_{name}_{suffix}"
    return rule


def _binary_reference(name, ref, infer):
    def reference(a, b, **kw):
        want = infer(TensorType(np.shape(a), str(a.dtype)), TensorType(np.shape(b), str(b.dtype)), **kw)
        return np.asarray(ref(a, b, **kw)).astype(want.dtype)
    return _named(reference, name, "numpy")


def _binary_emit(name, fn):
    def emit(node, k):
        a, b = (k.ref(v) for v in node.inputs)
        k.assign(node, _div_to_keras(node, k, a, b) if name == "div" else f"{fn}({a}, {b})")
    return _named(emit, name, "to_keras")


def _binary_import(op):
    def import_torch(call):
        a, b = _binary_operands(call)
        extra = {"rounding_mode": call.arg("rounding_mode")} if op.name == "div" else {}
        out = call.emit(op, [a, b], extra)
        if out.type.dtype != call.out_type().dtype:
            out = call.emit(CAST, [out], {"dtype": call.out_type().dtype})
        return out
    return _named(import_torch, op.name, "from_aten")


def _make_binary(name, ref, fn, aten, boolean):
    attrs = {"rounding_mode": None} if name == "div" else {}
    op = OpDef(name, ("a", "b"), attrs, family="elementwise")
    infer = op.infer(_named(_binary_type(name, boolean), name, "type"))
    op.reference(_binary_reference(name, ref, infer))
    op.emits("keras-jax")(_binary_emit(name, fn))
    op.imports("torch", *aten)(_binary_import(op))
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
