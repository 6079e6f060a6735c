"""Convolutions (N-d, NC... layout): conv and conv_transpose, torch weight layouts.

Padding is stored as explicit (begin, end) pairs per spatial axis, so "same" and asymmetric
paddings have one form. The Keras rule picks ``padding="same"`` only where Keras would pad
exactly the same amounts; elsewhere it writes ZeroPadding + ``valid`` (Keras pads "same" with
stride 2 asymmetrically, PyTorch never does). Where no Keras layer has torch's meaning (computed
weights, stride together with dilation, grouped transposed convolution) the rules write
``ops.conv`` / ``ops.conv_transpose`` on a kernel transposed in the graph.

Example IR:
    %y: float32[1x8x8x8] = conv(%x, %conv.weight, %conv.bias) {stride=(1, 1), pads=((1, 1), (1, 1)),
        dilation=(1, 1), groups=1}  # conv
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last, promote, spatial_shape

__all__ = ["CONV", "conv_numpy", "keras_same_pads", "conv_from_aten", "per_axis", "ops_conv_expr",
           "conv_options", "bias_expr", "operands", "stored", "layer_friendly", "data_format"]

CONV = OpDef("conv", ("x", "weight", "bias?"),
             {"stride": REQUIRED, "pads": REQUIRED, "dilation": REQUIRED, "groups": 1, "channels_last": False},
             family="conv", doc="channels_last: x and y are (N, *spatial, C); the weight stays (O, I/groups, *k).")


@CONV.infer
@honors_channels_last
def _conv_type(x, weight, bias=None, *, stride, pads, dilation, groups):
    n, c, *spatial = x.shape
    if c != weight.shape[1] * groups or weight.shape[0] % groups:
        raise ValueError(f"conv: {c} input channels do not fit weight {weight.shape} with groups={groups}")
    out = []
    for size, k, s, (lo, hi), d in zip(spatial, weight.shape[2:], stride, pads, dilation):
        length = (size + lo + hi - d * (k - 1) - 1) // s + 1
        if length <= 0:
            raise ValueError(f"conv: output size {length} from input {size}, kernel {k}")
        out.append(length)
    return x.with_shape((n, weight.shape[0], *out)).with_dtype(promote(x, weight))


def conv_numpy(x, weight, bias=None, *, stride, pads, dilation, groups):
    """Direct N-d convolution in float64 (slow; for tests on small shapes)."""
    x64 = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n = x.shape[0]
    o, cg, *ks = weight.shape
    spatial = [(x64.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(len(ks))]
    y = np.zeros((n, o, *spatial))
    og = o // groups
    for g in range(groups):
        xs = x64[:, g * cg:(g + 1) * cg]
        ws = weight[g * og:(g + 1) * og].astype(np.float64)
        for idx in np.ndindex(*ks):
            sl = tuple(slice(idx[i] * dilation[i], idx[i] * dilation[i] + stride[i] * (spatial[i] - 1) + 1,
                             stride[i]) for i in range(len(ks)))
            patch = xs[(slice(None), slice(None)) + sl]  # n, cg, *spatial
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch, ws[(slice(None), slice(None)) + idx])
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * len(ks))
    return y.astype(x.dtype)


CONV.reference(honors_channels_last(conv_numpy))


def keras_same_pads(size, k, s, d):
    """The (begin, end) padding Keras uses for padding="same" on one axis."""
    out = -(-size // s)
    total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
    return (total // 2, total - total // 2)


def operands(node):
    """(x, weight, bias) of a conv node; bias is None when absent."""
    return (list(node.inputs) + [None])[:3]


def stored(k, w, b):
    """True when weight and bias are stored arrays, so a Keras layer can own them."""
    return k.is_param(w) and (b is None or k.is_param(b))


def layer_friendly(attrs):
    """Keras conv layers reject strides > 1 together with dilation_rate > 1; torch allows it."""
    return max(attrs["stride"]) == 1 or max(attrs["dilation"]) == 1


def _keras_padding(x, ks, attrs) -> str:
    """The Keras padding mode: "same" where Keras pads exactly like the IR, else "valid" (pad first)."""
    pads = [tuple(p) for p in attrs["pads"]]
    sizes = spatial_shape(x.type.shape, attrs.get("channels_last", False))
    same = all(p == keras_same_pads(size, kk, s, d)
               for p, size, kk, s, d in zip(pads, sizes, ks, attrs["stride"], attrs["dilation"]))
    return "same" if same and any(p != (0, 0) for p in pads) else "valid"


def bias_expr(k, expr, b, rank, channels_last=False):
    """``expr`` plus a per-channel bias, or ``expr`` when there is none."""
    if b is None:
        return expr
    if channels_last:  # the channel axis is last: the bias broadcasts as it is
        return f"ops.add({expr}, {k.ref(b)})"
    return f"ops.add({expr}, ops.reshape({k.ref(b)}, {k.lit((1, -1) + (1,) * rank)}))"


def data_format(node) -> str:
    """Keras's ``data_format`` for a node with a ``channels_last`` attribute."""
    return "channels_last" if node.attrs.get("channels_last", False) else "channels_first"


@CONV.emits("keras-jax")
def _conv_to_keras(node, k):
    x, w, b = operands(node)
    a = node.attrs
    if not stored(k, w, b) or not layer_friendly(a):
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
              "data_format": data_format(node)}
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


def conv_options(k, stride, dilation, channels_last=False) -> str:
    """Keyword arguments shared by the ``ops.conv*`` calls, for inputs padded beforehand."""
    fmt = "channels_last" if channels_last else "channels_first"
    return (f"strides={k.lit(tuple(stride))}, padding=\"valid\", data_format=\"{fmt}\", "
            f"dilation_rate={k.lit(tuple(dilation))}")


def ops_conv_expr(k, node, src: str, weight: str, groups: int, options: str) -> str:
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
    options = conv_options(k, a["stride"], a["dilation"], last)
    if groups > 1 and cg == 1:  # depthwise: one op instead of one per channel
        perm = k.lit(tuple(range(2, 2 + rank)) + (0, 1))
        kernel = f"ops.transpose(ops.reshape({k.ref(w)}, {k.lit((groups, o // groups, *ks))}), {perm})"
        expr = f"ops.depthwise_conv({k.ref(src)}, {kernel}, {options})"
    else:
        expr = ops_conv_expr(k, node, k.ref(src), k.ref(w), groups, options)
    k.assign(node, bias_expr(k, expr, b, rank, last))


def per_axis(value, rank):
    """One int per spatial axis from an int or a list: ``per_axis(2, 2) == (2, 2)``."""
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(value * rank if len(value) == 1 else value)


@CONV.imports("torch", "aten::conv1d", "aten::conv2d", "aten::conv3d")
def conv_from_aten(call):
    """conv1d/2d/3d (and untransposed aten::convolution): int or "same"/"valid" padding."""
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    stride, dilation = per_axis(call.arg("stride", 1), rank), per_axis(call.arg("dilation", 1), rank)
    padding = call.arg("padding", 0)
    if padding == "same":
        pads = tuple(((d * (k - 1)) // 2, d * (k - 1) - (d * (k - 1)) // 2)
                     for k, d in zip(w.type.shape[2:], dilation))
    elif padding == "valid":
        pads = ((0, 0),) * rank
    else:
        pads = tuple((p, p) for p in per_axis(padding, rank))
    return call.emit(CONV, [x, w, b], {"stride": stride, "pads": pads, "dilation": dilation,
                                       "groups": call.arg("groups", 1)})
