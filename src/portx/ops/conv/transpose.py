"""Transposed convolution (N-d, NC... layout) with torch's weight layout (in, out/groups, *kernel).

Note [transposed conv as conv]: a ConvNDTranspose layer has torch's meaning only without groups,
without stride together with dilation, with output_padding < stride and with stored weights.
Everywhere else the rule writes the equivalent forward convolution: insert stride - 1 zeros after
every input element, pad each axis by d*(k-1) - padding at the start and d*(k-1) - padding +
output_padding at the end (cropping where that is negative), and convolve at stride 1 with the
kernel flipped in space and in/out swapped per group.

Example IR:
    %y: float32[1x4x8x8] = conv_transpose(%x, %up.weight, %up.bias) {dilation=(1, 1), groups=1,
        output_padding=(1, 1), padding=(1, 1), stride=(2, 2)}  # up
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last, promote
from ..conv import (bias_expr, conv_from_aten, conv_options, data_format, layer_friendly, operands, ops_conv_expr,
                   per_axis, stored)

__all__ = ["CONV_TRANSPOSE", "conv_transpose_numpy", "transposed_as_conv_pads"]

CONV_TRANSPOSE = OpDef("conv_transpose", ("x", "weight", "bias?"),
                       {"stride": REQUIRED, "padding": REQUIRED, "output_padding": REQUIRED,
                        "dilation": REQUIRED, "groups": 1, "channels_last": False}, family="conv",
                       doc="torch ConvTranspose semantics; weight is (in, out/groups, *kernel). "
                           "channels_last: x and y are (N, *spatial, C).")


@CONV_TRANSPOSE.infer
@honors_channels_last
def _conv_transpose_type(x, weight, bias=None, *, stride, padding, output_padding, dilation, groups):
    n, c, *sizes = x.shape
    if c != weight.shape[0] or c % groups:
        raise ValueError(f"conv_transpose: {c} channels do not match weight {weight.shape} with groups={groups}")
    out = [(size - 1) * s - 2 * p + d * (k - 1) + op + 1 for size, k, s, p, op, d in
           zip(sizes, weight.shape[2:], stride, padding, output_padding, dilation)]
    if min(out, default=1) <= 0:
        raise ValueError(f"conv_transpose: output size {tuple(out)} is empty")
    return x.with_shape((n, weight.shape[1] * groups, *out)).with_dtype(promote(x, weight))


@CONV_TRANSPOSE.reference
@honors_channels_last
def conv_transpose_numpy(x, weight, bias=None, *, stride, padding, output_padding, dilation, groups):
    """Scatter-add form of torch's transposed convolution, in float64."""
    n, c, *sizes = x.shape
    ks = weight.shape[2:]
    full = [(size - 1) * s + d * (k - 1) + 1 + op for size, k, s, op, d in
            zip(sizes, ks, stride, output_padding, dilation)]
    og, cg = weight.shape[1], c // groups
    y = np.zeros((n, og * groups, *full))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = weight[g * cg:(g + 1) * cg].astype(np.float64)
        for idx in np.ndindex(*ks):
            sl = tuple(slice(idx[i] * dilation[i], idx[i] * dilation[i] + stride[i] * (sizes[i] - 1) + 1,
                             stride[i]) for i in range(len(ks)))
            y[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "nc...,co->no...", xs, ws[(slice(None), slice(None)) + idx])
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    y = y[(slice(None), slice(None)) + crop]
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * len(ks))
    return y.astype(x.dtype)


@CONV_TRANSPOSE.emits("keras-jax")
def _conv_transpose_to_keras(node, k):
    """A ConvNDTranspose layer with explicit output_padding, then a crop for torch's padding.

    Keras (JAX) pads the dilated input by (k - 1, k - 1 + output_padding), torch's full output
    before cropping, but only when output_padding is given: its default differs for stride > kernel.
    """
    x, w, b = operands(node)
    a = node.attrs
    if not (stored(k, w, b) and layer_friendly(a) and a["groups"] == 1
            and all(op < s for op, s in zip(a["output_padding"], a["stride"]))):
        if a.get("channels_last", False):
            k.via_channels_first(node, _conv_transpose_as_conv)
        else:
            _conv_transpose_as_conv(node, k)
        return
    rank, weight = len(a["stride"]), k.param(w)
    kernel = weight.transpose(tuple(range(2, 2 + rank)) + (1, 0))
    kwargs = {"filters": int(weight.shape[1]), "kernel_size": tuple(weight.shape[2:]),
              "strides": tuple(a["stride"]), "padding": "valid", "output_padding": tuple(a["output_padding"]),
              "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None, "data_format": data_format(node)}
    bias = [k.param(b)] if b is not None else []
    if not any(a["padding"]):
        k.layer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias)
        return
    full = k.sublayer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias)
    k.crop(node, full, a["padding"], a.get("channels_last", False))


