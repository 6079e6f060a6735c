"""Sorting and running (scan) ops: sort, topk, searchsorted, cumprod, cummax, cummin, logcumsumexp.

``sort`` gives the sorted values and the int64 indices that sort (torch.sort; stable; descending keeps
ties in input order). ``topk`` the k largest (or smallest) with their indices. ``searchsorted`` finds
insertion points of values in a 1-D sorted sequence (torch.searchsorted / bucketize). The running ops
keep ``cumsum``'s form (``reduce`` family): one ``axis`` and ``reverse``; cummax/cummin give the values
only (their torch indices are composed by the import rule). Median, kthvalue, argsort and msort are sort
followed by a select.

Example IR:
    %v: float32[2x3], %i: int64[2x3] = sort(%x) {axis=1, descending=True, stable=True}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef, TensorType
from .._util import kind, same_type

__all__ = ["SORT", "TOPK", "SEARCHSORTED", "CUMPROD", "CUMMAX", "CUMMIN", "LOGCUMSUMEXP", "SCANS"]

SORT = OpDef("sort", ("x",), {"axis": REQUIRED, "descending": False, "stable": True}, outputs=2, family="sort",
             doc="(values, int64 indices) sorted along axis; stable (ties keep their order), NaN sorts last ascending")


@SORT.infer
def _sort_type(x, *, axis, descending, stable):
    return [x, x.with_dtype("int64")]


def sort_indices(x, axis, descending):
    """Stable argsort; descending keeps ties in input order (NaN first), as torch.sort(stable=True)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return (n - 1) - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


@SORT.reference
def _sort_numpy(x, *, axis, descending, stable):
    idx = sort_indices(x, axis, descending)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]


TOPK = OpDef("topk", ("x",), {"k": REQUIRED, "axis": REQUIRED, "largest": True}, outputs=2, family="sort",
             doc="(values, int64 indices) of the k largest (or smallest) along axis, sorted")


@TOPK.infer
def _topk_type(x, *, k, axis, largest):
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"topk k={k} is out of range for axis {axis} of size {x.shape[axis]}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [x.with_shape(shape), TensorType(shape, "int64")]


@TOPK.reference
def _topk_numpy(x, *, k, axis, largest):
    idx = np.take(sort_indices(x, axis, largest), np.arange(k), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]


SEARCHSORTED = OpDef("searchsorted", ("sorted_sequence", "values"), {"right": False, "dtype": "int64"},
                     family="sort", doc="insertion points of values in a 1-D ascending sequence (bucketize)")


@SEARCHSORTED.infer
def _searchsorted_type(sorted_sequence, values, *, right, dtype):
    if sorted_sequence.rank != 1:
        raise ValueError(f"searchsorted takes a 1-D sorted sequence, got {sorted_sequence}")
    return values.with_dtype(dtype)


@SEARCHSORTED.reference
def _searchsorted_numpy(sorted_sequence, values, *, right, dtype):
    return np.searchsorted(sorted_sequence, values, side="right" if right else "left").astype(dtype)


def _scan_numpy(step):
    def reference(x, *, axis, reverse):
        flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
        return flip(step(flip(x), axis)).astype(x.dtype)
    return reference


def _logcumsumexp(x, axis):
    return np.logaddexp.accumulate(x.astype(np.float64), axis=axis)


def _make_scan(name, step, doc):
    op = OpDef(name, ("x",), {"axis": REQUIRED, "reverse": False}, family="sort", layout="axis", doc=doc)
    op.infer(same_type)
    op.reference(_scan_numpy(step))
    return op


CUMPROD = _make_scan("cumprod", lambda x, axis: np.cumprod(x, axis=axis), "running product along one axis")
CUMMAX = _make_scan("cummax", lambda x, axis: np.maximum.accumulate(x, axis=axis), "running maximum (values)")
CUMMIN = _make_scan("cummin", lambda x, axis: np.minimum.accumulate(x, axis=axis), "running minimum (values)")
LOGCUMSUMEXP = _make_scan("logcumsumexp", _logcumsumexp, "running log(sum(exp)) along one axis; floats only")


@LOGCUMSUMEXP.infer
def _logcumsumexp_type(x, *, axis, reverse):
    if kind(x.dtype) != 2:
        raise ValueError(f"logcumsumexp of {x.dtype}: floats only")
    return x


#: name -> the running op
SCANS = {op.name: op for op in (CUMPROD, CUMMAX, CUMMIN, LOGCUMSUMEXP)}
