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

from ..ir import REQUIRED, OpDef
from ._util import promote

__all__ = ["CONV", "CONV_TRANSPOSE", "conv_numpy", "keras_same_pads"]

CONV = OpDef("conv", ("x", "weight", "bias?"),
             {"stride": REQUIRED, "pads": REQUIRED, "dilation": REQUIRED, "groups": 1}, family="conv")


@CONV.infer
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


CONV.reference(conv_numpy)


def keras_same_pads(size, k, s, d):
    """The (begin, end) padding Keras uses for padding="same" on one axis."""
    out = -(-size // s)
    total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
    return (total // 2, total - total // 2)


def _operands(node):
    return (list(node.inputs) + [None])[:3]


def _stored(k, w, b):
    """True when weight and bias are stored arrays, so a Keras layer can own them."""
    return k.is_param(w) and (b is None or k.is_param(b))


def _layer_friendly(attrs):
    """Keras conv layers reject strides > 1 together with dilation_rate > 1; torch allows it."""
    return max(attrs["stride"]) == 1 or max(attrs["dilation"]) == 1


def _keras_padding(x, ks, attrs) -> str:
    """"same" when Keras would pad exactly like the IR pads, else "valid" (pad first)."""
    pads = [tuple(p) for p in attrs["pads"]]
    same = all(p == keras_same_pads(size, kk, s, d)
               for p, size, kk, s, d in zip(pads, x.type.shape[2:], ks, attrs["stride"], attrs["dilation"]))
    return "same" if same and any(p != (0, 0) for p in pads) else "valid"


def _bias_expr(k, expr, b, rank):
    if b is None:
        return expr
    return f"ops.add({expr}, ops.reshape({k.ref(b)}, {k.lit((1, -1) + (1,) * rank)}))"


@CONV.emits("keras-jax")
def _conv_to_keras(node, k):
    x, w, b = _operands(node)
    a = node.attrs
    if not _stored(k, w, b) or not _layer_friendly(a):
        _conv_as_ops(node, k)
        return
    weight = k.param(w)
    rank, (o, cg, *ks) = len(a["stride"]), weight.shape
    cin = cg * a["groups"]
    padding = _keras_padding(x, ks, a)
    src = x
    if padding == "valid" and any(tuple(p) != (0, 0) for p in a["pads"]):
        src = k.pad_value(node, x, a["pads"])
    common = {"kernel_size": tuple(ks), "strides": tuple(a["stride"]), "padding": padding,
              "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None,
              "data_format": "channels_first"}
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


def _conv_as_ops(node, k):
    """``ops.conv`` with the kernel transposed in the graph: computed weights, stride with dilation.

    Symbolic ``ops.conv`` rejects grouped kernels, so depthwise convolutions use
    ``ops.depthwise_conv`` and other groups are split, convolved and concatenated.
    """
    x, w, b = _operands(node)
    a = node.attrs
    rank, groups, (o, cg, *ks) = len(a["stride"]), a["groups"], w.type.shape
    src = k.pad_value(node, x, a["pads"]) if any(tuple(p) != (0, 0) for p in a["pads"]) else x
    perm = k.lit(tuple(range(2, 2 + rank)) + (1, 0))
    options = (f"strides={k.lit(tuple(a['stride']))}, padding=\"valid\", data_format=\"channels_first\", "
               f"dilation_rate={k.lit(tuple(a['dilation']))}")
    weight = k.ref(w)
    if groups == 1:
        expr = f"ops.conv({k.ref(src)}, ops.transpose({weight}, {perm}), {options})"
    elif cg == 1:
        depthwise_perm = k.lit(tuple(range(2, 2 + rank)) + (0, 1))
        kernel = f"ops.transpose(ops.reshape({weight}, {k.lit((groups, o // groups, *ks))}), {depthwise_perm})"
        expr = f"ops.depthwise_conv({k.ref(src)}, {kernel}, {options})"
    else:
        parts, og = k.temp(node, f"ops.split({k.ref(src)}, {groups}, axis=1)", "groups"), o // groups
        expr = "ops.concatenate([" + ", ".join(
            f"ops.conv({parts}[{g}], ops.transpose({weight}[{g * og}:{(g + 1) * og}], {perm}), {options})"
            for g in range(groups)) + "], axis=1)"
    k.assign(node, _bias_expr(k, expr, b, rank))


def _spatial(value, rank):
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(value * rank if len(value) == 1 else value)


@CONV.imports("torch", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution")
def _conv_from_aten(call):
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    if call.arg("transposed", False):
        return _conv_transpose_from_aten(call)
    stride, dilation = _spatial(call.arg("stride", 1), rank), _spatial(call.arg("dilation", 1), rank)
    padding = call.arg("padding", 0)
    if padding == "same":
        pads = tuple(((d * (k - 1)) // 2, d * (k - 1) - (d * (k - 1)) // 2)
                     for k, d in zip(w.type.shape[2:], dilation))
    elif padding == "valid":
        pads = ((0, 0),) * rank
    else:
        pads = tuple((p, p) for p in _spatial(padding, rank))
    return call.emit(CONV, [x, w, b], {"stride": stride, "pads": pads, "dilation": dilation,
                                       "groups": call.arg("groups", 1)})


CONV_TRANSPOSE = OpDef("conv_transpose", ("x", "weight", "bias?"),
                       {"stride": REQUIRED, "padding": REQUIRED, "output_padding": REQUIRED,
                        "dilation": REQUIRED, "groups": 1}, family="conv",
                       doc="torch ConvTranspose semantics; weight is (in, out/groups, *kernel).")


@CONV_TRANSPOSE.infer
def _conv_transpose_type(x, weight, bias=None, *, stride, padding, output_padding, dilation, groups):
    n, c, *spatial = x.shape
    if c != weight.shape[0]:
        raise ValueError(f"conv_transpose: {c} channels do not match weight {weight.shape}")
    out = [(size - 1) * s - 2 * p + d * (k - 1) + op + 1 for size, k, s, p, op, d in
           zip(spatial, weight.shape[2:], stride, padding, output_padding, dilation)]
    return x.with_shape((n, weight.shape[1] * groups, *out)).with_dtype(promote(x, weight))


@CONV_TRANSPOSE.reference
def _conv_transpose_numpy(x, weight, bias=None, *, stride, padding, output_padding, dilation, groups):
    n, c, *spatial = x.shape
    ks = weight.shape[2:]
    full = [(size - 1) * s + d * (k - 1) + 1 + op for size, k, s, op, d in
            zip(spatial, ks, stride, output_padding, dilation)]
    og = weight.shape[1]
    cg = c // groups
    y = np.zeros((n, og * groups, *full))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = weight[g * cg:(g + 1) * cg].astype(np.float64)
        for idx in np.ndindex(*ks):
            sl = tuple(slice(idx[i] * dilation[i], idx[i] * dilation[i] + stride[i] * (spatial[i] - 1) + 1,
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

    Keras (JAX) pads the dilated input by (k - 1, k - 1 + output_padding): torch's full output
    before cropping, but only when output_padding is given; its default differs for stride > kernel.
    """
    x, w, b = _operands(node)
    a = node.attrs
    if not (_stored(k, w, b) and _layer_friendly(a) and a["groups"] == 1
            and all(op < s for op, s in zip(a["output_padding"], a["stride"]))):
        _conv_transpose_as_ops(node, k)
        return
    rank, weight = len(a["stride"]), k.param(w)
    kernel = weight.transpose(tuple(range(2, 2 + rank)) + (1, 0))
    kwargs = {"filters": int(weight.shape[1]), "kernel_size": tuple(weight.shape[2:]),
              "strides": tuple(a["stride"]), "padding": "valid", "output_padding": tuple(a["output_padding"]),
              "dilation_rate": tuple(a["dilation"]), "use_bias": b is not None, "data_format": "channels_first"}
    bias = [k.param(b)] if b is not None else []
    if not any(a["padding"]):
        k.layer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias)
        return
    full = k.sublayer(node, f"Conv{rank}DTranspose", kwargs, [x], [kernel] + bias)
    k.crop(node, full, a["padding"])


def _conv_transpose_as_ops(node, k):
    """``ops.conv_transpose`` per group (it has no groups), concatenated, then cropped."""
    x, w, b = _operands(node)
    a = node.attrs
    rank, groups = len(a["stride"]), a["groups"]
    perm, cg = k.lit(tuple(range(2, 2 + rank)) + (1, 0)), x.type.shape[1] // groups
    options = (f"strides={k.lit(tuple(a['stride']))}, padding=\"valid\", "
               f"output_padding={k.lit(tuple(a['output_padding']))}, data_format=\"channels_first\", "
               f"dilation_rate={k.lit(tuple(a['dilation']))}")
    weight = k.ref(w)
    if groups == 1:
        expr = f"ops.conv_transpose({k.ref(x)}, ops.transpose({weight}, {perm}), {options})"
    else:
        parts = k.temp(node, f"ops.split({k.ref(x)}, {groups}, axis=1)", "groups")
        outs = [f"ops.conv_transpose({parts}[{g}], ops.transpose({weight}[{g * cg}:{(g + 1) * cg}], {perm}), "
                f"{options})" for g in range(groups)]
        expr = "ops.concatenate([" + ", ".join(outs) + "], axis=1)"
    expr = _bias_expr(k, expr, b, rank)
    if any(a["padding"]):
        k.crop(node, k.temp(node, expr, "full"), a["padding"])
    else:
        k.assign(node, expr)


def _conv_transpose_from_aten(call):
    x, w, b = call.arg("input"), call.arg("weight"), call.arg("bias")
    rank = w.type.rank - 2
    attrs = {"stride": _spatial(call.arg("stride", 1), rank), "padding": _spatial(call.arg("padding", 0), rank),
             "output_padding": _spatial(call.arg("output_padding", 0), rank),
             "dilation": _spatial(call.arg("dilation", 1), rank), "groups": call.arg("groups", 1)}
    return call.emit(CONV_TRANSPOSE, [x, w, b], attrs)


CONV_TRANSPOSE.imports("torch", "aten::conv_transpose1d", "aten::conv_transpose2d",
                       "aten::conv_transpose3d")(_conv_transpose_from_aten)
