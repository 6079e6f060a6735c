"""ATen import rules for sorting and running ops: sort (argsort, msort), topk, median, kthvalue,
searchsorted, bucketize, cumprod, cummax, cummin, logcumsumexp.

``median`` (the lower median, as torch), ``nanmedian`` and ``kthvalue`` are a sort followed by a select
(nanmedian gathers at the middle of the non-NaN count);
``cummax``/``cummin`` indices are composed from the running values: the running maximum over the
positions where ``x`` equals its running maximum (the last such position, as torch).

Example:
    aten::median.dim(%x, 1) -> sort(%x) {axis=1}; select {axis=1, index=(n-1)//2} of values and indices
"""
from __future__ import annotations

import numpy as np

from .._util import named_rule, norm_axis
from ..elementwise import BINARY, CAST, WHERE
from ..elementwise.unary import UNARY
from ..reduce import REDUCE
from ..shape import RESHAPE
from ..shape.index import GATHER, SELECT, SLICE
from ..sort import CUMMAX, CUMMIN, LOGCUMSUMEXP, SCANS, SEARCHSORTED, SORT, TOPK

__all__ = []


def _axis(call, x, name="dim", default=-1):
    if not x.type.rank:
        call.unsupported(f"{call.node.target._schema.name} of a 0-d tensor")
    return norm_axis(call.arg(name, default), x.type.rank)


@SORT.imports("torch", "aten::sort")
def _sort_from_aten(call):
    """``torch.sort(x, dim, descending, stable)``: argsort and msort reach here too; sorting is always stable."""
    x = call.arg("self")
    return call.emit(SORT, [x], {"axis": _axis(call, x), "descending": bool(call.arg("descending", False))})


@TOPK.imports("torch", "aten::topk")
def _topk_from_aten(call):
    """``torch.topk``; ``sorted=False`` may return any order, so the sorted one is a valid answer."""
    x = call.arg("self")
    return call.emit(TOPK, [x], {"k": int(call.arg("k")), "axis": _axis(call, x),
                                 "largest": bool(call.arg("largest", True))})


def _pick(call, x, k_of_n):
    """(values, indices) of the k-th smallest along ``dim`` (all of x when no dim), kept as torch keeps them."""
    dim = call.arg("dim")
    if dim is None:
        x = x if x.type.rank == 1 else call.emit(RESHAPE, [x], {"shape": (int(np.prod(x.type.shape)),)})
    axis = 0 if dim is None else _axis(call, x)
    values, indices = call.emit(SORT, [x], {"axis": axis})
    k = k_of_n(x.type.shape[axis])
    if dim is not None and call.arg("keepdim", False):
        picked = [call.emit(SLICE, [v], {"axis": axis, "start": k, "end": k + 1}) for v in (values, indices)]
    else:
        picked = [call.emit(SELECT, [v], {"axis": axis, "index": k}) for v in (values, indices)]
    return picked if dim is not None else picked[0]


