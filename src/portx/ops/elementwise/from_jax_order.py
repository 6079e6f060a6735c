"""JAX import rules for total-order comparisons (``lt_to``, ``le_to``, ``eq_to``).

``jnp.searchsorted`` (hence ``keras.ops.searchsorted``, ``digitize``, ``histogram`` and the
``Discretization`` layer) and multi-key ``sort`` compare with XLA's TOTALORDER, where for floats
``-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN``. A float's bits read as a signed integer, with
the magnitude bits of negative values flipped (``bits ^ 0x7fff...``), order exactly that way, so the
comparison is an integer comparison of those keys (``bitcast``, ``bitwise_xor``, ``where``). Integers
and bools are already totally ordered: a plain comparison.

Example:
    lt_to(%a, %b) on float32 -> bitcast {dtype='int32'} -> where(bits < 0, bits ^ 0x7fffffff, bits) -> lt
"""
from __future__ import annotations

import numpy as np

from .._util import kind, named_rule
from ..elementwise import BINARY, BITCAST, WHERE

__all__ = []

#: float dtype -> the signed integer of its width
_BITS = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}
_ORDER = {"lt_to": "lt", "le_to": "le", "eq_to": "eq"}


def _ordered_key(call, x):
    """``x`` as integers that compare in TOTALORDER (for floats), or ``x`` itself."""
    bits = _BITS.get(x.type.dtype)
    if kind(x.type.dtype) != 2 or bits is None:
        return x
    raw = call.emit(BITCAST, [x], {"dtype": bits})
    negative = call.emit(BINARY["lt"], [raw, call.scalar(0, bits)])
    flipped = call.emit(BINARY["bitwise_xor"], [raw, call.scalar(np.iinfo(bits).max, bits)])
    return call.emit(WHERE, [negative, flipped, raw])


def _total_order_rule(prim, op):
    def rule(call):
        return call.emit(op, [_ordered_key(call, call.input(0)), _ordered_key(call, call.input(1))])
    return named_rule(rule, prim, "from_jax")


for _prim, _op in _ORDER.items():
    BINARY[_op].imports("jax", _prim)(_total_order_rule(_prim, BINARY[_op]))
