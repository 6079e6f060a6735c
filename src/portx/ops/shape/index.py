"""Indexing and reordering: slice, select, index_select (take), gather (take_along_axis), tile, flip, roll.

Note [torch slice bounds]: ``aten::slice`` accepts None, negative and out-of-range bounds and
clamps them (``x[-10:100]`` is the whole axis). The import rule (from_torch.py) settles them once
with ``torch_slice_bounds``, the way ``at::slice`` does, so the IR ``slice`` only holds
``0 <= start <= end <= size`` and ``step >= 1``.

This module declares the OpDefs with their shape rules and NumPy references, and the helpers several
rule modules share: ``emit_slice`` (import rules) and ``index_text`` / ``subscript_text`` (Keras code).

Example IR:
    %y: float32[1x2x4] = slice(%x) {axis=1, start=1, end=4, step=2}
    %z: float32[1x3x4] = index_select(%x, %idx) {axis=1}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import kind, same_type

__all__ = ["SLICE", "SELECT", "INDEX_SELECT", "GATHER", "SCATTER", "TILE", "FLIP", "ROLL", "emit_slice", "index_text",
           "subscript_text", "torch_slice_bounds"]


def index_text(axis: int, item: str) -> str:
    """Subscript text that applies ``item`` on ``axis`` only: ``index_text(1, "2")`` -> ``"[:, 2]"``."""
    return subscript_text([":"] * axis + [item])


def subscript_text(items) -> str:
    """``[a, b]`` from item texts; a lone slice gets ``, ...`` since KerasTensors only take tuple keys."""
    items = list(items) + (["..."] if len(items) == 1 and ":" in items[0] else [])
    return "[" + ", ".join(items) + "]"


def torch_slice_bounds(size: int, start, end) -> tuple:
    """Clamp torch slice bounds into ``0 <= start <= end <= size`` (Note [torch slice bounds]).

    Example: ``torch_slice_bounds(5, -10, 100)`` -> ``(0, 5)``; ``torch_slice_bounds(5, 4, 2)`` -> ``(4, 4)``.
    """
    start = 0 if start is None else start
    end = size if end is None else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    return start, min(max(end, start), size)


SLICE = OpDef("slice", ("x",), {"axis": REQUIRED, "start": REQUIRED, "end": REQUIRED, "step": 1}, family="shape",
              doc="x[start:end:step] on one axis, with settled bounds 0 <= start <= end <= size.")


@SLICE.infer
def _slice_type(x, *, axis, start, end, step):
    size = x.shape[axis]
    if not (0 <= start <= end <= size and step >= 1):
        raise ValueError(f"slice {start}:{end}:{step} is not settled for axis {axis} of size {size}")
    return x.with_shape(x.shape[:axis] + (-(-(end - start) // step),) + x.shape[axis + 1:])


@SLICE.reference
def _slice_numpy(x, *, axis, start, end, step):
    return x[(slice(None),) * axis + (slice(start, end, step),)]


def emit_slice(call, x, axis, start, end, step=1):
    """Emit a settled slice, or give back ``x`` when it would keep the whole axis."""
    if (start, end, step) == (0, x.type.shape[axis], 1):
        return x
    return call.emit(SLICE, [x], {"axis": axis, "start": start, "end": end, "step": step})


SELECT = OpDef("select", ("x",), {"axis": REQUIRED, "index": REQUIRED}, family="shape",
               doc="x[..., index, ...] on one axis, which is dropped; 0 <= index < size.")


@SELECT.infer
def _select_type(x, *, axis, index):
    if not 0 <= index < x.shape[axis]:
        raise ValueError(f"select index {index} is out of range for axis {axis} of size {x.shape[axis]}")
    return x.with_shape(x.shape[:axis] + x.shape[axis + 1:])


@SELECT.reference
def _select_numpy(x, *, axis, index):
    return np.take(x, index, axis=axis)


INDEX_SELECT = OpDef("index_select", ("x", "index"), {"axis": REQUIRED}, family="shape",
                     doc="numpy.take along axis: the index's dims replace that axis; negative indices wrap.")


@INDEX_SELECT.infer
def _index_select_type(x, index, *, axis):
    if kind(index.dtype) != 1:
        raise ValueError(f"index_select needs an integer index, got {index.dtype}")
    return x.with_shape(x.shape[:axis] + index.shape + x.shape[axis + 1:])


@INDEX_SELECT.reference
def _index_select_numpy(x, index, *, axis):
    return np.take(x, index, axis=axis)


GATHER = OpDef("gather", ("x", "index"), {"axis": REQUIRED}, family="shape",
               doc="numpy.take_along_axis; index has x's shape except on axis.")


@GATHER.infer
def _gather_type(x, index, *, axis):
    if kind(index.dtype) != 1 or index.rank != x.rank or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, index.shape)) if i != axis):
        raise ValueError(f"gather index {index} does not fit {x} on axis {axis}")
    return x.with_shape(index.shape)


@GATHER.reference
def _gather_numpy(x, index, *, axis):
    return np.take_along_axis(x, index, axis=axis)


SCATTER = OpDef("scatter", ("x", "indices", "updates"), {"accumulate": False}, family="shape",
                doc="x with rows written at coordinates: indices (N, k) into x's first k axes, updates (N, *rest); "
                    "accumulate adds (duplicates add up), else writes (torch index_put / keras scatter_update).")


@SCATTER.infer
def _scatter_type(x, indices, updates, *, accumulate):
    k = indices.shape[-1] if indices.rank == 2 else -1
    if kind(indices.dtype) != 1 or k < 1 or k > x.rank or updates.shape != (indices.shape[0],) + x.shape[k:] \
            or updates.dtype != x.dtype:
        raise ValueError(f"scatter of {updates} at {indices} does not fit {x}")
    return x


@SCATTER.reference
def _scatter_numpy(x, indices, updates, *, accumulate):
    out, where = x.copy(), tuple(indices.T)
    if accumulate:
        np.add.at(out, where, updates)
    else:
        out[where] = updates
    return out


TILE = OpDef("tile", ("x",), {"reps": REQUIRED}, family="shape", doc="numpy.tile (torch repeat / tile).")


@TILE.infer
def _tile_type(x, *, reps):
    rank = max(len(reps), x.rank)
    shape = (1,) * (rank - x.rank) + x.shape
    reps = (1,) * (rank - len(reps)) + tuple(reps)
    return x.with_shape(tuple(d * r for d, r in zip(shape, reps)))


@TILE.reference
def _tile_numpy(x, *, reps):
    return np.tile(x, reps)


FLIP = OpDef("flip", ("x",), {"axes": REQUIRED}, family="shape", doc="Reverse the order along each axis.")
FLIP.infer(same_type)


@FLIP.reference
def _flip_numpy(x, *, axes):
    return np.flip(x, axis=tuple(axes))


ROLL = OpDef("roll", ("x",), {"shifts": REQUIRED, "axes": None}, family="shape",
             doc="numpy.roll; axes None rolls the flattened tensor.")
ROLL.infer(same_type)


@ROLL.reference
def _roll_numpy(x, *, shifts, axes):
    return np.roll(x, tuple(shifts) if axes is not None else shifts[0], axis=None if axes is None else tuple(axes))