@SORT.imports("torch", "aten::median")
def _median_from_aten(call):
    """The lower median (``(n - 1) // 2``-th smallest), as torch; NaN inputs are not special-cased."""
    return _pick(call, call.arg("self"), lambda n: (n - 1) // 2)


@SORT.imports("torch", "aten::nanmedian")
def _nanmedian_from_aten(call):
    """The lower median of the non-NaN values: NaN sorts last, so it is the ``(count - 1) // 2``-th, gathered."""
    x, dim = call.arg("self"), call.arg("dim")
    if dim is None:
        x = x if x.type.rank == 1 else call.emit(RESHAPE, [x], {"shape": (int(np.prod(x.type.shape)),)})
    axis = 0 if dim is None else _axis(call, x)
    values, indices = call.emit(SORT, [x], {"axis": axis})
    kept = call.emit(UNARY["logical_not"], [call.emit(UNARY["isnan"], [x])])
    count = call.emit(REDUCE["sum"], [kept], {"axes": (axis,), "keepdims": True})
    one, two = (call.const(np.array(v, dtype=np.int64), name) for v, name in ((1, "one"), (2, "two")))
    middle = call.emit(BINARY["div"], [call.emit(BINARY["sub"], [count, one]), two], {"rounding_mode": "floor"})
    none = call.emit(BINARY["eq"], [count, call.const(np.array(0, dtype=np.int64), "zero")])
    half = call.const(np.array(x.type.shape[axis] // 2, dtype=np.int64), "half")
    middle = call.emit(WHERE, [none, half, middle])  # all NaN: a NaN at n // 2, where torch reports it
    picked = [call.emit(GATHER, [v, middle], {"axis": axis}) for v in (values, indices)]
    if dim is None or not call.arg("keepdim", False):
        picked = [call.emit(SELECT, [v], {"axis": axis, "index": 0}) for v in picked]
    return picked if dim is not None else picked[0]


@SORT.imports("torch", "aten::kthvalue")
def _kthvalue_from_aten(call):
    k = int(call.arg("k"))
    return _pick(call, call.arg("self"), lambda n: k - 1 if 1 <= k <= n else call.unsupported(f"kthvalue k={k} of {n}"))


def _searchsorted(call, boundaries, values, right):
    if not hasattr(values, "type"):
        call.unsupported("searchsorted of a Python number (give a tensor)")
    if boundaries.type.rank != 1:
        call.unsupported("searchsorted with an N-D sorted sequence (only 1-D boundaries)")
    dtype = "int32" if call.arg("out_int32", False) else "int64"
    return call.emit(SEARCHSORTED, [boundaries, values], {"right": bool(right), "dtype": dtype})


@SEARCHSORTED.imports("torch", "aten::searchsorted")
def _searchsorted_from_aten(call):
    if call.arg("sorter") is not None:
        call.unsupported("searchsorted with sorter= (sort the sequence first)")
    right = call.arg("right", False) or call.arg("side") == "right"
    return _searchsorted(call, call.arg("sorted_sequence"), call.arg("self"), right)


@SEARCHSORTED.imports("torch", "aten::bucketize")
def _bucketize_from_aten(call):
    """``bucketize(x, boundaries, right)`` is ``searchsorted(boundaries, x, right=right)``."""
    return _searchsorted(call, call.arg("boundaries"), call.arg("self"), call.arg("right", False))


def _scan_import(op):
    def import_torch(call):
        x, dtype = call.arg("self"), call.out_type().dtype
        if x.type.dtype != dtype:
            x = call.emit(CAST, [x], {"dtype": dtype})  # cumprod of ints is int64, of an explicit dtype= that dtype
        return call.emit(op, [x], {"axis": _axis(call, x, default=None)})
    return named_rule(import_torch, op.name, "from_aten")


SCANS["cumprod"].imports("torch", "aten::cumprod")(_scan_import(SCANS["cumprod"]))
LOGCUMSUMEXP.imports("torch", "aten::logcumsumexp")(_scan_import(LOGCUMSUMEXP))


@CUMMAX.imports("torch", "aten::cummax")
@CUMMIN.imports("torch", "aten::cummin")
def _cummax_from_aten(call):
    """(values, indices): the index is the last position so far where x equals the running value."""
    op = CUMMAX if call.node.target._schema.name == "aten::cummax" else CUMMIN
    x = call.arg("self")
    axis = _axis(call, x, default=None)
    values = call.emit(op, [x], {"axis": axis})
    if not call.output_read(1):
        return [values, None]  # Note [unused outputs] in frontends/torch/__init__.py
    shape = [1] * x.type.rank
    shape[axis] = x.type.shape[axis]
    positions = call.const(np.arange(x.type.shape[axis], dtype=np.int64).reshape(shape), "positions")
    hit = call.emit(BINARY["eq"], [x, values])
    zero = call.const(np.zeros((), dtype=np.int64), "zero")
    marked = call.emit(WHERE, [hit, positions, zero])
    return [values, call.emit(CUMMAX, [marked], {"axis": axis})]
