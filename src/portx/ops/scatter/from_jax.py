"""JAX import rules for the general ``gather`` and ``scatter`` / ``scatter-add`` / ``-mul`` / ``-min`` / ``-max``.

Note [XLA gather as rows]: XLA's gather reads one window per index vector (the last axis of the
indices); ``GatherDimensionNumbers`` say which operand axes the vector indexes (``start_index_map``),
which window axes are dropped (``collapsed_slice_dims``, ``operand_batching_dims``) and where the kept
window axes land in the result (``offset_dims``). Every form is the same computation here: the operand
axes a window does not cover whole (indexed, batched or cut) are moved to the front and merged into
one, the linear position of every (index vector, window element) pair is computed (a constant when
the indices are known), one ``index_select`` reads them all, and a reshape and a permute put the
axes where ``offset_dims`` says. Scatters are the mirror image: the updates are laid out as rows
(N, *whole axes) and written with the IR's row scatter (``rows.scatter_rows``). Window starts are
clamped the way XLA clamps a gather's; indices are otherwise taken to be in range (JAX's
fill/drop modes for out-of-range indices are not reproduced).

Example:
    jnp.take_along_axis(x, i, axis=1)   # gather with operand_batching_dims=(0, 2)
    -> index_select(reshape(permute(%x)), %linear) {axis=0} -> reshape
"""
from __future__ import annotations

import math

import numpy as np

from .._jax import inverse, permuted
from ..elementwise import BINARY, CAST
from ..shape import EXPAND
from ..shape.index import INDEX_SELECT, SLICE
from ..scatter import SCATTER_REDUCE
from .rows import reshaped, scatter_rows

__all__ = ["general_gather", "dynamic_window"]

_SCATTERS = {"scatter": "set", "scatter-add": "sum", "scatter_add": "sum", "scatter-mul": "prod",
             "scatter_mul": "prod", "scatter-min": "amin", "scatter_min": "amin", "scatter-max": "amax",
             "scatter_max": "amax"}


def _linear(call, index_arg, shape, cut, windows, index_map, batching, batch_shape, clamp):
    """Linear positions (int64, shape batch_shape + windows of ``cut``) into the merged ``cut`` axes of an
    operand of ``shape``. ``index_map``: operand axis -> position in the index vector; ``batching``:
    operand axis -> batch axis of the indices whose iota it takes."""
    sizes = [shape[d] for d in cut]
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    nb, nw = len(batch_shape), len(cut)
    fixed = np.zeros(tuple(batch_shape) + tuple(windows[d] for d in cut), np.int64)
    known = call.const_value(index_arg)
    total = None
    for j, (d, stride) in enumerate(zip(cut, strides)):
        window = np.arange(windows[d], dtype=np.int64).reshape((1,) * (nb + j) + (-1,) + (1,) * (nw - j - 1))
        fixed = fixed + window * stride
        if d in batching:
            b = batching[d]
            fixed = fixed + np.arange(batch_shape[b], dtype=np.int64).reshape(
                (1,) * b + (-1,) + (1,) * (nb + nw - b - 1)) * stride
        if d not in index_map:
            continue
        limit = shape[d] - windows[d]
        if known is not None:
            start = np.asarray(known).astype(np.int64)[..., index_map[d]]
            start = np.clip(start, 0, limit) if clamp else start
            fixed = fixed + start.reshape(tuple(batch_shape) + (1,) * nw) * stride
            continue
        column = call.emit(SLICE, [call.input(index_arg)], {"axis": nb, "start": index_map[d],
                                                             "end": index_map[d] + 1, "step": 1})
        column = call.emit(CAST, [column], {"dtype": "int64"}) if column.type.dtype != "int64" else column
        if clamp and windows[d] > 1:
            column = call.emit(BINARY["maximum"], [column, call.const(np.array(0, np.int64), "zero")])
            column = call.emit(BINARY["minimum"], [column, call.const(np.array(limit, np.int64), "limit")])
        column = reshaped(call, column, tuple(batch_shape) + (1,) * nw)
        if stride != 1:
            column = call.emit(BINARY["mul"], [column, call.const(np.array(stride, np.int64), "stride")])
        total = column if total is None else call.emit(BINARY["add"], [total, column])
    if total is None:
        return call.const(fixed, "positions")
    return call.emit(BINARY["add"], [total, call.const(fixed, "positions")]) if fixed.any() else total


def _merged(call, x, cut):
    """x with the ``cut`` axes first and merged into one: (merged x, permutation, whole axes)."""
    whole = [d for d in range(x.type.rank) if d not in cut]
    perm = tuple(cut) + tuple(whole)
    xt = permuted(call, x, perm)
    rest = tuple(x.type.shape[d] for d in whole)
    return reshaped(call, xt, (math.prod(x.type.shape[d] for d in cut),) + rest), perm, whole


