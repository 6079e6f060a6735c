"""ATen import rules for the shape and indexing ops: views, permutes, expand, cat/stack, split, slices and gathers.

Note [recorded target shapes]: torch records the static type of every output, so the import
rules for view/flatten/unflatten/squeeze/unsqueeze/expand take the target shape from there
instead of re-deriving torch's rules (``-1``, squeezing a dim that is not 1, negative dims).
The driver checks each result against that type anyway; an op that leaves the input unchanged
imports as the input itself and adds no node. Slice bounds are settled once here with
``torch_slice_bounds`` (Note [torch slice bounds] in index.py).

Example:
    aten::flatten(%x, 1) on float32[2x3x4] -> reshape(%x) {shape=(2, 12)}
    aten::slice(%x, 1, -10, 100) -> %x (the whole axis: no node)
"""
from __future__ import annotations

import math

import numpy as np

from .._util import kind, norm_axis
from ..elementwise import BINARY, BITCAST, CAST, WHERE
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SCATTER, SELECT, SLICE, TILE, emit_slice, torch_slice_bounds
from ..scatter.rows import masked_put

__all__ = []


def _recorded_types(call) -> list:
    """Every output type torch recorded for the call (multi-output ops such as split)."""
    types = []
    while True:
        try:
            types.append(call.out_type(len(types)))
        except IndexError:
            return types


@RESHAPE.imports("torch", "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::flatten", "aten::unflatten",
                 "aten::squeeze", "aten::unsqueeze")
def _reshape_from_aten(call):
    """All reshape-likes become one static reshape (Note [recorded target shapes]); ``x.view(dtype)`` is a bitcast."""
    x = call.arg("self", call.arg("input"))
    if call.out_type().dtype != x.type.dtype:  # aten::view.dtype: the same bits as another dtype
        return call.emit(BITCAST, [x], {"dtype": call.out_type().dtype})
    shape = call.out_type().shape
    return x if shape == x.type.shape else call.emit(RESHAPE, [x], {"shape": shape})


def _aten_perm(call, rank) -> tuple:
    """The permutation behind permute / transpose / t / numpy_T / swapaxes / mT."""
    name = call.node.target._schema.name
    perm = list(range(rank))
    if name == "aten::permute":
        return tuple(norm_axis(d, rank) for d in call.arg("dims"))
    if name in ("aten::numpy_T", "aten::t"):
        return tuple(reversed(perm))
    if name == "aten::mT":
        a, b = rank - 2, rank - 1
    elif name == "aten::transpose":
        a, b = norm_axis(call.arg("dim0"), rank), norm_axis(call.arg("dim1"), rank)
    else:  # swapaxes / swapdims
        a = norm_axis(call.arg("axis0", call.arg("dim0")), rank)
        b = norm_axis(call.arg("axis1", call.arg("dim1")), rank)
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


@PERMUTE.imports("torch", "aten::permute", "aten::transpose", "aten::t", "aten::numpy_T", "aten::mT",
                 "aten::swapaxes", "aten::swapdims")
def _permute_from_aten(call):
    x = call.arg("self")
    perm = _aten_perm(call, x.type.rank)
    return x if perm == tuple(range(x.type.rank)) else call.emit(PERMUTE, [x], {"perm": perm})


@EXPAND.imports("torch", "aten::expand", "aten::expand_as", "aten::broadcast_to")
def _expand_from_aten(call):
    """The target comes from torch's record, with -1 resolved (Note [recorded target shapes])."""
    x = call.arg("self")
    shape = call.out_type().shape
    return x if shape == x.type.shape else call.emit(EXPAND, [x], {"shape": shape})


def _joined_inputs(call, out_dtype):
    """The tensors of cat/stack, cast to torch's promoted dtype."""
    return [x if x.type.dtype == out_dtype else call.emit(CAST, [x], {"dtype": out_dtype})
            for x in call.arg("tensors")]


@CONCAT.imports("torch", "aten::cat", "aten::concat", "aten::concatenate")
def _concat_from_aten(call):
    """torch.cat promotes dtypes and skips legacy empty ``(0,)`` tensors; the IR op does neither."""
    out = call.out_type()
    xs = [x for x in _joined_inputs(call, out.dtype) if x.type.shape != (0,) or out.rank == 1]
    if not xs:
        call.unsupported("cat of only empty tensors")
    axis = norm_axis(call.arg("dim", 0), out.rank)
    return xs[0] if len(xs) == 1 else call.emit(CONCAT, xs, {"axis": axis})


@STACK.imports("torch", "aten::stack")
def _stack_from_aten(call):
    out = call.out_type()
    return call.emit(STACK, _joined_inputs(call, out.dtype), {"axis": norm_axis(call.arg("dim", 0), out.rank)})


