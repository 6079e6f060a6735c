"""Keras import rules for convolution layers: Conv1D/2D/3D, Depthwise, Separable and Transpose.

Keras kernels are stored spatial-first: ``(*k, in/groups, out)`` for ConvND, ``(*k, in, mult)``
for depthwise, ``(*k, out, in)`` for transposed convolutions. The rules transpose them once, at
import, to torch's layouts and wrap the channels-first IR op in ``to_channels_first`` /
``to_channels_last`` (Note [keras layout] in frontends/keras/__init__.py) unless the layer itself is
``channels_first``. Keras "same" pads asymmetrically (``keras_same_pads``); "causal" pads the left.

Example:
    Conv2D(8, 3, strides=2, padding="same") on (1, 9, 9, 3) ->
    permute -> conv {stride=(2, 2), pads=((1, 1), (1, 1))} -> permute
"""
from __future__ import annotations

import numpy as np

from ..conv import CONV, CONV_TRANSPOSE, keras_same_pads
from ..shape.index import SLICE

__all__ = ["keras_conv_pads", "keras_transpose_crops", "spatial_in", "spatial_out"]


def spatial_in(call, x):
    """``x`` channels-first for an IR spatial op (unchanged when the layer is channels_first)."""
    return x if getattr(call.layer, "data_format", "channels_last") == "channels_first" else call.to_channels_first(x)


def spatial_out(call, y):
    """The IR op's channels-first result back in the layer's data format."""
    return y if getattr(call.layer, "data_format", "channels_last") == "channels_first" else call.to_channels_last(y)


def keras_conv_pads(padding, sizes, kernel, strides, dilation) -> tuple:
    """(begin, end) per spatial axis for Keras padding "valid" / "same" / "causal"."""
    if padding == "valid":
        return tuple((0, 0) for _ in sizes)
    if padding == "causal":
        return tuple((d * (k - 1), 0) for k, d in zip(kernel, dilation))
    return tuple(keras_same_pads(n, k, s, d) for n, k, s, d in zip(sizes, kernel, strides, dilation))


def _kernel(call, name="kernel"):
    """The effective kernel (LoRA merged by Keras' ``kernel`` property when enabled)."""
    if name == "kernel" and getattr(call.layer, "lora_enabled", False):
        return np.asarray(call.layer.kernel)
    return call.weight(name)


def _conv(call, x, weight, bias, strides, dilation, groups, padding):
    """conv of channels-first ``x`` with a torch-layout weight, Keras padding rules."""
    pads = keras_conv_pads(padding, x.type.shape[2:], weight.type.shape[2:], strides, dilation)
    return call.emit(CONV, [x, weight, bias], {"stride": tuple(strides), "pads": pads,
                                               "dilation": tuple(dilation), "groups": groups})


def _bias(call, name="bias"):
    return call.param(call.weight(name), "bias") if getattr(call.layer, "use_bias", True) and call.has_weight(name) \
        else None


@CONV.imports("keras", "Conv1D", "Conv2D", "Conv3D")
def _conv_from_keras(call):
    """ConvND: kernel (*k, in/groups, out) -> weight (out, in/groups, *k)."""
    layer = call.layer
    kernel = _kernel(call)
    rank = kernel.ndim - 2
    weight = call.param(kernel.transpose((rank + 1, rank) + tuple(range(rank))), "weight")
    x = spatial_in(call, call.inputs[0])
    y = _conv(call, x, weight, _bias(call), layer.strides, layer.dilation_rate, layer.groups, layer.padding)
    return call.activation(spatial_out(call, y), call.layer.activation)


def _depthwise_weight(call, kernel):
    """(*k, in, mult) -> (in * mult, 1, *k); output channel c * mult + m as in Keras."""
    rank = kernel.ndim - 2
    cin, mult = kernel.shape[-2:]
    flat = kernel.reshape(kernel.shape[:rank] + (cin * mult,))
    return flat.transpose((rank,) + tuple(range(rank)))[:, None], cin


