"""Convolutions (N-d, NC... layout): conv and conv_transpose, with torch's weight layouts.

This module declares the two ops with their shape rules and NumPy references, plus the helpers
several direction modules share. The rules live beside it: ``from_torch.py`` (aten::conv*),
``from_keras.py`` (Conv*D layers), ``from_jax.py`` (conv_general_dilated), ``to_keras.py`` and
``to_torch.py``. Padding is stored as explicit (begin, end) pairs per spatial axis, so "same" and
asymmetric paddings have one form; ``keras_same_pads`` says which pairs Keras's "same" means.

Example IR:
    %y: float32[1x8x8x8] = conv(%x, %conv.weight, %conv.bias) {stride=(1, 1), pads=((1, 1), (1, 1)),
        dilation=(1, 1), groups=1}  # conv
    %y: float32[1x4x8x8] = conv_transpose(%x, %up.weight, %up.bias) {dilation=(1, 1), groups=1,
        output_padding=(1, 1), padding=(1, 1), stride=(2, 2)}  # up
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last, promote

__all__ = ["CONV", "CONV_TRANSPOSE", "conv_numpy", "conv_transpose_numpy", "keras_same_pads", "operands", "stored"]

CONV = OpDef("conv", ("x", "weight", "bias?"),
             {"stride": REQUIRED, "pads": REQUIRED, "dilation": REQUIRED, "groups": 1, "channels_last": False},
             family="conv", doc="channels_last: x and y are (N, *spatial, C); the weight stays (O, I/groups, *k).")

CONV_TRANSPOSE = OpDef("conv_transpose", ("x", "weight", "bias?"),
                       {"stride": REQUIRED, "padding": REQUIRED, "output_padding": REQUIRED,
                        "dilation": REQUIRED, "groups": 1, "channels_last": False}, family="conv",
                       doc="torch ConvTranspose semantics; weight is (in, out/groups, *kernel). "
                           "channels_last: x and y are (N, *spatial, C).")


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
    """N-d convolution in float64: one BLAS product per kernel offset and group (a depthwise conv: a broadcast
    product), so the per-node trace of a ResNet-50 runs its 53 convs in well under a second.

    Example: ``conv_numpy(x, w, stride=(1, 1), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1)``.
    """
    x64 = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n = x.shape[0]
    o, cg, *ks = weight.shape
    og = o // groups
    spatial = [(x64.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(len(ks))]
    xg = x64.reshape(n, groups, cg, *x64.shape[2:])
    wg = weight.astype(np.float64).reshape(groups, og, cg, *ks)
    y = np.zeros((groups, og, n * int(np.prod(spatial))))
    for idx in np.ndindex(*ks):
        sl = tuple(slice(idx[i] * dilation[i], idx[i] * dilation[i] + stride[i] * (spatial[i] - 1) + 1,
                         stride[i]) for i in range(len(ks)))
        cols = np.moveaxis(xg[(slice(None),) * 3 + sl], 0, 2).reshape(groups, cg, -1)  # g, cg, n * spatial
        taps = wg[(slice(None),) * 3 + idx]  # g, og, cg
        y += taps * cols if cg == 1 else np.matmul(taps, cols)
    y = np.moveaxis(y.reshape(o, n, *spatial), 1, 0)
    if bias is not None:
        y = y + bias.reshape((1, -1) + (1,) * len(ks))
    return y.astype(x.dtype)


CONV.reference(honors_channels_last(conv_numpy))


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
    """Scatter-add form of torch's transposed convolution, in float64.

    Example: ``conv_transpose_numpy(x, w, stride=(2,), padding=(1,), output_padding=(1,), dilation=(1,), groups=1)``.
    """
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


# -- helpers shared by the direction modules (and pool's "same" rule) --------------------------------
def keras_same_pads(size, k, s, d):
    """The (begin, end) padding Keras uses for padding="same" on one axis.

    Example: ``keras_same_pads(9, 3, 2, 1) == (1, 1)``; ``keras_same_pads(8, 3, 2, 1) == (0, 1)``.
    """
    out = -(-size // s)
    total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
    return (total // 2, total - total // 2)


def operands(node):
    """(x, weight, bias) of a conv or conv_transpose node; bias is None when absent.

    Example: ``x, w, b = operands(node)``.
    """
    return (list(node.inputs) + [None])[:3]


def stored(k, w, b):
    """True when weight and bias are stored arrays that no other node reads, so a Keras layer or torch
    module can own them (``ownable``). Example: ``stored(k, w, None)`` is ``k.ownable(w)``.
    """
    return k.ownable(w) and k.ownable(b)
