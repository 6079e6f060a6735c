"""keras.ops shape and indexing operations in functional graphs (reshape, transpose, x[...], take, split) -> IR.

Target shapes are computed from the input's static shape with NumPy's own rules on a zero-size
view (``np.broadcast_to``), never from the KerasTensor, whose batch axis is unknown: ``reshape(x,
(-1,))`` must absorb the batch. Static ``x[...]`` keys (ints, slices with any step, None, Ellipsis,
one integer list) become slice / flip / select / index_select / reshape (so ``ops.GetItem`` hangs on
no single OpDef); a tensor key is refused.

Example:
    >>> keras.ops.transpose(x, (0, 2, 1))   # recorded as ops.Transpose -> permute{perm=(0, 2, 1)}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from .._util import kind, norm_axes, norm_axis
from ..elementwise.from_keras_ops import cast_to, out_dtype
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, INDEX_SELECT, ROLL, SELECT, SLICE, TILE

__all__ = ["shape_after", "reshape_to", "permute_to"]


def shape_after(x, fn) -> tuple:
    """Shape of ``fn(array shaped like x)``, computed on a zero-size view: ``shape_after(x, np.ravel)``."""
    return tuple(int(d) for d in np.shape(fn(np.broadcast_to(np.empty((), bool), x.type.shape))))


def reshape_to(call, x, shape):
    """``x`` reshaped to ``shape`` (no node when unchanged)."""
    shape = tuple(int(d) for d in shape)
    return x if shape == tuple(x.type.shape) else call.emit(RESHAPE, [x], {"shape": shape})


def permute_to(call, x, perm):
    """``x`` permuted by ``perm`` (no node for the identity)."""
    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(len(perm))) else call.emit(PERMUTE, [x], {"perm": perm})


@RESHAPE.imports("keras", "ops.Reshape")
def _reshape_from_keras(call):
    x = call.inputs[0]
    return reshape_to(call, x, shape_after(x, lambda a: a.reshape(tuple(call.layer.newshape))))


@RESHAPE.imports("keras", "ops.ExpandDims")
def _expand_dims_from_keras(call):
    x = call.inputs[0]
    return reshape_to(call, x, shape_after(x, lambda a: np.expand_dims(a, call.layer.axis)))


@RESHAPE.imports("keras", "ops.Squeeze")
def _squeeze_from_keras(call):
    x = call.inputs[0]
    axis = call.layer.axis
    return reshape_to(call, x, shape_after(x, lambda a: np.squeeze(a, None if axis is None else axis)))


@RESHAPE.imports("keras", "ops.Ravel")
def _ravel_from_keras(call):
    x = call.inputs[0]
    return reshape_to(call, x, (int(np.prod(x.type.shape)),))


@PERMUTE.imports("keras", "ops.Transpose")
def _transpose_from_keras(call):
    x = call.inputs[0]
    axes = call.layer.axes
    perm = tuple(reversed(range(x.type.rank))) if axes is None else tuple(norm_axis(a, x.type.rank) for a in axes)
    return permute_to(call, x, perm)


@PERMUTE.imports("keras", "ops.Swapaxes")
def _swapaxes_from_keras(call):
    x = call.inputs[0]
    perm = list(range(x.type.rank))
    a, b = norm_axis(call.layer.axis1, x.type.rank), norm_axis(call.layer.axis2, x.type.rank)
    perm[a], perm[b] = perm[b], perm[a]
    return permute_to(call, x, perm)


@PERMUTE.imports("keras", "ops.Moveaxis")
def _moveaxis_from_keras(call):
    x, src, dst = call.inputs[0], call.layer.source, call.layer.destination
    return permute_to(call, x, _moved_axes(x.type.rank, np.atleast_1d(src), np.atleast_1d(dst)))


def _moved_axes(rank, source, destination) -> tuple:
    """numpy.moveaxis as a permutation: ``_moved_axes(3, [0], [2])`` -> ``(1, 2, 0)``."""
    source = [norm_axis(int(s), rank) for s in source]
    destination = [norm_axis(int(d), rank) for d in destination]
    order = [n for n in range(rank) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return tuple(order)


@CONCAT.imports("keras", "ops.Concatenate")
def _concatenate_from_keras(call):
    dtype = out_dtype(call)
    xs = [cast_to(call, x, dtype) for x in call.inputs]
    axis = call.layer.axis
    if axis is None:
        xs = [reshape_to(call, x, (int(np.prod(x.type.shape)),)) for x in xs]
        axis = 0
    return xs[0] if len(xs) == 1 else call.emit(CONCAT, xs, {"axis": norm_axis(axis, xs[0].type.rank)})


@STACK.imports("keras", "ops.Stack")
def _stack_from_keras(call):
    dtype = out_dtype(call)
    xs = [cast_to(call, x, dtype) for x in call.inputs]
    return call.emit(STACK, xs, {"axis": norm_axis(call.layer.axis, xs[0].type.rank + 1)})


@SPLIT.imports("keras", "ops.Split")
def _split_from_keras(call):
    x = call.inputs[0]
    axis = norm_axis(call.layer.axis, x.type.rank)
    pieces = np.array_split(np.arange(x.type.shape[axis]), call.layer.indices_or_sections)
    sizes = tuple(len(p) for p in pieces)
    return [x] if len(sizes) == 1 else call.emit(SPLIT, [x], {"sizes": sizes, "axis": axis})


@EXPAND.imports("keras", "ops.BroadcastTo")
def _broadcast_to_from_keras(call):
    x = call.inputs[0]
    shape = call.out_shape()
    return x if shape == tuple(x.type.shape) else call.emit(EXPAND, [x], {"shape": shape})


@TILE.imports("keras", "ops.Tile")
def _tile_from_keras(call):
    reps = tuple(int(r) for r in np.atleast_1d(call.layer.repeats))
    x = call.inputs[0]
    return x if len(reps) <= x.type.rank and all(r == 1 for r in reps) else call.emit(TILE, [x], {"reps": reps})


@INDEX_SELECT.imports("keras", "ops.Repeat")
def _repeat_from_keras(call):
    """numpy.repeat with static repeats: a stored index along the axis (flattened first for axis None)."""
    x, axis, repeats = call.inputs[0], call.layer.axis, call.layer.repeats
    if hasattr(repeats, "type"):
        call.unsupported("repeat with a tensor of repeats (data-dependent size)")
    if axis is None:
        x, axis = reshape_to(call, x, (int(np.prod(x.type.shape)),)), 0
    axis = norm_axis(axis, x.type.rank)
    index = np.repeat(np.arange(x.type.shape[axis]), repeats)
    return call.emit(INDEX_SELECT, [x, call.param(index.astype(np.int64), "repeat_index")], {"axis": axis})


@FLIP.imports("keras", "ops.Flip")
def _flip_from_keras(call):
    x = call.inputs[0]
    return call.emit(FLIP, [x], {"axes": norm_axes(call.layer.axis, x.type.rank)})


@ROLL.imports("keras", "ops.Roll")
def _roll_from_keras(call):
    x, shift, axis = call.inputs[0], call.layer.shift, call.layer.axis
    shifts = tuple(int(s) for s in np.atleast_1d(shift))
    axes = None if axis is None else tuple(norm_axis(int(a), x.type.rank) for a in np.atleast_1d(axis))
    if axes is not None and len(shifts) != len(axes):
        shifts = shifts * len(axes)
    return call.emit(ROLL, [x], {"shifts": shifts, "axes": axes})


@INDEX_SELECT.imports("keras", "ops.Take")
def _take_from_keras(call):
    x, indices = call.operands(2)
    axis = call.layer.axis
    if axis is None:
        x, axis = reshape_to(call, x, (int(np.prod(x.type.shape)),)), 0
    axis = norm_axis(axis, x.type.rank)
    if not hasattr(indices, "type"):
        table = np.asarray(indices)
        if kind(str(table.dtype)) != 1:
            call.unsupported(f"take with {table.dtype} indices")
        indices = call.param(np.where(table < 0, table + x.type.shape[axis], table).astype(np.int64), "indices")
    elif kind(indices.type.dtype) != 1:
        indices = cast_to(call, indices, "int32")
    return call.emit(INDEX_SELECT, [x, indices], {"axis": axis})


def _expand_ellipsis(items, rank):
    """The key with ``...`` replaced by full slices (one is appended when absent)."""
    consuming = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise ValueError("an index can only have a single ellipsis")
    if Ellipsis not in items:
        items = items + [Ellipsis]
    at = next(i for i, item in enumerate(items) if item is Ellipsis)
    return items[:at] + [slice(None)] * (rank - consuming) + items[at + 1:]


def _slice_axis(call, x, axis, item):
    """``x[..., item, ...]`` for a Python slice on ``axis`` (negative steps flip first)."""
    size = x.type.shape[axis]
    start, stop, step = item.indices(size)
    if step < 0:
        x = call.emit(FLIP, [x], {"axes": (axis,)})
        start, stop, step = size - 1 - start, size - 1 - stop, -step
    end = max(min(stop, size), start)
    if (start, end, step) == (0, size, 1):
        return x
    return call.emit(SLICE, [x], {"axis": axis, "start": start, "end": end, "step": step})


@imports("keras", "ops.GetItem")
def _get_item_from_keras(call):
    x, key = call.operands(2)
    items = list(key) if isinstance(key, tuple) else [key]
    if any(hasattr(i, "type") for i in items):
        call.unsupported("indexing with a tensor (use keras.ops.take with a static index)")
    items = _expand_ellipsis(items, x.type.rank)
    axis, selects, lists, kept = 0, [], [], []  # kept: (axis or None for a new axis) per output dim
    for item in items:
        if item is None:
            kept.append(None)
            continue
        if isinstance(item, slice):
            x = _slice_axis(call, x, axis, item)
            kept.append(axis)
        elif isinstance(item, (int, np.integer)):
            selects.append((axis, norm_axis(int(item), x.type.shape[axis])))
        else:
            lists.append((axis, np.asarray(item)))
            kept.append(axis)
        axis += 1
    if len(lists) > 1 or any(kind(str(a.dtype)) != 1 or a.ndim != 1 for _, a in lists) or (lists and selects):
        call.unsupported("advanced indexing beyond one 1-d integer list")
    for axis, table in lists:
        table = np.where(table < 0, table + x.type.shape[axis], table).astype(np.int64)
        x = call.emit(INDEX_SELECT, [x, call.param(table, "index")], {"axis": axis})
    shape = tuple(1 if a is None else x.type.shape[a] for a in kept)
    for axis, index in sorted(selects, reverse=True):
        x = call.emit(SELECT, [x], {"axis": axis, "index": index})
    return reshape_to(call, x, shape)
