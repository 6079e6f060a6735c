"""ONNX import rules for pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.

Windows, strides, pads (begins then ends), dilations and ``auto_pad`` read as Conv's do; ``ceil_mode`` and
``count_include_pad`` are torch's meanings. MaxPool's second output (argmax indices) is refused.

Example:
    MaxPool(%x) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]} ->
    max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1)}
"""
from __future__ import annotations

from ..conv.from_onnx import window
from ..pool import AVG_POOL, MAX_POOL
from ..reduce import REDUCE

__all__ = []


@MAX_POOL.imports("onnx", "MaxPool")
@AVG_POOL.imports("onnx", "AveragePool")
def _pool_from_onnx(call):
    x = call.input(0)
    if call.output_read(1):
        call.unsupported("the Indices output of MaxPool is read")
    if call.attr("storage_order", 0):
        call.unsupported("storage_order=1 (column-major indices)")
    kernel = tuple(call.attr("kernel_shape"))
    stride, dilation, pads = window(call, x.type.shape[2:], kernel)
    attrs = {"kernel": kernel, "stride": stride, "pads": pads, "ceil_mode": bool(call.attr("ceil_mode", 0))}
    if call.op_type == "MaxPool":
        return call.emit(MAX_POOL, [x], {**attrs, "dilation": dilation})
    if any(d != 1 for d in dilation):
        call.unsupported(f"AveragePool with dilations {dilation}")
    return call.emit(AVG_POOL, [x], {**attrs, "count_include_pad": bool(call.attr("count_include_pad", 0))})


@REDUCE["mean"].imports("onnx", "GlobalAveragePool")
@REDUCE["amax"].imports("onnx", "GlobalMaxPool")
def _global_pool_from_onnx(call):
    """The mean (or max) over every spatial axis, kept as size 1."""
    x = call.input(0)
    op = REDUCE["mean" if call.op_type == "GlobalAveragePool" else "amax"]
    return call.emit(op, [x], {"axes": tuple(range(2, x.type.rank)), "keepdims": True})
