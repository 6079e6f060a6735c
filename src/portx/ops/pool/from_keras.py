"""Keras import rules for pooling, global pooling, ZeroPadding and Cropping layers.

Keras "same" pooling pads like its convolutions (``keras_same_pads``, more at the end); max pooling
pads with -inf (IR max_pool's meaning) and average pooling leaves the padding out of the divisor
(``count_include_pad=False``). Global pooling is a mean / amax over the spatial axes, in the
layer's own layout, so it needs no permutes.

Example:
    AveragePooling2D(3, strides=2, padding="same") on (1, 5, 5, 2) ->
    permute -> avg_pool {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), count_include_pad=False}
"""
from __future__ import annotations

from ..conv.from_keras import keras_conv_pads, spatial_in, spatial_out
from ..pad import PAD
from ..pool import AVG_POOL, MAX_POOL
from ..reduce import REDUCE
from ..shape.index import SLICE

__all__ = ["keras_spatial_axes"]


def keras_spatial_axes(layer, rank) -> tuple:
    """The spatial axes of a rank-``rank`` tensor in the layer's data format."""
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        return tuple(range(2, rank))
    return tuple(range(1, rank - 1))


def _pool(call, op, extra):
    layer = call.layer
    x = spatial_in(call, call.inputs[0])
    kernel, strides = tuple(layer.pool_size), tuple(layer.strides or layer.pool_size)
    pads = keras_conv_pads(layer.padding.lower(), x.type.shape[2:], kernel, strides, (1,) * len(kernel))
    y = call.emit(op, [x], {"kernel": kernel, "stride": strides, "pads": pads, **extra})
    return spatial_out(call, y)


@MAX_POOL.imports("keras", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D")
def _max_pool_from_keras(call):
    """MaxPoolingND, "valid" or "same" (padding never wins a max)."""
    return _pool(call, MAX_POOL, {"dilation": (1,) * len(call.layer.pool_size)})


@AVG_POOL.imports("keras", "AveragePooling1D", "AveragePooling2D", "AveragePooling3D")
def _avg_pool_from_keras(call):
    """AveragePoolingND; "same" divides by the number of real (unpadded) elements."""
    return _pool(call, AVG_POOL, {"count_include_pad": False})


def _global(call, name):
    if call.kwargs.get("mask") is not None:
        call.unsupported("global pooling with a mask")
    x = call.inputs[0]
    axes = keras_spatial_axes(call.layer, x.type.rank)
    return call.emit(REDUCE[name], [x], {"axes": axes, "keepdims": bool(call.layer.keepdims)})


@REDUCE["mean"].imports("keras", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D")
def _global_avg_pool_from_keras(call):
    """GlobalAveragePoolingND: mean over the spatial axes (keepdims as configured)."""
    return _global(call, "mean")


@REDUCE["amax"].imports("keras", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D")
def _global_max_pool_from_keras(call):
    """GlobalMaxPoolingND: amax over the spatial axes."""
    return _global(call, "amax")


def _per_axis_pairs(value, rank):
    """Keras padding/cropping for ``rank`` spatial axes as ((begin, end), ...)."""
    if rank == 1:
        return (tuple(value),)
    return tuple(tuple(p) for p in value)


@PAD.imports("keras", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D")
def _zero_padding_from_keras(call):
    """ZeroPaddingND: a constant pad of the spatial axes in the layer's layout."""
    x = call.inputs[0]
    axes = keras_spatial_axes(call.layer, x.type.rank)
    spatial = dict(zip(axes, _per_axis_pairs(call.layer.padding, len(axes))))
    pads = tuple(tuple(int(p) for p in spatial.get(a, (0, 0))) for a in range(x.type.rank))
    return call.emit(PAD, [x], {"pads": pads, "mode": "constant", "value": 0.0})


@SLICE.imports("keras", "Cropping1D", "Cropping2D", "Cropping3D")
def _cropping_from_keras(call):
    """CroppingND: one slice per cropped spatial axis."""
    x = y = call.inputs[0]
    axes = keras_spatial_axes(call.layer, x.type.rank)
    for axis, (begin, end) in zip(axes, _per_axis_pairs(call.layer.cropping, len(axes))):
        if begin or end:
            y = call.emit(SLICE, [y], {"axis": axis, "start": int(begin), "end": y.type.shape[axis] - int(end)})
    return y
