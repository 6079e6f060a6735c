"""JAX import rules for reductions, arg-reductions and cumsum.

``cumsum`` along an axis of n is a matmul with an n x n triangular constant.

Example:
    reduce_sum[axes=(1,)](%x) -> sum(%x) {axes=(1,), keepdims=False}
"""
from __future__ import annotations

import numpy as np

from .._jax import inverse, permuted
from .._util import kind, named_rule
from ..linear import MATMUL
from ..reduce import ARGMAX, ARGMIN, REDUCE

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


@MATMUL.imports("jax", "cumsum")
def _cumsum_from_jax(call):
    """``x @ T`` along the axis moved last, with T[i, j] = 1 where i <= j (i >= j when reversed)."""
    x = call.input(0)
    if kind(x.type.dtype) != 2:
        call.unsupported(f"cumsum on {x.type.dtype}")
    axis, n = int(call.params["axis"]), x.type.shape[int(call.params["axis"])]
    perm = [i for i in range(x.type.rank) if i != axis] + [axis]
    tri = np.triu(np.ones((n, n), x.type.dtype))
    tri = tri.T if call.params.get("reverse") else tri
    y = call.emit(MATMUL, [permuted(call, x, perm), call.const(tri, "cumsum_triangle")])
    return permuted(call, y, inverse(perm))
