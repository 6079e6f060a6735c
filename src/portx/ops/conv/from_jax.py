"""JAX import rules for conv_general_dilated and dot_general.

conv_general_dilated: the operand is permuted into (N, C, spatial...) by ``lhs_spec``, the kernel
into torch's (O, I/groups, k...) by ``rhs_spec`` (in NumPy, once, when it is a weight), and the
result back by ``out_spec``; the layout pass cancels the permutes around channels-last code.
``lhs_dilation`` (what ``lax.conv_transpose`` and Keras' Conv*Transpose trace to) is a torch
transposed convolution with padding ``d*(k-1) - low`` and output padding ``high - low``, whose
kernel is the flipped, in/out-swapped forward kernel; it needs a stored kernel.

dot_general: with no batch axes and a weight on the right it is ``linear`` (the weight stored as
(out, in)); otherwise both sides are permuted to (batch..., M, K) @ (batch..., K, N) and the
result reshaped to JAX's (batch..., lhs free..., rhs free...).

Example:
    dot_general[(([1], [0]), ([], []))](%x, %dense.kernel) -> linear(%x, %dense.weight) {}
"""
from __future__ import annotations

import math

import numpy as np

from .._jax import arranged, inverse, permuted, reshaped
from ..conv import CONV
from ..conv.transpose import CONV_TRANSPOSE
from ..linear import LINEAR, MATMUL
from ..pad import PAD

__all__ = []


def _conv_operands(call):
    """x as (N, C, spatial...); the attributes the IR conv and conv_transpose share."""
    p = call.params
    if p.get("batch_group_count", 1) != 1:
        call.unsupported("convolution with batch_group_count > 1 (a weight-gradient form)")
    dn = p["dimension_numbers"]
    x = permuted(call, call.input(0), dn.lhs_spec)
    pads = tuple(tuple(int(v) for v in pair) for pair in p["padding"])
    return dn, x, pads, tuple(int(s) for s in p["window_strides"]), tuple(int(d) for d in p["rhs_dilation"])


@CONV.imports("jax", "conv_general_dilated")
def _conv_general_from_jax(call):
    dn, x, pads, stride, dilation = _conv_operands(call)
    groups = int(call.params["feature_group_count"])
    if any(d != 1 for d in call.params["lhs_dilation"]):
        y = _transposed(call, x, pads, stride, dilation, groups)
    else:
        crop = tuple((min(lo, 0), min(hi, 0)) for lo, hi in pads)
        if any(c != (0, 0) for c in crop):  # negative padding crops the input first
            x = call.emit(PAD, [x], {"pads": ((0, 0), (0, 0)) + crop})
        w = arranged(call, 1, perm=dn.rhs_spec)
        attrs = {"stride": stride, "pads": tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads),
                 "dilation": dilation, "groups": groups}
        y = call.emit(CONV, [x, w], attrs)
    return permuted(call, y, inverse(dn.out_spec))


def _transposed(call, x, pads, stride, dilation, groups):
    """``lhs_dilation`` = s: torch conv_transpose (module docstring); its end is cropped where high < low."""
    if any(s != 1 for s in stride):
        call.unsupported("convolution with both input dilation and window strides")
    s = tuple(int(v) for v in call.params["lhs_dilation"])
    dn = call.params["dimension_numbers"]
    ks = [call.in_type(1).shape[i] for i in dn.rhs_spec[2:]]
    padding, out_pad, crop = [], [], []
    for (lo, hi), k, d, si in zip(pads, ks, dilation, s):
        if not 0 <= lo <= d * (k - 1) or hi - lo >= max(si, d):
            call.unsupported(f"input-dilated convolution with padding {(lo, hi)} has no transposed-conv form")
        padding.append(d * (k - 1) - lo)
        out_pad.append(max(hi - lo, 0))
        crop.append((0, min(hi - lo, 0)))  # high < low: the transposed conv runs low - high too long

    def torch_kernel(w):  # (O, I/g, k...) -> (I, O/g, k...) flipped
        o, ig, *k = w.shape
        w = w.reshape(groups, o // groups, ig, *k).swapaxes(1, 2).reshape(ig * groups, o // groups, *k)
        return np.ascontiguousarray(np.flip(w, axis=tuple(range(2, w.ndim))))

    w = arranged(call, 1, perm=dn.rhs_spec, fn=torch_kernel)
    y = call.emit(CONV_TRANSPOSE, [x, w], {"stride": s, "padding": tuple(padding), "output_padding": tuple(out_pad),
                                           "dilation": dilation, "groups": groups})
    if any(c != (0, 0) for c in crop):
        y = call.emit(PAD, [y], {"pads": ((0, 0), (0, 0)) + tuple(crop)})
    return y


@MATMUL.imports("jax", "dot_general")
def _dot_general_from_jax(call):
    (lc, rc), (lb, rb) = call.params["dimension_numbers"]
    a, b = call.in_type(0), call.in_type(1)
    lc, rc, lb, rb = (tuple(int(i) for i in t) for t in (lc, rc, lb, rb))
    lfree = [i for i in range(a.rank) if i not in lc and i not in lb]
    rfree = [i for i in range(b.rank) if i not in rc and i not in rb]
    k = math.prod(a.shape[i] for i in lc)
    lshape, rshape = [a.shape[i] for i in lfree], [b.shape[i] for i in rfree]
    n = math.prod(rshape)
    if not lb and call.const_value(1) is not None:
        x = reshaped(call, permuted(call, call.input(0), lfree + list(lc)), (*lshape, k))
        w = arranged(call, 1, perm=rfree + list(rc), shape=(n, k))
        y = call.emit(LINEAR, [x, w])
    else:
        batch = [a.shape[i] for i in lb]
        x = reshaped(call, permuted(call, call.input(0), list(lb) + lfree + list(lc)),
                     (*batch, math.prod(lshape), k))
        w = arranged(call, 1, perm=list(rb) + list(rc) + rfree, shape=(*batch, k, n))
        y = call.emit(MATMUL, [x, w])
    return reshaped(call, y, call.out_type().shape)
