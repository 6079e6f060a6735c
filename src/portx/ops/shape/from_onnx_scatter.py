"""ONNX import rules for GatherND, ScatterND and ScatterElements, written with the IR's row gather and scatter.

GatherND (batch_dims 0) flattens the indexed leading axes and takes rows at ``sum(index * strides)``.
ScatterND is ``scatter`` with its indices as (N, k) rows; ScatterElements gives every update its full
coordinate (the element's own position, with the index on ``axis``). Reductions: none and add.
Negative indices count from the end.

Example:
    GatherND(%x: float32[4x5x6], %i: int64[3x2]) -> index_select(reshape(%x) {shape=(20, 6)}, %row) {axis=0}
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import imports
from .._util import norm_axis
from ..elementwise import BINARY, CAST, WHERE
from ..reduce import REDUCE
from ..shape import CONCAT
from ..shape.from_onnx import reshaped
from ..shape.index import INDEX_SELECT, SCATTER

__all__ = []


def _wrapped(call, index, sizes):
    """``index`` (int64, last axis of length len(sizes)) with negative entries counted from ``sizes``."""
    if index.type.dtype != "int64":
        index = call.emit(CAST, [index], {"dtype": "int64"})
    limits = call.const(np.asarray(sizes, dtype=np.int64), "sizes")
    negative = call.emit(BINARY["lt"], [index, call.const(np.zeros((), np.int64), "zero")])
    return call.emit(WHERE, [negative, call.emit(BINARY["add"], [index, limits]), index])


@imports("onnx", "GatherND")
def _gather_nd_from_onnx(call):
    x, index = call.input(0), call.input(1)
    if call.attr("batch_dims", 0):
        call.unsupported("batch_dims > 0")
    k = index.type.shape[-1]
    sizes = x.type.shape[:k]
    strides = np.array([math.prod(sizes[i + 1:]) for i in range(k)], dtype=np.int64)
    index = _wrapped(call, index, sizes)
    rows = call.emit(REDUCE["sum"], [call.emit(BINARY["mul"], [index, call.const(strides, "strides")])],
                     {"axes": (index.type.rank - 1,)})
    flat = reshaped(call, x, (math.prod(sizes),) + tuple(x.type.shape[k:]))
    return call.emit(INDEX_SELECT, [flat, rows], {"axis": 0})


def _scatter_mode(call) -> bool:
    reduction = call.attr("reduction", "none")
    if reduction not in ("none", "add"):
        call.unsupported(f"reduction {reduction!r} (portx scatters with none and add)")
    return reduction == "add"


@imports("onnx", "ScatterND")
def _scatter_nd_from_onnx(call):
    x, index, updates = call.input(0), call.input(1), call.input(2)
    k = index.type.shape[-1]
    n = math.prod(index.type.shape[:-1])
    rows = reshaped(call, _wrapped(call, index, x.type.shape[:k]), (n, k))
    updates = reshaped(call, updates, (n,) + tuple(x.type.shape[k:]))
    return call.emit(SCATTER, [x, rows, updates], {"accumulate": _scatter_mode(call)})


@imports("onnx", "ScatterElements")
def _scatter_elements_from_onnx(call):
    """Each update lands at its own position with the coordinate on ``axis`` taken from the index."""
    x, index, updates = call.input(0), call.input(1), call.input(2)
    rank, shape = x.type.rank, tuple(index.type.shape)
    axis = norm_axis(call.attr("axis", 0), rank)
    grids = np.indices(shape, dtype=np.int64)
    index = _wrapped(call, index, (x.type.shape[axis],))
    columns = [reshaped(call, index, shape + (1,)) if a == axis else call.const(grids[a][..., None], f"grid{a}")
               for a in range(rank)]
    coords = call.emit(CONCAT, columns, {"axis": rank}) if rank > 1 else columns[0]
    n = math.prod(shape)
    rows = reshaped(call, coords, (n, rank))
    return call.emit(SCATTER, [x, rows, reshaped(call, updates, (n,))], {"accumulate": _scatter_mode(call)})
