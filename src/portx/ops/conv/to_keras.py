"""Keras emit rules for conv and conv_transpose: Conv*D / DepthwiseConv*D / Conv*DTranspose layers.

The conv rule picks ``padding="same"`` only where Keras would pad exactly the same amounts;
elsewhere it writes ZeroPadding + ``valid`` (Keras pads "same" with stride 2 asymmetrically,
PyTorch never does). Where no Keras layer has torch's meaning (computed weights, stride together
with dilation, grouped transposed convolution) the rules write ``ops.conv`` / ``ops.depthwise_conv``
on a kernel transposed in the graph.

Note [transposed conv as conv]: a ConvNDTranspose layer has torch's meaning only without groups,
without stride together with dilation, with output_padding < stride and with stored weights.
Everywhere else the rule writes the equivalent forward convolution: insert stride - 1 zeros after
every input element, pad each axis by d*(k-1) - padding at the start and d*(k-1) - padding +
output_padding at the end (cropping where that is negative), and convolve at stride 1 with the
kernel flipped in space and in/out swapped per group.

Example generated code (torch pads this stride-2 conv (1, 1), Keras "same" would pad (0, 1)):
    stem_0_pad = layers.ZeroPadding2D(1, name='stem_0_pad')(x_nhwc)
    stem_0 = layers.Conv2D(16, 3, strides=2, name='stem_0')(stem_0_pad)
"""
from __future__ import annotations

import numpy as np

from .._util import spatial_shape
from ..conv import CONV, CONV_TRANSPOSE, keras_same_pads, operands, stored

__all__ = ["transposed_as_conv_pads"]


def _layer_friendly(attrs):
    """Keras conv layers reject strides > 1 together with dilation_rate > 1; torch allows it."""
    return max(attrs["stride"]) == 1 or max(attrs["dilation"]) == 1


def _keras_padding(x, ks, attrs) -> str:
    """The Keras padding mode: "same" where Keras pads exactly like the IR, else "valid" (pad first)."""
    pads = [tuple(p) for p in attrs["pads"]]
    sizes = spatial_shape(x.type.shape, attrs.get("channels_last", False))
    same = all(p == keras_same_pads(size, kk, s, d)
               for p, size, kk, s, d in zip(pads, sizes, ks, attrs["stride"], attrs["dilation"]))
    return "same" if same and any(p != (0, 0) for p in pads) else "valid"


def _bias_expr(k, expr, b, rank, channels_last=False):
    """``expr`` plus a per-channel bias, or ``expr`` when there is none."""
    if b is None:
        return expr
    if channels_last:  # the channel axis is last: the bias broadcasts as it is
        return f"ops.add({expr}, {k.ref(b)})"
    return f"ops.add({expr}, ops.reshape({k.ref(b)}, {k.lit((1, -1) + (1,) * rank)}))"


def _data_format(node) -> str:
    """Keras's ``data_format`` for a node with a ``channels_last`` attribute."""
    return "channels_last" if node.attrs.get("channels_last", False) else "channels_first"


@CONV.emits("keras-jax")
def _conv_to_keras(node, k):
    x, w, b = operands(node)
    a = node.attrs
    if _pointwise_after(node, k) is not None:
        return  # written with the pointwise conv that reads it (Note [separable convs])
    depthwise = k.graph.producers().get(x)
    if depthwise is not None and depthwise.op is CONV and _pointwise_after(depthwise, k) is node:
        _separable_to_keras(depthwise, node, k)
        return
    if not stored(k, w, b) or not _layer_friendly(a):
        _conv_as_ops(node, k)
        return
    weight = k.param(w)
    rank, (o, cg, *ks) = len(a["stride"]), weight.shape
    cin = cg * a["groups"]
    padding = _keras_padding(x, ks, a)
    src = x
    if padding == "valid" and any(tuple(p) != (0, 0) for p in a["pads"]):
        src = k.pad_value(node, x, a["pads"], a.get("channels_last", False))
    common = {"kernel_size": tuple(ks), "strides": tuple(a["stride"]), "padding": padding,
              "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None,
              "data_format": _data_format(node)}
    bias = [k.param(b)] if b is not None else []
    spatial_axes = tuple(range(2, 2 + rank))
    if a["groups"] == cin and cin > 1 and rank in (1, 2):
        mult = o // cin
        kernel = weight.reshape((cin, mult, *ks)).transpose(spatial_axes + (0, 1))
        k.layer(node, f"DepthwiseConv{rank}D", {"depth_multiplier": mult, **common}, [src], [kernel] + bias)
    else:
        kernel = weight.transpose(spatial_axes + (1, 0))
        groups = {"groups": a["groups"]} if a["groups"] != 1 else {}
        k.layer(node, f"Conv{rank}D", {"filters": o, **common, **groups}, [src], [kernel] + bias)


# Note [separable convs]: Keras' SeparableConv2D imports as a depthwise conv and a pointwise one, with the weights
# ``<layer>.depthwise.weight`` and ``<layer>.pointwise.weight`` (torch-xla holds them as two nn.Conv2d children of
# the layer's module). Written as a DepthwiseConv2D and a Conv2D, the layer's weights were
# ``block2_sepconv1_depthwise/kernel`` where the source's are ``block2_sepconv1/depthwise_kernel``; the pair of one
# source layer (the pointwise conv the depthwise one's only reader) is written as the one SeparableConv2D.


