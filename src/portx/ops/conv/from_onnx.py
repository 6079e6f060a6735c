"""ONNX import rules for Conv and ConvTranspose (1-D, 2-D and 3-D).

ONNX lists pads as all begins then all ends (``[x1_begin, x2_begin, x1_end, x2_end]``) and may ask for
``auto_pad`` SAME_UPPER/SAME_LOWER/VALID instead. Conv takes the (begin, end) pairs as they are. A
ConvTranspose with unequal begin and end pads (or an ``output_shape``) is the symmetric op followed by a
crop of the difference. Weight layouts are ONNX's = torch's = the IR's.

Example:
    Conv(%x, %W, %b) {pads=[1, 1, 1, 1], strides=[2, 2]} ->
    conv(%x, %W, %b) {stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1}
"""
from __future__ import annotations

from ..conv import CONV, CONV_TRANSPOSE
from ..shape.index import SLICE

__all__ = ["onnx_pads", "same_pads"]


def onnx_pads(call, rank):
    """The ``pads`` attribute as (begin, end) pairs, one per spatial axis (zeros when absent)."""
    flat = call.attr("pads") or (0,) * (2 * rank)
    return tuple((int(flat[i]), int(flat[i + rank])) for i in range(rank))


def same_pads(sizes, kernel, stride, dilation, upper=True):
    """auto_pad SAME_UPPER (the extra pad at the end) or SAME_LOWER: out = ceil(in / stride)."""
    pairs = []
    for n, k, s, d in zip(sizes, kernel, stride, dilation):
        total = max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
        small = total // 2
        pairs.append((small, total - small) if upper else (total - small, small))
    return tuple(pairs)


def window(call, sizes, kernel):
    """(stride, dilation, pads) of a Conv-like node with spatial ``sizes`` and ``kernel``."""
    rank = len(kernel)
    stride = tuple(call.attr("strides") or (1,) * rank)
    dilation = tuple(call.attr("dilations") or (1,) * rank)
    auto = call.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return stride, dilation, same_pads(sizes, kernel, stride, dilation, auto == "SAME_UPPER")
    if auto == "VALID":
        return stride, dilation, ((0, 0),) * rank
    return stride, dilation, onnx_pads(call, rank)


@CONV.imports("onnx", "Conv")
def _conv_from_onnx(call):
    x, w = call.input(0), call.input(1)
    stride, dilation, pads = window(call, x.type.shape[2:], w.type.shape[2:])
    return call.emit(CONV, [x, w, call.input(2)], {"stride": stride, "pads": pads, "dilation": dilation,
                                                    "groups": int(call.attr("group", 1))})


def _transpose_pads(call, sizes, kernel, stride, dilation, extra):
    """(begin, end) pads of a ConvTranspose: given, or from ``output_shape`` / auto_pad (ONNX's formulas)."""
    rank, auto = len(kernel), call.attr("auto_pad", "NOTSET")
    target = call.attr("output_shape")
    if target is None and auto not in ("SAME_UPPER", "SAME_LOWER"):
        return onnx_pads(call, rank) if auto != "VALID" else ((0, 0),) * rank
    target = tuple(target[-rank:]) if target is not None else tuple(n * s for n, s in zip(sizes, stride))
    pairs = []
    for n, k, s, d, op, want in zip(sizes, kernel, stride, dilation, extra, target):
        total = s * (n - 1) + op + (k - 1) * d + 1 - want
        if total < 0:
            call.unsupported(f"output_shape {tuple(target)} is larger than the full transposed convolution")
        pairs.append((total // 2, total - total // 2) if auto == "SAME_UPPER" else (total - total // 2, total // 2))
    return tuple(pairs)


@CONV_TRANSPOSE.imports("onnx", "ConvTranspose")
def _conv_transpose_from_onnx(call):
    """Symmetric pads map directly; the rest is cropped after (ONNX allows what torch cannot say)."""
    x, w = call.input(0), call.input(1)
    kernel, rank = w.type.shape[2:], w.type.rank - 2
    stride = tuple(call.attr("strides") or (1,) * rank)
    dilation = tuple(call.attr("dilations") or (1,) * rank)
    extra = tuple(call.attr("output_padding") or (0,) * rank)
    pads = _transpose_pads(call, x.type.shape[2:], kernel, stride, dilation, extra)
    padding = tuple(min(lo, hi) for lo, hi in pads)
    y = call.emit(CONV_TRANSPOSE, [x, w, call.input(2)], {
        "stride": stride, "padding": padding, "output_padding": extra, "dilation": dilation,
        "groups": int(call.attr("group", 1))})
    for axis, ((lo, hi), p) in enumerate(zip(pads, padding), start=2):
        if lo != hi:
            size = y.type.shape[axis]
            y = call.emit(SLICE, [y], {"axis": axis, "start": lo - p, "end": size - (hi - p), "step": 1})
    return y
