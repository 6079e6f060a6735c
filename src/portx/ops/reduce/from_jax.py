"""JAX import rules for reductions, arg-reductions and cumsum.

``cumsum`` is the IR op of that name (reversed sums keep ``reverse``).

Example:
    reduce_sum[axes=(1,)](%x) -> sum(%x) {axes=(1,), keepdims=False}
"""
from __future__ import annotations

from .._util import named_rule
from ..elementwise import CAST
from ..reduce import ARGMAX, ARGMIN, CUMSUM, REDUCE

__all__ = []

_REDUCE = {"reduce_sum": "sum", "reduce_max": "amax", "reduce_min": "amin", "reduce_prod": "prod",
           "reduce_and": "all", "reduce_or": "any"}


def _reduce_rule(prim, op):
    def rule(call):
        axes = tuple(sorted(int(a) for a in call.params["axes"]))
        x = call.input(0)
        return x if not axes else call.emit(op, [x], {"axes": axes, "keepdims": False})
    return named_rule(rule, prim, "from_jax")


for _prim, _op in _REDUCE.items():
    REDUCE[_op].imports("jax", _prim)(_reduce_rule(_prim, REDUCE[_op]))


def _arg_rule(prim, op):
    def rule(call):
        (axis,) = call.params["axes"]
        return call.emit(op, [call.input(0)], {"axis": int(axis), "keepdims": False})  # cast to index_dtype after
    return named_rule(rule, prim, "from_jax")


ARGMAX.imports("jax", "argmax")(_arg_rule("argmax", ARGMAX))
ARGMIN.imports("jax", "argmin")(_arg_rule("argmin", ARGMIN))


@CUMSUM.imports("jax", "cumsum")
def _cumsum_from_jax(call):
    """``lax.cumsum(x, axis, reverse)``; integer sums are cast back to JAX's dtype (the IR's is int64)."""
    attrs = {"axis": int(call.params["axis"]), "reverse": bool(call.params.get("reverse"))}
    y = call.emit(CUMSUM, [call.input(0)], attrs)
    return y if y.type.dtype == call.out_type().dtype else call.emit(CAST, [y], {"dtype": call.out_type().dtype})
