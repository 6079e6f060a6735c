"""JAX import rule for conv_general_dilated.

conv_general_dilated: the operand is permuted into (N, C, spatial...) by ``lhs_spec``, the kernel
into torch's (O, I/groups, k...) by ``rhs_spec`` (in NumPy, once, when it is a weight), and the
result back by ``out_spec``; the layout pass cancels the permutes around channels-last code.
``lhs_dilation`` (what ``lax.conv_transpose`` and Keras' Conv*Transpose trace to) is a torch
transposed convolution with padding ``d*(k-1) - low`` and output padding ``high - low``, whose
kernel is the flipped, in/out-swapped forward kernel; it needs a stored kernel.

Example:
    conv_general_dilated(%x, %conv.kernel) -> permute -> conv(%x_nchw, %conv.weight) -> permute
"""
from __future__ import annotations

import numpy as np

from .._jax import arranged, inverse, permuted
from ..conv import CONV, CONV_TRANSPOSE
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
