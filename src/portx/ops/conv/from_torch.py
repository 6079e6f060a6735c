"""Torch import rules for convolutions: aten::conv1d/2d/3d, aten::conv_transpose1d/2d/3d, aten::convolution.

ATen gives stride, padding and dilation as an int or one int per spatial axis; conv padding may
also be "same" (torch pads d*(k-1) in total, the larger half at the end) or "valid". Torch's
weight layouts are the IR's, so weights pass through unchanged. An unbatched (C, *spatial) input gets a
batch of one around the IR conv.

Example:
    aten::conv2d(x, w, b, stride=[2, 2], padding=[1, 1]) ->
    conv(%x, %w, %b) {stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1}
"""
from __future__ import annotations

from ..conv import CONV, CONV_TRANSPOSE
from ..shape import RESHAPE

__all__ = []


def _per_axis(value, rank):
    """One int per spatial axis from an int or a list: ``_per_axis(2, 2) == (2, 2)``."""
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(value * rank if len(value) == 1 else value)


def _batched(call, op, x, w, b, attrs):
    """``op`` on torch's unbatched (C, *spatial) input too: a batch of one added before, dropped after."""
    if x.type.rank != w.type.rank - 1:
        return call.emit(op, [x, w, b], attrs)
    y = call.emit(op, [call.emit(RESHAPE, [x], {"shape": (1,) + tuple(x.type.shape)}), w, b], attrs)
    return call.emit(RESHAPE, [y], {"shape": tuple(y.type.shape[1:])})


@CONV.imports("torch", "aten::conv1d", "aten::conv2d", "aten::conv3d")
def _conv_from_aten(call):
    """conv1d/2d/3d (and untransposed aten::convolution): int or "same"/"valid" padding."""
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    stride, dilation = _per_axis(call.arg("stride", 1), rank), _per_axis(call.arg("dilation", 1), rank)
    padding = call.arg("padding", 0)
    if padding == "same":
        pads = tuple(((d * (k - 1)) // 2, d * (k - 1) - (d * (k - 1)) // 2)
                     for k, d in zip(w.type.shape[2:], dilation))
    elif padding == "valid":
        pads = ((0, 0),) * rank
    else:
        pads = tuple((p, p) for p in _per_axis(padding, rank))
    return _batched(call, CONV, x, w, b, {"stride": stride, "pads": pads, "dilation": dilation,
                                          "groups": call.arg("groups", 1)})


@CONV_TRANSPOSE.imports("torch", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")
def _conv_transpose_from_aten(call):
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    attrs = {"stride": _per_axis(call.arg("stride", 1), rank), "padding": _per_axis(call.arg("padding", 0), rank),
             "output_padding": _per_axis(call.arg("output_padding", 0), rank),
             "dilation": _per_axis(call.arg("dilation", 1), rank), "groups": call.arg("groups", 1)}
    return _batched(call, CONV_TRANSPOSE, x, w, b, attrs)


@CONV_TRANSPOSE.imports("torch", "aten::convolution")
def _convolution_from_aten(call):
    """The generic ATen convolution: a transposed one, or a forward one (``_conv_from_aten``)."""
    if call.arg("transposed", False):
        return _conv_transpose_from_aten(call)
    return _conv_from_aten(call)
