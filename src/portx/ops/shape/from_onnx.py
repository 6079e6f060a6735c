"""ONNX import rules for shapes: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile, Concat,
Split, Shape and Size.

Shape operands (Reshape's shape, Squeeze's axes, Split's sizes) must be constants; the walker folds the
usual ``Shape -> Gather -> Concat`` arithmetic before these rules see it (Note [onnx walk]). ``Shape`` and
``Size`` answer with a constant: IR shapes are static at the example's sizes.

Example:
    Reshape(%x, [0, -1]) on float32[2x3x4] -> reshape(%x) {shape=(2, 12)}
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import imports
from .._util import norm_axes, norm_axis
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT
from ..shape.index import TILE

__all__ = ["reshaped"]


def reshaped(call, x, shape):
    """``x`` reshaped to ``shape`` (or ``x`` itself when it has that shape already)."""
    shape = tuple(int(d) for d in shape)
    return x if shape == tuple(x.type.shape) else call.emit(RESHAPE, [x], {"shape": shape})


def _target_shape(call, x, shape):
    """Reshape's target: 0 copies the input dim (unless ``allowzero``), one -1 takes the rest."""
    allowzero = call.attr("allowzero", 0)
    dims = [x.type.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
    if dims.count(-1) == 1:
        known = math.prod(d for d in dims if d != -1)
        dims[dims.index(-1)] = math.prod(x.type.shape) // known if known else 0
    if any(d < 1 for d in dims):
        call.unsupported(f"reshape of {tuple(x.type.shape)} to {tuple(shape)} gives an empty or unsettled shape")
    return dims


@RESHAPE.imports("onnx", "Reshape")
def _reshape_from_onnx(call):
    x = call.input(0)
    return reshaped(call, x, _target_shape(call, x, call.ints(1, "the target shape")))


@imports("onnx", "Flatten")
def _flatten_from_onnx(call):
    """(prod(shape[:axis]), prod(shape[axis:]))."""
    x = call.input(0)
    axis = call.attr("axis", 1)
    axis = axis + x.type.rank if axis < 0 else axis
    return reshaped(call, x, (math.prod(x.type.shape[:axis]), math.prod(x.type.shape[axis:])))


@PERMUTE.imports("onnx", "Transpose")
def _transpose_from_onnx(call):
    x = call.input(0)
    perm = call.attr("perm") or tuple(reversed(range(x.type.rank)))
    return x if tuple(perm) == tuple(range(x.type.rank)) else call.emit(PERMUTE, [x], {"perm": tuple(perm)})


def _axes(call, index=1):
    """Axes from the input (opset 13+ for Squeeze/Unsqueeze) or the attribute; None when neither is given."""
    if call.has_input(index):
        return call.ints(index, "axes")
    found = call.attr("axes")
    return None if found is None else tuple(found)


@imports("onnx", "Squeeze", "Unsqueeze")
def _squeeze_from_onnx(call):
    x = call.input(0)
    shape, axes = list(x.type.shape), _axes(call)
    if call.op_type == "Squeeze":
        drop = set(norm_axes(axes, x.type.rank)) if axes else {i for i, d in enumerate(shape) if d == 1}
        return reshaped(call, x, [d for i, d in enumerate(shape) if i not in drop])
    rank = x.type.rank + len(axes)
    for axis in sorted(norm_axis(a, rank) for a in axes):
        shape.insert(axis, 1)
    return reshaped(call, x, shape)


@EXPAND.imports("onnx", "Expand")
def _expand_from_onnx(call):
    """Expand broadcasts both ways: the result has NumPy's broadcast shape of the two."""
    x = call.input(0)
    shape = tuple(int(d) for d in np.broadcast_shapes(tuple(x.type.shape), call.ints(1, "the shape")))
    return x if shape == tuple(x.type.shape) else call.emit(EXPAND, [x], {"shape": shape})


@TILE.imports("onnx", "Tile")
def _tile_from_onnx(call):
    return call.emit(TILE, [call.input(0)], {"reps": call.ints(1, "repeats")})


@CONCAT.imports("onnx", "Concat")
def _concat_from_onnx(call):
    values = [v for v in call.inputs() if v is not None]
    axis = norm_axis(call.attr("axis"), values[0].type.rank)
    values = [v for v in values if v.type.shape[axis] != 0] or values[:1]
    return values[0] if len(values) == 1 else call.emit(CONCAT, values, {"axis": axis})


@SPLIT.imports("onnx", "Split")
def _split_from_onnx(call):
    """Sizes from the ``split`` input, or ``num_outputs`` (18+: the last piece smaller), or equal pieces."""
    x = call.input(0)
    axis = norm_axis(call.attr("axis", 0), x.type.rank)
    n, parts = x.type.shape[axis], call.n_outputs
    if call.has_input(1):
        sizes = call.ints(1, "split sizes")
    elif call.attr("split") is not None:
        sizes = tuple(call.attr("split"))
    else:
        parts = call.attr("num_outputs", parts)
        chunk = -(-n // parts)
        sizes = tuple(min(chunk, n - i * chunk) for i in range(parts))
    if any(s < 1 for s in sizes):
        call.unsupported(f"split of {n} into {sizes} gives an empty piece")
    result = call.emit(SPLIT, [x], {"sizes": tuple(sizes), "axis": axis})
    return result if isinstance(result, list) else [result]


@imports("onnx", "Shape", "Size")
def _shape_from_onnx(call):
    """A constant: IR shapes are static (free dims come back later, Note [free dims] in ir/types.py)."""
    shape = tuple(call.input(0).type.shape)
    if call.op_type == "Size":
        return np.array(math.prod(shape), dtype=np.int64)
    start, end = call.attr("start", 0), call.attr("end")
    return np.array(shape[slice(start, end)], dtype=np.int64)
