"""JAX import rules for reductions, arg-reductions and cumsum.

``cumsum`` is the IR op of that name (reversed sums keep ``reverse``). ``iota`` (``arange``) is folded to a
constant by the jaxpr walk, except in traced Keras layers, where it is kept as a running count of ones so that
an ``arange`` of the sequence length follows a free dim (Note [keras composite layers]).

Example:
    reduce_sum[axes=(1,)](%x) -> sum(%x) {axes=(1,), keepdims=False}
"""
from __future__ import annotations

from .._jax import reshaped
from .._util import named_rule
from ..elementwise import BINARY, CAST
from ..reduce import ARGMAX, ARGMIN, CUMSUM, REDUCE
from ..shape import EXPAND

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


@CUMSUM.imports("jax", "iota")
def _iota_from_jax(call):
    """``iota[dimension=d, shape=s]`` -> cumsum(expand(1, s), d) - 1, cast to the iota's dtype (exact below 2**24)."""
    out = call.out_type()
    ones = reshaped(call, call.scalar(1, "float32"), (1,) * out.rank)
    ones = ones if ones.type.shape == out.shape else call.emit(EXPAND, [ones], {"shape": out.shape})
    count = call.emit(CUMSUM, [ones], {"axis": int(call.params["dimension"])})
    index = call.emit(BINARY["sub"], [count, call.scalar(1, "float32")])
    return index if out.dtype == "float32" else call.emit(CAST, [index], {"dtype": out.dtype})
