"""JAX import rules for rounding, bit casts, logical shifts and polygamma.

``round`` rounds half to even (``jnp.round``) or, with ``rounding_method=0``, half away from zero:
``t = trunc(x); t + sign(x)`` where ``|x - t| >= 0.5`` (``x - t`` is exact). ``bitcast_convert_type``
between dtypes of one width is the ``bitcast`` op (Keras' own ``signbit``, hence ``keras.ops.argmax``,
reads a float's sign bit this way); ``shift_right_logical`` of a signed integer is an arithmetic shift
masked to the low ``bits - n`` bits, for a known shift.

Example:
    bitcast_convert_type[new_dtype=int32](%x) -> bitcast(%x) {dtype='int32'}
"""
from __future__ import annotations

import numpy as np

from .._util import kind
from ..elementwise import BINARY, BITCAST, WHERE
from ..elementwise.unary import UNARY

__all__ = []


@UNARY["round"].imports("jax", "round")
def _round_from_jax(call):
    x = call.input(0)
    if kind(x.type.dtype) != 2:
        return x
    if int(call.params.get("rounding_method", 0)) == 1:  # TO_NEAREST_EVEN
        return call.emit(UNARY["round"], [x])
    t = call.emit(UNARY["trunc"], [x])
    far = call.emit(BINARY["ge"], [call.emit(UNARY["abs"], [call.emit(BINARY["sub"], [x, t])]),
                                   call.scalar(0.5, x.type.dtype)])
    return call.emit(WHERE, [far, call.emit(BINARY["add"], [t, call.emit(UNARY["sign"], [x])]), t])


@BITCAST.imports("jax", "bitcast_convert_type")
def _bitcast_from_jax(call):
    x, out = call.input(0), call.out_type()
    if x.type.dtype == out.dtype:
        return x
    if x.type.shape != out.shape:
        call.unsupported(f"bitcast_convert_type from {x.type.dtype} to {out.dtype} (widths differ)")
    return call.emit(BITCAST, [x], {"dtype": out.dtype})


@BINARY["bitwise_right_shift"].imports("jax", "shift_right_logical")
def _shift_right_logical_from_jax(call):
    x, n = call.input(0), call.const_value(1)
    dtype = x.type.dtype
    if dtype.startswith("uint"):
        return call.emit(BINARY["bitwise_right_shift"], [x, call.input(1)])
    bits = np.dtype(dtype).itemsize * 8
    if n is None or n.size == 0 or not (n == n.flat[0]).all() or not 0 <= int(n.flat[0]) < bits:
        call.unsupported(f"shift_right_logical of {dtype} by a shift not known at conversion time")
    shift = int(n.flat[0])
    if shift == 0:
        return x
    shifted = call.emit(BINARY["bitwise_right_shift"], [x, call.scalar(shift, dtype)])
    return call.emit(BINARY["bitwise_and"], [shifted, call.scalar((1 << (bits - shift)) - 1, dtype)])


@UNARY["polygamma"].imports("jax", "polygamma")
def _polygamma_from_jax(call):
    m = call.const_value(0)
    if m is None or m.size == 0 or not (m == m.flat[0]).all():
        call.unsupported("polygamma with an order not known at conversion time")
    return call.emit(UNARY["polygamma"], [call.input(1)], {"n": int(m.flat[0])})
