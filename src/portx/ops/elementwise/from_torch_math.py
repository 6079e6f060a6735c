"""ATen import rules for elementwise math that decomposes into existing ops: ``logical_xor``, ``ldexp``,
``frexp``, ``fmax``/``fmin`` (NaN-ignoring), ``dist`` and the scaled ``elu`` behind ``selu``.

``frexp`` reads the exponent field of the float's bits (exact for every finite value, subnormals scaled into the
normal range first): ``x = mantissa * 2**exponent`` with ``0.5 <= |mantissa| < 1``, and ``(x, 0)`` for zero,
infinities and NaN, as C's ``frexp`` and torch.

Example:
    aten::fmax(%a, %b) -> where(isnan(%a), %b, where(isnan(%b), %a, maximum(%a, %b)))
    aten::elu(%x, 1.67, 1.05) (selu) -> mul(elu(%x) {alpha=1.67}, 1.05)
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from .._util import kind
from ..elementwise import BINARY, BITCAST, CAST, WHERE, scalar_const
from ..elementwise.unary import UNARY
from ..reduce import VECTOR_NORM

__all__ = ["scaled_elu"]

#: float dtype -> (same-width int dtype, mantissa bits, exponent bias, exponent field mask); float64 is split in
#: float32, which both targets narrow it to (passes/legalize/dtypes.py), so the bit layout is the one that runs
_FLOAT_BITS = {"float32": ("int32", 23, 127, 0xFF), "float16": ("int16", 10, 15, 0x1F),
               "bfloat16": ("int16", 7, 127, 0xFF)}


def _operands(call):
    a, b = call.arg("self"), call.arg("other")
    return (a if hasattr(a, "type") else scalar_const(call, a, b)), (b if hasattr(b, "type") else
                                                                      scalar_const(call, b, a))


def _as(call, x, dtype):
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


def _number(call, value, dtype, hint="scalar"):
    return call.const(np.array(value, dtype="float32" if dtype == "bfloat16" else dtype), hint)


@imports("torch", "aten::logical_xor")
def _logical_xor_from_aten(call):
    """``a != 0`` differs from ``b != 0``."""
    a, b = _operands(call)
    truths = [x if x.type.dtype == "bool" else call.emit(BINARY["ne"], [x, _number(call, 0, x.type.dtype, "zero")])
              for x in (a, b)]
    return call.emit(BINARY["ne"], truths)


@imports("torch", "aten::ldexp")
def _ldexp_from_aten(call):
    """``x * 2.0 ** e``, as torch computes it, in the result's float dtype."""
    a, b = _operands(call)
    dtype = call.out_type().dtype
    power = call.emit(BINARY["pow"], [_number(call, 2.0, dtype, "two"), _as(call, b, dtype)])
    return call.emit(BINARY["mul"], [_as(call, a, dtype), power])


@imports("torch", "aten::fmax", "aten::fmin")
def _fmax_from_aten(call):
    """The maximum (minimum) of the numbers present: NaN only where both operands are NaN."""
    a, b = _operands(call)
    dtype = call.out_type().dtype
    a, b = _as(call, a, dtype), _as(call, b, dtype)
    op = BINARY["maximum" if call.node.target._schema.name == "aten::fmax" else "minimum"]
    both = call.emit(op, [a, b])
    if kind(dtype) != 2:
        return both
    both = call.emit(WHERE, [call.emit(UNARY["isnan"], [b]), a, both])
    return call.emit(WHERE, [call.emit(UNARY["isnan"], [a]), b, both])


@imports("torch", "aten::dist")
def _dist_from_aten(call):
    """``vector_norm(a - b, p)`` over every element (p = 0 counts the differing elements, inf is the max)."""
    a, b = _operands(call)
    dtype = call.out_type().dtype
    diff = call.emit(BINARY["sub"], [_as(call, a, dtype), _as(call, b, dtype)])
    return call.emit(VECTOR_NORM, [diff], {"axes": tuple(range(diff.type.rank)), "keepdims": False,
                                           "ord": float(call.arg("p", 2))})