@SPLIT.imports("torch", "aten::split", "aten::split_with_sizes", "aten::unsafe_split",
               "aten::unsafe_split_with_sizes", "aten::chunk")
def _split_from_aten(call):
    """Piece sizes are read from torch's recorded outputs, which settles the ragged last chunk."""
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    sizes = tuple(t.shape[axis] for t in _recorded_types(call))
    if len(sizes) == 1:
        return [x]
    return call.emit(SPLIT, [x], {"sizes": sizes, "axis": axis})


@SPLIT.imports("torch", "aten::unbind", "aten::unbind_copy")
def _unbind_from_aten(call):
    """unbind = split into size-1 pieces, each reshaped to drop the axis."""
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    n = x.type.shape[axis]
    pieces = [x] if n == 1 else call.emit(SPLIT, [x], {"sizes": (1,) * n, "axis": axis})
    shape = x.type.shape[:axis] + x.type.shape[axis + 1:]
    return [call.emit(RESHAPE, [p], {"shape": shape}) for p in pieces]


# -- indexing --------------------------------------------------------------------------------------
@SLICE.imports("torch", "aten::slice")
def _slice_from_aten(call):
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    step = call.arg("step", 1)
    if step < 1:
        call.unsupported(f"slice step {step}: torch needs a positive step")
    start, end = torch_slice_bounds(x.type.shape[axis], call.arg("start"), call.arg("end"))
    return emit_slice(call, x, axis, start, end, step)


@SLICE.imports("torch", "aten::narrow")
def _narrow_from_aten(call):
    x, start = call.arg("self"), call.arg("start")
    if hasattr(start, "type"):
        call.unsupported("narrow with a tensor start (data-dependent offset)")
    axis = norm_axis(call.arg("dim"), x.type.rank)
    start = start + x.type.shape[axis] if start < 0 else start
    return emit_slice(call, x, axis, start, start + call.arg("length"))


@SELECT.imports("torch", "aten::select")
def _select_from_aten(call):
    x = call.arg("self")
    axis = norm_axis(call.arg("dim"), x.type.rank)
    return call.emit(SELECT, [x], {"axis": axis, "index": norm_axis(call.arg("index"), x.type.shape[axis])})


@INDEX_SELECT.imports("torch", "aten::index_select")
def _index_select_from_aten(call):
    x, index = call.arg("self"), call.arg("index")
    if x.type.rank == 0:  # a 0-d tensor has one element, which index 0 (the only valid one) reads
        return x
    if index.type.rank == 0:  # torch keeps the axis for a 0-d index here, numpy.take would drop it
        index = call.emit(RESHAPE, [index], {"shape": (1,)})
    return call.emit(INDEX_SELECT, [x, index], {"axis": norm_axis(call.arg("dim"), x.type.rank)})


@INDEX_SELECT.imports("torch", "aten::index")
def _index_from_aten(call):
    """``x[:, idx]`` and ``x[i, j]``: integer index tensors on any axes (NumPy's advanced indexing).

    Several index tensors broadcast together; their axes are merged into one (moved to the front
    first when they are not adjacent, where NumPy puts the broadcast dims) and one ``index_select``
    reads the linear index ``i * size_j + j``, each index wrapped once where it may be negative.
    Boolean masks are refused: their result size depends on the data.
    """
    x, indices = call.arg("self"), call.arg("indices")
    present = [(axis, v) for axis, v in enumerate(indices) if v is not None]
    if not present:
        return x
    if any(kind(v.type.dtype) != 1 or v.type.dtype == "uint8" for _, v in present):
        call.unsupported("boolean mask indexing (its result size depends on the data)")
    if len(present) == 1:
        return call.emit(INDEX_SELECT, [x, present[0][1]], {"axis": present[0][0]})
    axes, sizes = [a for a, _ in present], [x.type.shape[a] for a, _ in present]
    start = axes[0]
    if axes != list(range(start, start + len(axes))):
        x = call.emit(PERMUTE, [x], {"perm": tuple(axes + [a for a in range(x.type.rank) if a not in axes])})
        start = 0
    shape = x.type.shape
    x = call.emit(RESHAPE, [x], {"shape": shape[:start] + (math.prod(sizes),) + shape[start + len(axes):]})
    linear, stride = None, math.prod(sizes)
    for (_, index), size in zip(present, sizes):
        stride //= size
        term = _wrapped(call, index, size)
        if stride != 1:
            term = call.emit(BINARY["mul"], [term, call.const(np.array(stride, index.type.dtype), "stride")])
        linear = term if linear is None else call.emit(BINARY["add"], [linear, term])
    return call.emit(INDEX_SELECT, [x, linear], {"axis": start})