def _pointwise_after(node, k):
    """The pointwise conv that writes depthwise conv ``node`` with it as one SeparableConvND (Note [separable
    convs]), or None."""
    x, w, b = operands(node)
    a = node.attrs
    if b is not None or w is None or not w.name.endswith(".depthwise.weight") or not stored(k, w, None) \
            or not _layer_friendly(a) or len(a["stride"]) not in (1, 2) or node.outputs[0] in k.graph.outputs:
        return None
    o, cg = k.param(w).shape[:2]
    readers = k.graph.users().get(node.outputs[0], [])
    if cg != 1 or o < a["groups"] or a["groups"] < 2 or len(readers) != 1 or readers[0].op is not CONV:
        return None
    point = readers[0]
    px, pw, pb = operands(point)
    p = point.attrs
    layer = w.name[:-len("depthwise.weight")]
    same = px is node.outputs[0] and pw is not None and pw.name == f"{layer}pointwise.weight"
    plain = p["groups"] == 1 and set(p["stride"]) == set(p["dilation"]) == {1} and \
        all(tuple(pad) == (0, 0) for pad in p["pads"]) and p.get("channels_last") == a.get("channels_last")
    return point if same and plain and stored(k, pw, pb) else None


def _separable_to_keras(depthwise, point, k):
    """``layers.SeparableConvND`` for a depthwise conv and its pointwise one (Note [separable convs])."""
    x, w, _ = operands(depthwise)
    _, pw, b = operands(point)
    a, weight, pointwise = depthwise.attrs, k.param(w), k.param(pw)
    rank, (o, _, *ks) = len(a["stride"]), weight.shape
    padding = _keras_padding(x, ks, a)
    src = x
    if padding == "valid" and any(tuple(p) != (0, 0) for p in a["pads"]):
        src = k.pad_value(depthwise, x, a["pads"], a.get("channels_last", False))
    spatial_axes = tuple(range(2, 2 + rank))
    kernels = [weight.reshape((a["groups"], o // a["groups"], *ks)).transpose(spatial_axes + (0, 1)),
               pointwise.transpose(spatial_axes + (1, 0))]
    kwargs = {"filters": pointwise.shape[0], "kernel_size": tuple(ks), "strides": tuple(a["stride"]),
              "padding": padding, "dilation_rate": tuple(a["dilation"]), "depth_multiplier": o // a["groups"],
              "use_bias": b is not None, "data_format": _data_format(depthwise)}
    k.layer(point, f"SeparableConv{rank}D", kwargs, [src], kernels + ([k.param(b)] if b is not None else []),
            raw=w.name[:-len(".depthwise.weight")])


def _conv_options(k, stride, dilation, channels_last=False) -> str:
    """Keyword arguments shared by the ``ops.conv*`` calls, for inputs padded beforehand."""
    fmt = "channels_last" if channels_last else "channels_first"
    return (f"strides={k.lit(tuple(stride))}, padding=\"valid\", data_format=\"{fmt}\", "
            f"dilation_rate={k.lit(tuple(dilation))}")


def _ops_conv_expr(k, node, src: str, weight: str, groups: int, options: str) -> str:
    """``ops.conv`` of ``src`` with a torch-layout (out, in/groups, *k) kernel expression.

    Symbolic ``ops.conv`` rejects grouped kernels, so groups are split, convolved and concatenated.
    """
    rank = node.outputs[0].type.rank - 2
    perm = k.lit(tuple(range(2, 2 + rank)) + (1, 0))
    if groups == 1:
        return f"ops.conv({src}, ops.transpose({weight}, {perm}), {options})"
    axis = -1 if node.attrs.get("channels_last", False) else 1
    parts = k.temp(node, f"ops.split({src}, {groups}, axis={axis})", "groups")
    kernels = k.temp(node, f"ops.split({weight}, {groups}, axis=0)", "kernels")
    return "ops.concatenate([" + ", ".join(f"ops.conv({parts}[{g}], ops.transpose({kernels}[{g}], {perm}), "
                                           f"{options})" for g in range(groups)) + f"], axis={axis})"


def _conv_as_ops(node, k):
    """``ops.conv`` on a kernel transposed in the graph: computed weights, stride with dilation."""
    x, w, b = operands(node)
    a = node.attrs
    rank, groups, (o, cg, *ks) = len(a["stride"]), a["groups"], w.type.shape
    last = a.get("channels_last", False)
    src = k.pad_value(node, x, a["pads"], last) if any(tuple(p) != (0, 0) for p in a["pads"]) else x
    options = _conv_options(k, a["stride"], a["dilation"], last)
    if groups > 1 and cg == 1:  # depthwise: one op instead of one per channel
        perm = k.lit(tuple(range(2, 2 + rank)) + (0, 1))
        kernel = f"ops.transpose(ops.reshape({k.ref(w)}, {k.lit((groups, o // groups, *ks))}), {perm})"
        expr = f"ops.depthwise_conv({k.ref(src)}, {kernel}, {options})"
    else:
        expr = _ops_conv_expr(k, node, k.ref(src), k.ref(w), groups, options)
    k.assign(node, _bias_expr(k, expr, b, rank, last))


# -- conv_transpose ------------------------------------------------------------------------------------
@CONV_TRANSPOSE.emits("keras-jax")
def _conv_transpose_to_keras(node, k):
    """A ConvNDTranspose layer with explicit output_padding, then a crop for torch's padding.

    Keras (JAX) pads the dilated input by (k - 1, k - 1 + output_padding), torch's full output
    before cropping, but only when output_padding is given: its default differs for stride > kernel.
    """
    x, w, b = operands(node)
    a = node.attrs
    if not (stored(k, w, b) and _layer_friendly(a) and a["groups"] == 1
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
              "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None, "data_format": _data_format(node)}
    bias = [k.param(b)] if b is not None else []
    if not any(a["padding"]):
        k.layer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias)
        return
    full = k.sublayer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias, hint="uncropped")
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
    expr = _ops_conv_expr(k, node, src, forward, groups, _conv_options(k, (1,) * rank, a["dilation"]))
    k.assign(node, _bias_expr(k, expr, b, rank))
