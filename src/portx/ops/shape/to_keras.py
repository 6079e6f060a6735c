"""Keras-JAX emit rules for the shape and indexing ops: ``keras.ops`` calls and ``x[...]`` subscripts.

Data movement is ``ops.reshape`` / ``ops.transpose`` / ``ops.broadcast_to`` / ``ops.concatenate``;
slices and selects are subscripts built with ``index_text`` (index.py), and gathers are
``ops.take`` / ``ops.take_along_axis``. A reshape of a float32 graph value that flattens all but
the batch axis (axis 0 has the inputs' batch size) is the named ``Flatten`` layer, with no batch
size spelled out. A free dim (Note [free dims]) is ``-1`` in a reshape; two of them, or one in a
``broadcast_to``, go through the emitted ``FreeShape`` layer, which reads them from the inputs.

Example generated code:
    attn = ops.reshape(attn_out_proj, (1, 4, 8))
    x_nhwc = ops.transpose(x, (0, 2, 3, 1))
    x_cls = x[:, 0]
"""
from __future__ import annotations

import numpy as np

from ...ir import SymDim

from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SCATTER, SELECT, SLICE, TILE, index_text

__all__ = []


def _flattens_batches(node, k) -> bool:
    """True for ``(N, ...) -> (N, -1)`` where N is the batch size of the model's inputs."""
    x, shape = node.inputs[0].type.shape, tuple(node.outputs[0].type.shape)
    batches = {v.type.shape[0] for v in k.graph.inputs if v.type.rank}
    return len(x) >= 3 and shape == (x[0], int(np.prod(x[1:]))) and batches == {x[0]} and k.layer_ready(node)


@RESHAPE.emits("keras-jax")
def _reshape_to_keras(node, k):
    if _flattens_batches(node, k):  # Flatten reads channels-last order, which data_format pins
        k.layer(node, "Flatten", {"data_format": "channels_last"}, [node.inputs[0]])
        return
    shape = tuple(node.attrs["shape"])
    free = [d for d in shape if isinstance(d, SymDim)]
    if len(free) > 1:  # -1 can stand for one free dim only; the rest are read from the inputs at run time
        k.free_shape(node, "reshape", k.ref(node.inputs[0]), shape)
        return
    shape = tuple(-1 if isinstance(d, SymDim) else d for d in shape)
    k.assign(node, f"ops.reshape({k.ref(node.inputs[0])}, {k.lit(shape)})")


@PERMUTE.emits("keras-jax")
def _permute_to_keras(node, k):
    k.assign(node, f"ops.transpose({k.ref(node.inputs[0])}, {k.lit(tuple(node.attrs['perm']))})")


@EXPAND.emits("keras-jax")
def _expand_to_keras(node, k):
    if any(isinstance(d, SymDim) for d in node.attrs["shape"]):
        k.free_shape(node, "broadcast_to", k.ref(node.inputs[0]), tuple(node.attrs["shape"]))
        return
    k.assign(node, f"ops.broadcast_to({k.ref(node.inputs[0])}, {k.lit(tuple(node.attrs['shape']))})")


@CONCAT.emits("keras-jax")
def _concat_to_keras(node, k):
    items = ", ".join(k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.concatenate([{items}], axis={node.attrs['axis']})")


@STACK.emits("keras-jax")
def _stack_to_keras(node, k):
    # A stored 0-d item is written as a Python number, which symbolic ops.stack cannot take.
    items = ", ".join(f"ops.convert_to_tensor({k.ref(v)}, {k.lit(v.type.dtype)})" if v.type.rank == 0 and
                      k.is_param(v) else k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.stack([{items}], axis={node.attrs['axis']})")


@SPLIT.emits("keras-jax")
def _split_to_keras(node, k):
    """keras' split takes split points, like numpy: sizes (1, 2, 1) -> [1, 3]."""
    x, sizes = k.ref(node.inputs[0]), node.attrs["sizes"]
    if len(sizes) == 1:  # one piece is the input; a one-item list would not unpack
        k.assign(node, x)
        return
    points = [int(p) for p in np.cumsum(sizes)[:-1]]
    k.assign(node, f"ops.split({x}, {k.lit(points)}, axis={node.attrs['axis']})")


# -- indexing --------------------------------------------------------------------------------------
@SLICE.emits("keras-jax")
def _slice_to_keras(node, k):
    x, a = node.inputs[0], node.attrs
    full = k.graph.free_shape(x)[a["axis"]]
    if isinstance(a["start"], SymDim) or (isinstance(a["end"], SymDim) and a["end"] != full):
        # a bound read from an input's size at run time (``pos[:, :ids.shape[1]]``): Keras slices need ints
        k.free_shape(node, "slice", k.ref(x), (a["axis"], a["start"], a["end"], a["step"]))
        return
    item = f"{k.lit(a['start']) if a['start'] else ''}:{k.lit(a['end']) if a['end'] != full else ''}"
    item += f":{a['step']}" if a["step"] != 1 else ""
    k.assign(node, k.ref(x) + index_text(a["axis"], item))


@SELECT.emits("keras-jax")
def _select_to_keras(node, k):
    x, a = node.inputs[0], node.attrs
    k.assign(node, k.ref(x) + index_text(a["axis"], str(a["index"])))


@INDEX_SELECT.emits("keras-jax")
def _index_select_to_keras(node, k):
    x, index = node.inputs
    k.assign(node, f"ops.take({k.ref(x)}, {k.ref(index)}, axis={node.attrs['axis']})")


@GATHER.emits("keras-jax")
def _gather_to_keras(node, k):
    x, index = node.inputs
    k.assign(node, f"ops.take_along_axis({k.ref(x)}, {k.ref(index)}, axis={node.attrs['axis']})")


@SCATTER.emits("keras-jax")
def _scatter_to_keras(node, k):
    """``ops.scatter_update`` writes; accumulation adds ``ops.scatter`` (which sums duplicates) to x."""
    x, indices, updates = (k.ref(v) for v in node.inputs)
    if node.attrs["accumulate"]:
        shape = k.lit(k.graph.free_shape(node.inputs[0]))
        k.assign(node, f"ops.add({x}, ops.scatter({indices}, {updates}, {shape}))")
    else:
        k.assign(node, f"ops.scatter_update({x}, {indices}, {updates})")


@TILE.emits("keras-jax")
def _tile_to_keras(node, k):
    """A free repeat count (``ids.repeat(batch, 1)``) on a size-1 axis is a broadcast to the free shape."""
    x, reps = node.inputs[0], tuple(node.attrs["reps"])
    free = [i for i, r in enumerate(reps) if isinstance(r, SymDim)]
    if free and len(reps) == x.type.rank and all(x.type.shape[i] == 1 for i in free):
        k.assign(node, k.free_expr(node, "broadcast_to", k.ref(x), k.graph.free_shape(node.outputs[0])))
        return
    k.assign(node, f"ops.tile({k.ref(x)}, {k.lit(reps)})")


@FLIP.emits("keras-jax")
def _flip_to_keras(node, k):
    k.assign(node, f"ops.flip({k.ref(node.inputs[0])}, axis={k.lit(tuple(node.attrs['axes']))})")


@ROLL.emits("keras-jax")
def _roll_to_keras(node, k):
    shifts, axes = tuple(node.attrs["shifts"]), node.attrs["axes"]
    shift = k.lit(shifts if axes is not None else shifts[0])
    axis = k.lit(None if axes is None else tuple(axes))
    k.assign(node, f"ops.roll({k.ref(node.inputs[0])}, {shift}, axis={axis})")
