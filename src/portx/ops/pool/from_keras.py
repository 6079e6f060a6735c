"""Keras import rules for pooling and global pooling layers.

Keras "same" pooling pads like its convolutions (``keras_same_pads``, more at the end); max pooling
pads with -inf (IR max_pool's meaning) and average pooling leaves the padding out of the divisor
(``count_include_pad=False``). Global pooling is a mean / amax over the spatial axes, in the
layer's own layout, so it needs no permutes.

Example:
    AveragePooling2D(3, strides=2, padding="same") on (1, 5, 5, 2) ->
    permute -> avg_pool {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), count_include_pad=False}
"""
from __future__ import annotations

from .._keras import keras_spatial_axes
from ..conv.from_keras import keras_conv_pads, spatial_in, spatial_out
from ..pool import AVG_POOL, MAX_POOL
from ..reduce import REDUCE

__all__ = []


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
    if call.arg("mask") is not None:
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
