"""JAX import rules for layout and indexing primitives.

reshape / squeeze / broadcast_in_dim / transpose / concatenate / split / rev map to one IR op
each (``tile`` and ``stack`` too; broadcast_in_dim is a reshape that inserts the new axes, then an expand); ``pad`` is in
``ops/pad/from_jax.py``. ``slice`` becomes one IR slice per cut axis;
``dynamic_slice`` and ``dynamic_update_slice`` with known start indices are slices (clamped the way
XLA clamps them); with starts computed at run time they are a gather / scatter of the window's
positions (``ops/scatter/from_jax.py``). ``gather`` in the form ``jnp.take(x, idx, axis)`` produces
(one collapsed axis, whole slices elsewhere) is an ``embedding`` for a 2-d table read on axis 0, an
``index_select`` otherwise; every other gather goes to the general rule in ``ops/scatter/from_jax.py``. JAX's out-of-bounds modes (fill with NaN, clip) are not reproduced:
indices must be in range, as verification inputs are.

Example:
    broadcast_in_dim[shape=(2, 3), broadcast_dimensions=(1,)](%b) -> reshape {shape=(1, 3)} -> expand {shape=(2, 3)}
"""
from __future__ import annotations

from .._jax import arranged, permuted, reshaped
from ..embedding import EMBEDDING
from ..scatter.from_jax import dynamic_window, general_gather
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, INDEX_SELECT, SLICE, TILE, emit_slice

__all__ = []


@RESHAPE.imports("jax", "reshape", "squeeze", "expand_dims")
def _reshape_from_jax(call):
    if call.primitive == "reshape" and call.params.get("dimensions") is not None:
        call.unsupported("reshape with a dimensions (transpose-first) argument")
    return reshaped(call, call.input(0), call.out_type().shape)


@EXPAND.imports("jax", "broadcast_in_dim")
def _broadcast_in_dim_from_jax(call):
    """Operand axis i lands on output axis ``broadcast_dimensions[i]``; the other axes are new."""
    x, shape = call.input(0), call.out_type().shape
    inter = [1] * len(shape)
    for i, d in enumerate(call.params["broadcast_dimensions"]):
        inter[d] = x.type.shape[i]
    x = reshaped(call, x, inter)
    return x if x.type.shape == shape else call.emit(EXPAND, [x], {"shape": shape})


@PERMUTE.imports("jax", "transpose")
def _transpose_from_jax(call):
    return permuted(call, call.input(0), call.params["permutation"])


@CONCAT.imports("jax", "concatenate")
def _concatenate_from_jax(call):
    inputs = call.inputs
    return inputs[0] if len(inputs) == 1 else call.emit(CONCAT, inputs, {"axis": int(call.params["dimension"])})


@STACK.imports("jax", "stack")
def _stack_from_jax(call):
    return call.emit(STACK, call.inputs, {"axis": int(call.params["axis"])})


@SPLIT.imports("jax", "split")
def _split_from_jax(call):
    sizes = tuple(int(s) for s in call.params["sizes"])
    out = call.emit(SPLIT, [call.input(0)], {"sizes": sizes, "axis": int(call.params["axis"])})
    return out if isinstance(out, list) else [out]


@FLIP.imports("jax", "rev")
def _rev_from_jax(call):
    axes = tuple(int(d) for d in call.params["dimensions"])
    return call.input(0) if not axes else call.emit(FLIP, [call.input(0)], {"axes": axes})


@TILE.imports("jax", "tile")
def _tile_from_jax(call):
    reps = tuple(int(r) for r in call.params["reps"])
    x = call.input(0)
    return x if len(reps) <= x.type.rank and all(r == 1 for r in reps) else call.emit(TILE, [x], {"reps": reps})


@SLICE.imports("jax", "slice")
def _slice_from_jax(call):
    x = call.input(0)
    starts, limits = call.params["start_indices"], call.params["limit_indices"]
    strides = call.params["strides"] or (1,) * len(starts)
    for axis, (start, end, step) in enumerate(zip(starts, limits, strides)):
        x = emit_slice(call, x, axis, int(start), int(end), int(step))
    return x


def _known_starts(call, first):
    """Start indices of a dynamic slice, when known, clamped like XLA to keep the window inside."""
    starts = [call.const_value(i) for i in range(first, call.arity)]
    if any(s is None for s in starts):
        call.unsupported("dynamic_slice with start indices computed at run time (data-dependent offset)")
    return [int(s.reshape(())) for s in starts]


@SLICE.imports("jax", "dynamic_slice")
def _dynamic_slice_from_jax(call):
    if any(call.const_value(i) is None for i in range(1, call.arity)):
        return dynamic_window(call)
    x = call.input(0)
    for axis, (start, size) in enumerate(zip(_known_starts(call, 1), call.params["slice_sizes"])):
        full = x.type.shape[axis]
        start = min(max(start, 0), full - int(size))
        x = emit_slice(call, x, axis, start, start + int(size))
    return x


@CONCAT.imports("jax", "dynamic_update_slice")
def _dynamic_update_slice_from_jax(call):
    """Rebuild the operand around the update: kept slices and the (recursively) updated middle, per axis."""
    if any(call.const_value(i) is None for i in range(2, call.arity)):
        return dynamic_window(call)
    x, update = call.input(0), call.input(1)
    starts = [min(max(s, 0), n - u) for s, n, u in zip(_known_starts(call, 2), x.type.shape, update.type.shape)]
    return _updated(call, x, update, starts, 0)


def _updated(call, x, update, starts, axis):
    if axis == x.type.rank:
        return update
    start, size, full = starts[axis], update.type.shape[axis], x.type.shape[axis]
    middle = emit_slice(call, x, axis, start, start + size)
    pieces = [emit_slice(call, x, axis, 0, start)] if start else []
    pieces.append(_updated(call, middle, update, starts, axis + 1))
    pieces += [emit_slice(call, x, axis, start + size, full)] if start + size < full else []
    return pieces[0] if len(pieces) == 1 else call.emit(CONCAT, pieces, {"axis": axis})


@INDEX_SELECT.imports("jax", "gather")
def _gather_from_jax(call):
    """The ``jnp.take(x, idx, axis)`` form of gather (module docstring); other gathers are refused."""
    dn, sizes = call.params["dimension_numbers"], tuple(call.params["slice_sizes"])
    x_type, idx_type = call.in_type(0), call.in_type(1)
    axes = tuple(dn.start_index_map)
    if getattr(dn, "operand_batching_dims", ()) or len(axes) != 1 or tuple(dn.collapsed_slice_dims) != axes:
        return general_gather(call)
    axis, batch = axes[0], idx_type.rank - 1
    whole = all(s == d for i, (s, d) in enumerate(zip(sizes, x_type.shape)) if i != axis)
    offsets = tuple(range(axis)) + tuple(range(axis + batch, batch + x_type.rank - 1))
    if idx_type.shape[-1:] != (1,) or sizes[axis] != 1 or not whole or tuple(dn.offset_dims) != offsets:
        return general_gather(call)
    index = arranged(call, 1, shape=idx_type.shape[:-1])
    if axis == 0 and x_type.rank == 2:
        return call.emit(EMBEDDING, [call.input(0), index])
    return call.emit(INDEX_SELECT, [call.input(0), index], {"axis": axis})