def transposed_as_conv_pads(kernel, stride, padding, output_padding, dilation) -> tuple:
    """(begin, end) pads, possibly negative, of the zero-inserted input (Note [transposed conv as conv]).

    The zero-inserted axis already ends in stride - 1 zeros, so the end pad is that much smaller.
    Example: ``transposed_as_conv_pads((3,), (2,), (1,), (1,), (1,)) == ((1, 1),)``.
    """
    pads = []
    for kk, s, p, op, d in zip(kernel, stride, padding, output_padding, dilation):
        edge = d * (kk - 1) - p
        pads.append((edge, edge + op - (s - 1)))
    return tuple(pads)


def _zero_insert(node, k, x, stride) -> str:
    """``x`` with stride - 1 zeros after every element of each spatial axis (length L * s)."""
    _, c, *sizes = x.type.shape
    if all(s == 1 for s in stride):
        return k.ref(x)
    split = (-1, c) + sum(((size, 1) for size in sizes), ())
    pads = ((0, 0), (0, 0)) + sum((((0, 0), (0, s - 1)) for s in stride), ())
    merged = (-1, c) + tuple(size * s for size, s in zip(sizes, stride))
    return k.temp(node, f"ops.reshape(ops.pad(ops.reshape({k.ref(x)}, {k.lit(split)}), {k.lit(pads)}), "
                        f"{k.lit(merged)})", "dilated")


def _pad_or_crop(node, k, src: str, sizes, pads) -> str:
    """Apply (begin, end) pads that may be negative: crop those ends, zero-pad the others."""
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        parts = ", ".join(f"{max(-lo, 0)}:{size - max(-hi, 0)}" for size, (lo, hi) in zip(sizes, pads))
        src = k.temp(node, f"{src}[:, :, {parts}]", "cropped")
    if any(lo > 0 or hi > 0 for lo, hi in pads):
        widths = ((0, 0), (0, 0)) + tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
        src = k.temp(node, f"ops.pad({src}, {k.lit(widths)})", "padded")
    return src


def _conv_transpose_as_conv(node, k):
    """The forward-convolution form (Note [transposed conv as conv]): a ConvND layer or ops.conv."""
    x, w, b = operands(node)
    a = node.attrs
    rank, groups, (cin, og, *ks) = len(a["stride"]), a["groups"], w.type.shape
    cg, axes = cin // groups, tuple(range(2, 2 + rank))
    sizes = [size * s for size, s in zip(x.type.shape[2:], a["stride"])]
    pads = transposed_as_conv_pads(ks, a["stride"], a["padding"], a["output_padding"], a["dilation"])
    src = _pad_or_crop(node, k, _zero_insert(node, k, x, a["stride"]), sizes, pads)
    if stored(k, w, b):
        forward = k.param(w).reshape((groups, cg, og, *ks)).swapaxes(1, 2).reshape((groups * og, cg, *ks))
        kernel = np.flip(forward, axes).transpose(axes + (1, 0))
        kwargs = {"filters": groups * og, "kernel_size": tuple(ks), "strides": (1,) * rank, "padding": "valid",
                  "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None, "data_format": "channels_first"}
        kwargs.update({"groups": groups} if groups > 1 else {})
        k.layer(node, f"Conv{rank}D", kwargs, [src], [kernel] + ([k.param(b)] if b is not None else []))
        return
    swap = k.lit((0, 2, 1) + tuple(range(3, 3 + rank)))
    forward = (f"ops.flip(ops.reshape(ops.transpose(ops.reshape({k.ref(w)}, {k.lit((groups, cg, og, *ks))}), "
               f"{swap}), {k.lit((groups * og, cg, *ks))}), axis={k.lit(axes)})")
    expr = ops_conv_expr(k, node, src, forward, groups, conv_options(k, (1,) * rank, a["dilation"]))
    k.assign(node, bias_expr(k, expr, b, rank))


@CONV_TRANSPOSE.imports("torch", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")
def _conv_transpose_from_aten(call):
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    attrs = {"stride": per_axis(call.arg("stride", 1), rank), "padding": per_axis(call.arg("padding", 0), rank),
             "output_padding": per_axis(call.arg("output_padding", 0), rank),
             "dilation": per_axis(call.arg("dilation", 1), rank), "groups": call.arg("groups", 1)}
    return call.emit(CONV_TRANSPOSE, [x, w, b], attrs)


@CONV_TRANSPOSE.imports("torch", "aten::convolution")
def _convolution_from_aten(call):
    """The generic ATen convolution: a transposed one here, a forward one in conv.py."""
    if call.arg("transposed", False):
        return _conv_transpose_from_aten(call)
    return conv_from_aten(call)
