"""ONNX import rules for rearrangements written as reshape/permute/slice/pad: DepthToSpace, SpaceToDepth,
CenterCropPad, Trilu and EyeLike (a constant: the IR's shapes are static).

Example:
    DepthToSpace(%x) {blocksize=2, mode="DCR"} on float32[1x8x2x3] ->
    reshape(permute(reshape(%x) {shape=(1, 2, 2, 2, 2, 3)}) {perm=(0, 3, 4, 1, 5, 2)}) {shape=(1, 2, 4, 6)}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import WHERE
from ..pad import PAD
from ..shape import PERMUTE
from ..shape.from_onnx import reshaped
from ..shape.index import emit_slice

__all__ = []


@imports("onnx", "DepthToSpace", "SpaceToDepth")
def _depth_to_space_from_onnx(call):
    """Channels to blocks of pixels (DCR or CRD order) and back."""
    x = call.input(0)
    (b, c, h, w), bs = x.type.shape, int(call.attr("blocksize"))
    if call.op_type == "SpaceToDepth":
        y = reshaped(call, x, (b, c, h // bs, bs, w // bs, bs))
        perm = (0, 3, 5, 1, 2, 4) if call.attr("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4)
        y = call.emit(PERMUTE, [y], {"perm": perm})
        return reshaped(call, y, (b, c * bs * bs, h // bs, w // bs))
    if call.attr("mode", "DCR") == "DCR":
        y, perm = reshaped(call, x, (b, bs, bs, c // (bs * bs), h, w)), (0, 3, 4, 1, 5, 2)
    else:
        y, perm = reshaped(call, x, (b, c // (bs * bs), bs, bs, h, w)), (0, 1, 4, 2, 5, 3)
    y = call.emit(PERMUTE, [y], {"perm": perm})
    return reshaped(call, y, (b, c // (bs * bs), h * bs, w * bs))


@imports("onnx", "CenterCropPad")
def _center_crop_pad_from_onnx(call):
    """Crop larger axes around the centre and pad smaller ones with zeros (the extra pixel at the end)."""
    x = call.input(0)
    target = call.ints(1, "shape")
    axes = call.attr("axes") or tuple(range(x.type.rank))
    pads = [(0, 0)] * x.type.rank
    for axis, size in zip(axes, target):
        axis %= x.type.rank
        n = x.type.shape[axis]
        if n > size:
            start = (n - size) // 2
            x = emit_slice(call, x, axis, start, start + size)
        elif n < size:
            pads[axis] = ((size - n) // 2, size - n - (size - n) // 2)
    return x if all(p == (0, 0) for p in pads) else call.emit(PAD, [x], {"pads": tuple(pads)})


@imports("onnx", "Trilu")
def _trilu_from_onnx(call):
    """Keep the upper (or lower) triangle of the last two axes from diagonal ``k``; zeros elsewhere."""
    x = call.input(0)
    k = call.ints(1, "k")[0] if call.has_input(1) else 0
    rows, cols = x.type.shape[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if call.attr("upper", 1) else np.tril(np.ones((rows, cols), bool), k)
    zero = call.const(np.zeros((), x.type.dtype if x.type.dtype != "bfloat16" else "float32"))
    return call.emit(WHERE, [call.const(keep, "mask"), x, zero])


@imports("onnx", "EyeLike")
def _eye_like_from_onnx(call):
    """A constant identity of the input's (static) shape, shifted by ``k``."""
    rows, cols = call.input(0).type.shape
    dtype = call.dtype_attr("dtype") if call.attr("dtype") is not None else call.input(0).type.dtype
    return np.eye(rows, cols, int(call.attr("k", 0)), dtype=dtype)