def general_gather(call):
    """Any XLA gather (Note [XLA gather as rows]), the index vector on the indices' last axis."""
    dn, sizes = call.params["dimension_numbers"], tuple(int(s) for s in call.params["slice_sizes"])
    x, shape = call.input(0), tuple(call.in_type(0).shape)
    batch_shape = tuple(call.in_type(1).shape[:-1])
    index_map = {int(d): p for p, d in enumerate(dn.start_index_map)}
    batching = {int(d): int(b) for d, b in zip(getattr(dn, "operand_batching_dims", ()),
                                              getattr(dn, "start_indices_batching_dims", ()))}
    dropped = set(int(d) for d in dn.collapsed_slice_dims) | set(batching)
    cut = [d for d in range(len(shape)) if d in index_map or d in batching or sizes[d] != shape[d]]
    if not cut:
        whole = list(range(len(shape)))
        y = reshaped(call, x, (1,) * len(batch_shape) + shape)
        y = call.emit(EXPAND, [y], {"shape": batch_shape + shape}) if batch_shape else y
    else:
        merged, _, whole = _merged(call, x, cut)
        positions = _linear(call, 1, shape, cut, dict(enumerate(sizes)), index_map, batching, batch_shape, True)
        y = call.emit(INDEX_SELECT, [merged, positions], {"axis": 0})
    kept = [d for d in cut if d not in dropped]
    y = reshaped(call, y, batch_shape + tuple(sizes[d] for d in kept) + tuple(shape[d] for d in whole))
    layout = kept + whole  # operand axes in y's order after the batch axes
    offsets, order, batch = sorted(layout), [], iter(range(len(batch_shape)))
    offset_dims = [int(o) for o in dn.offset_dims]
    for o in range(len(batch_shape) + len(offsets)):
        order.append(len(batch_shape) + layout.index(offsets[offset_dims.index(o)]) if o in offset_dims
                     else next(batch))
    return permuted(call, y, order)


@SCATTER_REDUCE.imports("jax", *_SCATTERS)
def _scatter_from_jax(call):
    """Any XLA scatter: windows of the updates written (or combined) at the index vectors' positions."""
    dn = call.params["dimension_numbers"]
    x, shape = call.input(0), tuple(call.in_type(0).shape)
    updates, up_shape = call.input(2), tuple(call.in_type(2).shape)
    window_dims = [int(d) for d in dn.update_window_dims]
    scatter_dims = [d for d in range(len(up_shape)) if d not in window_dims]
    batch_shape = tuple(up_shape[d] for d in scatter_dims)
    index_map = {int(d): p for p, d in enumerate(dn.scatter_dims_to_operand_dims)}
    batching = {int(d): int(b) for d, b in zip(getattr(dn, "operand_batching_dims", ()),
                                              getattr(dn, "scatter_indices_batching_dims", ()))}
    inserted = set(int(d) for d in dn.inserted_window_dims) | set(batching)
    windowed = [d for d in range(len(shape)) if d not in inserted]
    windows = {d: 1 for d in inserted} | {d: up_shape[w] for d, w in zip(windowed, window_dims)}
    cut = [d for d in range(len(shape)) if d in index_map or d in batching or windows[d] != shape[d]]
    if not cut:
        call.unsupported("scatter that overwrites the whole operand")
    merged, perm, whole = _merged(call, x, cut)
    window_of = dict(zip(windowed, window_dims))
    up_perm = scatter_dims + [window_of[d] for d in cut if d in window_of] + [window_of[d] for d in whole]
    rows_shape = batch_shape + tuple(windows[d] for d in cut)
    n = math.prod(rows_shape)
    ups = reshaped(call, permuted(call, updates, up_perm), (n,) + tuple(shape[d] for d in whole))
    positions = _linear(call, 1, shape, cut, windows, index_map, batching, batch_shape, False)
    rows = reshaped(call, positions, (n, 1))
    y = scatter_rows(call, merged, rows, ups, _SCATTERS[call.primitive])
    y = reshaped(call, y, tuple(shape[d] for d in perm))
    return permuted(call, y, inverse(perm))



def dynamic_window(call):
    """``dynamic_slice`` / ``dynamic_update_slice`` with start indices computed at run time: the window's
    linear positions in the flattened operand (XLA's clamped starts times the strides, plus a constant grid)
    gathered, or scattered into."""
    x, shape = call.input(0), tuple(call.in_type(0).shape)
    update = call.primitive == "dynamic_update_slice"
    window = tuple(call.in_type(1).shape) if update else tuple(int(s) for s in call.params["slice_sizes"])
    first = 2 if update else 1
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    grid = np.zeros(window, np.int64)
    for axis, stride in enumerate(strides):
        grid = grid + (np.arange(window[axis], dtype=np.int64) * stride).reshape(
            (1,) * axis + (-1,) + (1,) * (len(shape) - axis - 1))
    positions = call.const(grid, "window")
    for axis, stride in enumerate(strides):
        start = reshaped(call, call.input(first + axis), ())
        start = start if start.type.dtype == "int64" else call.emit(CAST, [start], {"dtype": "int64"})
        start = call.emit(BINARY["maximum"], [start, call.const(np.array(0, np.int64), "zero")])
        start = call.emit(BINARY["minimum"], [start, call.const(np.array(shape[axis] - window[axis], np.int64),
                                                                "limit")])
        if stride != 1:
            start = call.emit(BINARY["mul"], [start, call.const(np.array(stride, np.int64), "stride")])
        positions = call.emit(BINARY["add"], [positions, start])
    flat = reshaped(call, x, (math.prod(shape),))
    if not update:
        return call.emit(INDEX_SELECT, [flat, positions], {"axis": 0})
    n = math.prod(window)
    y = scatter_rows(call, flat, reshaped(call, positions, (n, 1)), reshaped(call, call.input(1), (n,)), "set")
    return reshaped(call, y, shape)
