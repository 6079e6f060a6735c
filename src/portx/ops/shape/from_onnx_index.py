"""ONNX import rules for indexing: Slice, Gather, GatherElements.

Slice's starts/ends/axes/steps must be constants; they settle like Python slices, and a negative step
is a forward slice then a flip. Gather of a constant 2-D table on axis 0 is an embedding lookup; other
Gathers are ``index_select`` (NumPy take, negative indices wrap). GatherElements is ``gather``
(take_along_axis) after slicing the data to the index's extent on the other axes.

Example:
    Slice(%x, starts=[1], ends=[-1], axes=[-1]) on float32[2x8] -> slice(%x) {axis=1, start=1, end=7, step=1}
"""
from __future__ import annotations

import numpy as np

from .._util import norm_axis
from ..elementwise import BINARY, WHERE
from ..embedding import EMBEDDING
from ..shape.index import FLIP, GATHER, INDEX_SELECT, SELECT, SLICE, emit_slice

__all__ = []


@SLICE.imports("onnx", "Slice")
def _slice_from_onnx(call):
    x = call.input(0)
    starts, ends = call.ints(1, "starts"), call.ints(2, "ends")
    axes = call.ints(3, "axes") if call.has_input(3) else tuple(range(len(starts)))
    steps = call.ints(4, "steps") if call.has_input(4) else (1,) * len(starts)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = norm_axis(axis, x.type.rank)
        picked = range(*slice(start, end, step).indices(x.type.shape[axis]))
        if not picked:
            call.unsupported(f"slice {start}:{end}:{step} of axis {axis} is empty")
        if step > 0:
            x = emit_slice(call, x, axis, picked[0], picked[-1] + 1, step)
        else:
            x = emit_slice(call, x, axis, picked[-1], picked[0] + 1, -step)
            x = call.emit(FLIP, [x], {"axes": (axis,)}) if len(picked) > 1 else x
    return x


@INDEX_SELECT.imports("onnx", "Gather")
def _gather_from_onnx(call):
    """Gather(data, indices, axis): an embedding for a constant table, a select for a constant scalar index."""
    data, axis_attr = call.constant(0), call.attr("axis", 0)
    indices, const = call.input(1), call.constant(1)
    if data is not None and data.ndim == 2 and norm_axis(axis_attr, 2) == 0 and const is None:
        return call.emit(EMBEDDING, [call.input(0), indices])
    x = call.input(0)
    axis = norm_axis(axis_attr, x.type.rank)
    if const is not None and const.ndim == 0:
        return call.emit(SELECT, [x], {"axis": axis, "index": int(const) % x.type.shape[axis]})
    if const is not None:
        indices = call.const(np.where(const < 0, const + x.type.shape[axis], const).astype(np.int64), "indices")
    return call.emit(INDEX_SELECT, [x, indices], {"axis": axis})


@GATHER.imports("onnx", "GatherElements")
def _gather_elements_from_onnx(call):
    """take_along_axis; the data is cut to the index's extent on the other axes first."""
    x, index, const = call.input(0), call.input(1), call.constant(1)
    axis = norm_axis(call.attr("axis", 0), x.type.rank)
    if const is not None:
        index = call.const(np.where(const < 0, const + x.type.shape[axis], const).astype(np.int64), "indices")
    else:  # negative indices count from the end, which take_along_axis in torch does not do
        size = call.const(np.asarray(x.type.shape[axis], dtype=index.type.dtype), "size")
        zero = call.const(np.asarray(0, dtype=index.type.dtype), "zero")
        wrapped = call.emit(BINARY["add"], [index, size])
        index = call.emit(WHERE, [call.emit(BINARY["lt"], [index, zero]), wrapped, index])
    for i, (n, m) in enumerate(zip(x.type.shape, index.type.shape)):
        if i != axis and m != n:
            x = emit_slice(call, x, i, 0, m)
    return call.emit(GATHER, [x, index], {"axis": axis})