def scaled_elu(call, x, alpha):
    """torch's ``elu(x, alpha, scale, input_scale)``: ``scale * where(x > 0, x, alpha * expm1(input_scale * x))``."""
    scale, input_scale = float(call.arg("scale", 1)), float(call.arg("input_scale", 1))
    dtype = x.type.dtype
    if input_scale == 1.0:
        y = call.emit(UNARY["elu"], [x], {"alpha": alpha})
    else:
        inner = call.emit(UNARY["expm1"], [call.emit(BINARY["mul"], [x, _number(call, input_scale, dtype)])])
        negative = call.emit(BINARY["mul"], [inner, _number(call, alpha, dtype, "alpha")])
        positive = call.emit(BINARY["gt"], [x, _number(call, 0, dtype, "zero")])
        y = call.emit(WHERE, [positive, x, negative])
    return y if scale == 1.0 else call.emit(BINARY["mul"], [y, _number(call, scale, dtype, "scale")])


@imports("torch", "aten::frexp")
def _frexp_from_aten(call):
    """(mantissa, exponent) from the bits alone (XLA flushes subnormal operands of float arithmetic to zero):
    the exponent field minus (bias - 1), and the mantissa with that field set to bias - 1. A subnormal's fraction
    field, converted to a float (exactly), is split instead, its exponent lowered by bias - 1 + mantissa bits."""
    x = call.arg("self")
    if x.type.dtype == "float64":
        x = call.emit(CAST, [x], {"dtype": "float32"})
    dtype = x.type.dtype
    if dtype not in _FLOAT_BITS:
        call.unsupported(f"frexp of {dtype} (takes a floating point tensor)")
    ints, mbits, bias, emask = _FLOAT_BITS[dtype]
    width = 8 * np.dtype(ints).itemsize

    def num(value, hint="bits"):
        return _number(call, value, ints, hint)

    def band(a, value, hint):
        return call.emit(BINARY["bitwise_and"], [a, num(value, hint)])

    def field_of(b):
        return band(call.emit(BINARY["bitwise_right_shift"], [b, num(mbits, "mbits")]), emask, "emask")

    bits = call.emit(BITCAST, [x], {"dtype": ints})
    field = field_of(bits)
    subnormal = call.emit(BINARY["eq"], [field, num(0, "zero")])
    fraction = call.emit(CAST, [band(bits, (1 << mbits) - 1, "fraction")], {"dtype": dtype})
    signed = call.emit(BINARY["bitwise_or"], [call.emit(BITCAST, [fraction], {"dtype": ints}),
                                             band(bits, -(1 << (width - 1)), "sign")])
    source = call.emit(WHERE, [subnormal, signed, bits])
    exponent = call.emit(BINARY["sub"], [field_of(source), num(bias - 1, "bias")])
    exponent = call.emit(WHERE, [subnormal, call.emit(BINARY["sub"], [exponent, num(bias - 1 + mbits, "shift")]),
                                 exponent])
    half = call.emit(BINARY["bitwise_or"], [band(source, ~(emask << mbits), "keep"), num((bias - 1) << mbits, "half")])
    mantissa = call.emit(BITCAST, [half], {"dtype": dtype})
    special = call.emit(BINARY["logical_or"], [  # zero (either sign), infinities and NaN
        call.emit(BINARY["eq"], [band(bits, (1 << (width - 1)) - 1, "magnitude"), num(0, "zero")]),
        call.emit(BINARY["eq"], [field, num(emask, "all_ones")])])
    mantissa = call.emit(WHERE, [special, x, mantissa])
    exponent = call.emit(WHERE, [special, num(0, "zero_exponent"), exponent])
    return [_as(call, mantissa, call.out_type(0).dtype), _as(call, exponent, call.out_type(1).dtype)]