@SCATTER.imports("torch", "aten::index_put", "aten::_unsafe_index_put")
def _index_put_from_aten(call):
    """``x[i, j] = v`` / ``x.index_put((i, j), v, accumulate)``: the indexed axes moved to the front, the
    broadcast indices as (N, k) coordinates, the values laid out as NumPy's ``x[i, j]`` then as (N, *rest)."""
    x, indices, values = call.arg("self"), call.arg("indices"), call.arg("values")
    present = [(axis, v) for axis, v in enumerate(indices) if v is not None]
    if not present or any(kind(v.type.dtype) != 1 or v.type.dtype == "uint8" for _, v in present):
        return masked_put(call, x, indices, values, bool(call.arg("accumulate", False)))
    axes = [a for a, _ in present]
    rest = [a for a in range(x.type.rank) if a not in axes]
    order = tuple(axes + rest)
    xt = x if order == tuple(range(x.type.rank)) else call.emit(PERMUTE, [x], {"perm": order})
    batch = tuple(np.broadcast_shapes(*[v.type.shape for _, v in present]))
    n = math.prod(batch)
    columns = []
    for axis, index in present:
        index = _wrapped(call, index, x.type.shape[axis])
        index = index if index.type.shape == batch else call.emit(EXPAND, [index], {"shape": batch})
        columns.append(call.emit(RESHAPE, [index], {"shape": (n, 1)}))
    coords = columns[0] if len(columns) == 1 else call.emit(CONCAT, columns, {"axis": 1})
    rest_shape = tuple(x.type.shape[a] for a in rest)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    before = axes[0] if adjacent else 0  # NumPy keeps adjacent indexed axes in place, else puts them first
    layout = rest_shape[:before] + batch + rest_shape[before:]
    if values.type.dtype != x.type.dtype:
        values = call.emit(CAST, [values], {"dtype": x.type.dtype})
    if values.type.shape != layout:
        values = call.emit(EXPAND, [values], {"shape": layout})
    if before:
        r = len(batch)
        perm = tuple(range(before, before + r)) + tuple(range(before)) + tuple(range(before + r, len(layout)))
        values = call.emit(PERMUTE, [values], {"perm": perm})
    values = call.emit(RESHAPE, [values], {"shape": (n,) + rest_shape})
    y = call.emit(SCATTER, [xt, coords, values], {"accumulate": bool(call.arg("accumulate", False))})
    if xt is x:
        return y
    return call.emit(PERMUTE, [y], {"perm": tuple(int(i) for i in np.argsort(order))})


def _wrapped(call, index, size):
    """``index`` with negative entries counted from the end of an axis of ``size`` (folded for a constant)."""
    known = call.constant(index)
    if known is not None:
        return index if (known >= 0).all() else call.const(np.where(known < 0, known + size, known), "wrapped")
    size_const = call.const(np.array(size, index.type.dtype), "size")
    negative = call.emit(BINARY["lt"], [index, call.const(np.array(0, index.type.dtype), "zero")])
    return call.emit(WHERE, [negative, call.emit(BINARY["add"], [index, size_const]), index])


@GATHER.imports("torch", "aten::gather")
def _gather_from_aten(call):
    """torch allows an index smaller than x on the other axes; those axes are sliced to fit first."""
    x, index = call.arg("self"), call.arg("index")
    if x.type.rank == 0:  # one element, read by every (zero) index
        return call.emit(EXPAND, [x], {"shape": index.type.shape}) if index.type.rank else x
    axis = norm_axis(call.arg("dim"), x.type.rank)
    for i, (size, want) in enumerate(zip(x.type.shape, index.type.shape)):
        if i != axis and want != size:
            x = emit_slice(call, x, i, 0, want)
    return call.emit(GATHER, [x, index], {"axis": axis})


@TILE.imports("torch", "aten::repeat", "aten::tile")
def _tile_from_aten(call):
    x = call.arg("self")
    reps = tuple(call.arg("repeats", call.arg("dims")))
    if len(reps) <= x.type.rank and all(r == 1 for r in reps):
        return x
    return call.emit(TILE, [x], {"reps": reps})


@FLIP.imports("torch", "aten::flip")
def _flip_from_aten(call):
    x = call.arg("self")
    axes = tuple(norm_axis(d, x.type.rank) for d in call.arg("dims"))
    return x if not axes else call.emit(FLIP, [x], {"axes": axes})


@ROLL.imports("torch", "aten::roll")
def _roll_from_aten(call):
    x = call.arg("self")
    shifts, dims = tuple(call.arg("shifts")), tuple(call.arg("dims", ()))
    axes = tuple(norm_axis(d, x.type.rank) for d in dims) if dims else None
    return call.emit(ROLL, [x], {"shifts": shifts, "axes": axes})
