"""Elementwise binary ops (arithmetic, comparisons, logic), where, and cast; unary ops are in unary.py.

The binary ops differ only by name, so they are declared from one table, ``BINARY_TABLE``: each row
gives the NumPy meaning, the Keras function and the ATen names. This module declares the OpDefs with
their shape rules and NumPy references; ``from_torch.py`` registers the ATen import rules and
``to_keras.py`` the Keras emit rules from the same rows.

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

from ...ir import REQUIRED, OpDef, TensorType
from .._util import broadcast_shapes, kind, named_rule, promote

__all__ = ["BINARY", "BINARY_TABLE", "FLOAT_RESULTS", "WHERE", "CAST", "BITCAST", "scalar_const", "tensor_pair",
           "emit_binary"]


def _div(a, b, rounding_mode=None):
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    if rounding_mode == "trunc":
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
    return np.true_divide(a, b)


def _special(name):
    """The scipy.special function ``name`` of two operands, in float64 (scipy comes with jax)."""
    def reference(a, b):
        import scipy.special
        return getattr(scipy.special, name)(a.astype(np.float64), b.astype(np.float64))
    return reference


#: name: (reference, keras function, aten names, result is bool); a "special." function is a JaxFunction
#: of jax.scipy.special (keras.ops lacks it), an empty one has its own emit rule (to_keras.py)
BINARY_TABLE = {
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
    # bool and integer operands only (the masks of attention code: ``causal & padding``)
    "bitwise_and": (np.bitwise_and, "ops.bitwise_and", ["aten::bitwise_and"], False),
    "bitwise_or": (np.bitwise_or, "ops.bitwise_or", ["aten::bitwise_or"], False),
    "bitwise_xor": (np.bitwise_xor, "ops.bitwise_xor", ["aten::bitwise_xor"], False),
    "atan2": (np.arctan2, "ops.arctan2", ["aten::atan2", "aten::arctan2"], False),
    "fmod": (np.fmod, "ops.fmod", ["aten::fmod"], False),  # C fmod: the sign follows the dividend
    "remainder": (np.mod, "ops.mod", ["aten::remainder"], False),  # Python %: the sign follows the divisor
    "copysign": (np.copysign, "", ["aten::copysign"], False),
    "nextafter": (np.nextafter, "ops.nextafter", ["aten::nextafter"], False),
    "hypot": (np.hypot, "ops.hypot", ["aten::hypot"], False),
    "bitwise_left_shift": (np.left_shift, "ops.left_shift", ["aten::bitwise_left_shift", "aten::__lshift__"], False),
    "bitwise_right_shift": (np.right_shift, "ops.right_shift", ["aten::bitwise_right_shift", "aten::__rshift__"],
                            False),  # arithmetic on signed integers, in torch, numpy and jax
    "igamma": (_special("gammainc"), "special.gammainc", ["aten::igamma", "aten::special_gammainc"], False),
    "igammac": (_special("gammaincc"), "special.gammaincc", ["aten::igammac", "aten::special_gammaincc"], False),
    "zeta": (_special("zeta"), "special.zeta", ["aten::special_zeta"], False),
}
#: binary ops whose result is float for integer operands (torch's default float dtype)
FLOAT_RESULTS = {"div", "atan2", "copysign", "igamma", "igammac", "zeta"}


def tensor_pair(call, a, b):
    """``(a, b)`` with a Python number operand made a 0-d constant typed as torch promotes it (``scalar_const``)."""
    if not hasattr(a, "type"):
        a = scalar_const(call, a, b)
    if not hasattr(b, "type"):
        b = scalar_const(call, b, a)
    return a, b


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


def emit_binary(call, name, *operands):
    """The IR binary op ``name`` (``BINARY``) on two values, emitted by an import rule: ``emit_binary(call, "mul",
    a, b)``."""
    return call.emit(BINARY[name], list(operands))


def _binary_type(name, boolean):
    def infer(a, b, **attrs):
        shape = broadcast_shapes(a.shape, b.shape)
        dtype = "bool" if boolean else promote(a, b)
        if name.startswith("bitwise") and kind(dtype) == 2:
            raise ValueError(f"{name} of {a.dtype} and {b.dtype}: bitwise ops take bool or integer operands")
        if name in FLOAT_RESULTS and attrs.get("rounding_mode") is None and kind(dtype) < 2:
            dtype = "float32"  # true division of integers gives torch's default float dtype
        return TensorType(shape, dtype)
    return infer


def _binary_reference(name, ref, infer):
    def reference(a, b, **kw):
        want = infer(TensorType(np.shape(a), str(a.dtype)), TensorType(np.shape(b), str(b.dtype)), **kw)
        return np.asarray(ref(a, b, **kw)).astype(want.dtype)
    return named_rule(reference, name, "numpy")


def _make_binary(name, ref, boolean):
    attrs = {"rounding_mode": None} if name == "div" else {}
    op = OpDef(name, ("a", "b"), attrs, family="elementwise")
    infer = op.infer(named_rule(_binary_type(name, boolean), name, "type"))
    op.reference(_binary_reference(name, ref, infer))
    return op


BITCAST = OpDef("bitcast", ("x",), {"dtype": REQUIRED}, family="elementwise",
                doc="the same bits read as another dtype of the same width (torch Tensor.view(dtype), "
                    "lax.bitcast_convert_type)")


@BITCAST.infer
def _bitcast_type(x, *, dtype):
    if np.dtype(_NUMPY.get(x.dtype, x.dtype)).itemsize != np.dtype(_NUMPY.get(dtype, dtype)).itemsize:
        raise ValueError(f"bitcast of {x.dtype} to {dtype}: only between dtypes of one width")
    return x.with_dtype(dtype)


@BITCAST.reference
def _bitcast_numpy(x, *, dtype):
    return x.view(_NUMPY.get(dtype, dtype))


_NUMPY = {"bfloat16": "uint16"}  # NumPy has no bfloat16; only the width matters here

CAST = OpDef("cast", ("x",), {"dtype": "float32"}, family="elementwise")


@CAST.infer
def _cast_type(x, *, dtype):
    return x.with_dtype(dtype)


@CAST.reference
def _cast_numpy(x, *, dtype):
    return x.astype(dtype)


BINARY = {name: _make_binary(name, ref, boolean) for name, (ref, _, _, boolean) in BINARY_TABLE.items()}
# inputs defined only above a bound (NaN below): igamma(a > 0, x >= 0), Hurwitz zeta(s > 1, q > 0)
BINARY["igamma"].domain = BINARY["igammac"].domain = {"a": 0.0, "b": 0.0}
BINARY["zeta"].domain = {"a": 1.0, "b": 0.0}

WHERE = OpDef("where", ("cond", "a", "b"), family="elementwise")


@WHERE.infer
def _where_type(cond, a, b):
    return TensorType(broadcast_shapes(cond.shape, a.shape, b.shape), promote(a, b))


@WHERE.reference
def _where_numpy(cond, a, b):
    return np.where(cond, a, b).astype(promote(TensorType(a.shape, str(a.dtype)), TensorType(b.shape, str(b.dtype))))
