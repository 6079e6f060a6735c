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

from .._util import kind, norm_axis
from ..elementwise import CAST
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SELECT, SLICE, TILE, emit_slice, torch_slice_bounds

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
    """All reshape-likes become one static reshape (Note [recorded target shapes])."""
    x = call.arg("self", call.arg("input"))
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


@SPLIT.imports("torch", "aten::unbind")
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
    if index.type.rank == 0:  # torch keeps the axis for a 0-d index here, numpy.take would drop it
        index = call.emit(RESHAPE, [index], {"shape": (1,)})
    return call.emit(INDEX_SELECT, [x, index], {"axis": norm_axis(call.arg("dim"), x.type.rank)})


@INDEX_SELECT.imports("torch", "aten::index")
def _index_from_aten(call):
    """``x[:, idx]`` with one integer index tensor; other advanced indexing is refused."""
    x, indices = call.arg("self"), call.arg("indices")
    present = [(axis, v) for axis, v in enumerate(indices) if v is not None]
    if len(present) != 1:
        call.unsupported(f"advanced indexing with {len(present)} index tensors (only one is supported)")
    axis, index = present[0]
    if kind(index.type.dtype) != 1 or index.type.dtype == "uint8":
        call.unsupported("boolean mask indexing (its result size depends on the data)")
    return call.emit(INDEX_SELECT, [x, index], {"axis": axis})


@GATHER.imports("torch", "aten::gather")
def _gather_from_aten(call):
    """torch allows an index smaller than x on the other axes; those axes are sliced to fit first."""
    x, index = call.arg("self"), call.arg("index")
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