@CONV.imports("keras", "DepthwiseConv1D", "DepthwiseConv2D")
def _depthwise_conv_from_keras(call):
    """DepthwiseConvND (depth_multiplier): a conv with groups = input channels."""
    layer = call.layer
    array, cin = _depthwise_weight(call, _kernel(call, "kernel"))
    weight = call.param(array, "weight")
    x = spatial_in(call, call.inputs[0])
    y = _conv(call, x, weight, _bias(call), layer.strides, layer.dilation_rate, cin, layer.padding)
    return call.activation(spatial_out(call, y), call.layer.activation)


@CONV.imports("keras", "SeparableConv1D", "SeparableConv2D")
def _separable_conv_from_keras(call):
    """SeparableConvND: depthwise conv (strides, dilation, padding) then a pointwise conv with the bias."""
    layer = call.layer
    array, cin = _depthwise_weight(call, call.weight("depthwise_kernel"))
    depthwise = call.param(array, "depthwise.weight")
    pointwise_kernel = call.weight("pointwise_kernel")
    rank = pointwise_kernel.ndim - 2
    pointwise = call.param(pointwise_kernel.transpose((rank + 1, rank) + tuple(range(rank))), "pointwise.weight")
    x = spatial_in(call, call.inputs[0])
    y = _conv(call, x, depthwise, None, layer.strides, layer.dilation_rate, cin, layer.padding)
    y = _conv(call, y, pointwise, _bias(call), (1,) * rank, (1,) * rank, 1, "valid")
    return call.activation(spatial_out(call, y), call.layer.activation)


def keras_transpose_crops(size, k, s, d, padding, output_padding) -> tuple:
    """(crop at begin, crop at end) of the full transposed output ``(size - 1) * s + d * (k - 1) + 1``.

    Keras on JAX pads the stride-dilated input by (left, right) and convolves (backend_utils
    ``_convert_conv_transpose_padding_args_from_keras_to_jax``); the crop is ``d * (k - 1) - pad``.
    A negative end crop means extra (bias-only) rows at the end.
    """
    keff = (k - 1) * d + 1
    if padding == "valid":
        extra = max(keff, s) - keff if output_padding is None else output_padding
        left, right = keff - 1, keff - 1 + extra
    else:
        pad_len = s + keff - 2 if output_padding is None else keff + keff % 2 - 2 + output_padding
        left = min(pad_len // 2 + pad_len % 2, keff - 1)
        right = pad_len - left
    return keff - 1 - left, keff - 1 - right


@CONV_TRANSPOSE.imports("keras", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
def _conv_transpose_from_keras(call):
    """ConvNDTranspose: kernel (*k, out, in) -> torch weight (in, out, *k); Keras' output size rules."""
    layer = call.layer
    kernel = _kernel(call)
    rank = kernel.ndim - 2
    weight = call.param(kernel.transpose((rank + 1, rank) + tuple(range(rank))), "weight")
    x = spatial_in(call, call.inputs[0])
    out_pad = layer.output_padding if layer.output_padding is not None else (None,) * rank
    crops = [keras_transpose_crops(n, k, s, d, layer.padding, op) for n, k, s, d, op in
             zip(x.type.shape[2:], layer.kernel_size, layer.strides, layer.dilation_rate, out_pad)]
    padding = tuple(begin for begin, _ in crops)
    output_padding = tuple(max(begin - end, 0) for begin, end in crops)
    y = call.emit(CONV_TRANSPOSE, [x, weight, _bias(call)],
                  {"stride": tuple(layer.strides), "padding": padding, "output_padding": output_padding,
                   "dilation": tuple(layer.dilation_rate), "groups": 1})
    for axis, (begin, end) in enumerate(crops):
        if end > begin:  # more to crop at the end than torch's symmetric padding took
            length = y.type.shape[2 + axis]
            y = call.emit(SLICE, [y], {"axis": 2 + axis, "start": 0, "end": length - (end - begin)})
    return call.activation(spatial_out(call, y), call.layer.activation)
