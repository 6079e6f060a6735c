"""JAX import rules for sorting and running ops: sort, top_k, cumprod, cummax, cummin, cumlogsumexp.

``sort`` with one key sorts the key and reorders the other operands by its indices (``gather``, that is
take_along_axis); ``jnp.argsort`` sorts the key with an iota, which is then the indices themselves.
Indices are cast to JAX's int32. Lexicographic sorts (``num_keys > 1``) are refused.

Example:
    sort[dimension=1 num_keys=1](%x, %iota) -> sort(%x) {axis=1}; its indices cast to int32
"""
from __future__ import annotations

import numpy as np

from .._util import named_rule
from ..elementwise import CAST
from ..shape.index import GATHER
from ..sort import SCANS, SORT, TOPK

__all__ = []


def _as(call, value, dtype):
    return value if value.type.dtype == dtype else call.emit(CAST, [value], {"dtype": dtype})


def _is_iota(array, axis) -> bool:
    if array is None or array.ndim <= axis:
        return False
    shape = [1] * array.ndim
    shape[axis] = array.shape[axis]
    return np.array_equal(array, np.broadcast_to(np.arange(array.shape[axis]).reshape(shape), array.shape))


@SORT.imports("jax", "sort")
def _sort_from_jax(call):
    if int(call.params.get("num_keys", 1)) != 1:
        call.unsupported(f"sort with num_keys={call.params['num_keys']} (a lexicographic sort)")
    axis = int(call.params["dimension"])
    values, indices = call.emit(SORT, [call.input(0)], {"axis": axis})
    outs = [values]
    for i in range(1, call.arity):
        dtype = call.out_type(i).dtype
        if _is_iota(call.const_value(i), axis):
            outs.append(_as(call, indices, dtype))
        else:
            outs.append(call.emit(GATHER, [call.input(i), indices], {"axis": axis}))
    return outs if call.arity > 1 else values


@TOPK.imports("jax", "top_k")
def _top_k_from_jax(call):
    x = call.input(0)
    axis = int(call.params.get("axis", x.type.rank - 1)) % max(x.type.rank, 1)
    values, indices = call.emit(TOPK, [x], {"k": int(call.params["k"]), "axis": axis})
    return [values, _as(call, indices, call.out_type(1).dtype)]


def _scan_rule(prim, op):
    def rule(call):
        attrs = {"axis": int(call.params["axis"]), "reverse": bool(call.params.get("reverse", False))}
        return call.emit(op, [call.input(0)], attrs)
    return named_rule(rule, prim, "from_jax")


for _prim, _name in {"cumprod": "cumprod", "cummax": "cummax", "cummin": "cummin",
                     "cumlogsumexp": "logcumsumexp"}.items():
    SCANS[_name].imports("jax", _prim)(_scan_rule(_prim, SCANS[_name]))
