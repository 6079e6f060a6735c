"""ONNX import rules for reductions, ArgMax/ArgMin, Softmax/LogSoftmax and CumSum.

Reduce* axes come from the attribute (before opset 18) or the second input (always for ReduceSum from 13),
``keepdims`` defaults to 1, and empty axes reduce everything unless ``noop_with_empty_axes``. ReduceL1,
ReduceL2, ReduceSumSquare and ReduceLogSum are compositions. ONNX keeps an integer sum's dtype, where the
IR widens as torch does, so the result is cast back.

Example:
    ReduceMean(%x, axes=[-1]) {keepdims=1} -> mean(%x) {axes=(2,), keepdims=True}
"""
from __future__ import annotations

import numpy as np

from .._util import norm_axes, norm_axis
from ..elementwise import BINARY, CAST
from ..elementwise.unary import UNARY
from ..reduce import ARGMAX, ARGMIN, CUMSUM, LOG_SOFTMAX, REDUCE, SOFTMAX, VECTOR_NORM
from ..shape.index import FLIP

__all__ = []

#: ONNX op -> (IR op name, what is done to the input first, what to the result)
_REDUCE = {"ReduceSum": ("sum", None, None), "ReduceMean": ("mean", None, None), "ReduceMax": ("amax", None, None),
           "ReduceMin": ("amin", None, None), "ReduceProd": ("prod", None, None),
           "ReduceLogSumExp": ("logsumexp", None, None), "ReduceL1": ("sum", "abs", None),
           "ReduceSumSquare": ("sum", "square", None), "ReduceLogSum": ("sum", None, "log")}


def _reduce_axes(call, x):
    """The axes to reduce, or None for "no reduction" (empty axes with noop_with_empty_axes)."""
    if call.has_input(1):
        axes = call.ints(1, "axes")
    else:
        axes = tuple(call.attr("axes") or ())
    if not axes:
        return None if call.attr("noop_with_empty_axes", 0) else tuple(range(x.type.rank))
    return norm_axes(axes, x.type.rank)


@REDUCE["sum"].imports("onnx", *_REDUCE, "ReduceL2")
def _reduce_from_onnx(call):
    x = call.input(0)
    axes = _reduce_axes(call, x)
    keepdims = bool(call.attr("keepdims", 1))
    if call.op_type == "ReduceL2":
        if axes is None:
            return x
        return call.emit(VECTOR_NORM, [x], {"axes": axes, "keepdims": keepdims, "ord": 2.0})
    name, before, after = _REDUCE[call.op_type]
    if before == "abs":
        x = call.emit(UNARY["abs"], [x])
    elif before == "square":
        x = call.emit(BINARY["mul"], [x, x])
    if axes is None:
        return x
    y = call.emit(REDUCE[name], [x], {"axes": axes, "keepdims": keepdims})
    if after == "log":
        y = call.emit(UNARY["log"], [y])
    return y if y.type.dtype == x.type.dtype else call.emit(CAST, [y], {"dtype": x.type.dtype})


@ARGMAX.imports("onnx", "ArgMax")
@ARGMIN.imports("onnx", "ArgMin")
def _argmax_from_onnx(call):
    """``select_last_index=1`` is the first index of the flipped axis, counted from the end."""
    x = call.input(0)
    op = ARGMAX if call.op_type == "ArgMax" else ARGMIN
    axis = norm_axis(call.attr("axis", 0), x.type.rank)
    attrs = {"axis": axis, "keepdims": bool(call.attr("keepdims", 1))}
    if not call.attr("select_last_index", 0):
        return call.emit(op, [x], attrs)
    found = call.emit(op, [call.emit(FLIP, [x], {"axes": (axis,)})], attrs)
    return call.emit(BINARY["sub"], [call.const(np.asarray(x.type.shape[axis] - 1, dtype=found.type.dtype)), found])


@SOFTMAX.imports("onnx", "Softmax")
@LOG_SOFTMAX.imports("onnx", "LogSoftmax")
def _softmax_from_onnx(call):
    """Opset 13+: one axis (default -1)."""
    x = call.input(0)
    op = SOFTMAX if call.op_type == "Softmax" else LOG_SOFTMAX
    return call.emit(op, [x], {"axis": norm_axis(call.attr("axis", -1), x.type.rank)})


@CUMSUM.imports("onnx", "CumSum")
def _cumsum_from_onnx(call):
    """``exclusive`` subtracts each element from its running sum; ``reverse`` sums from the end."""
    x = call.input(0)
    axis = norm_axis(call.ints(1, "axis")[0], x.type.rank)
    y = call.emit(CUMSUM, [x], {"axis": axis, "reverse": bool(call.attr("reverse", 0))})
    return call.emit(BINARY["sub"], [y, x]) if call.attr("exclusive", 0) else y
