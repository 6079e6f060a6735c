"""ONNX import rules for normalizations: BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization (opset 21: per-channel scale), RMSNormalization, LpNormalization and
MeanVarianceNormalization (compositions).

Inference only: BatchNormalization with ``training_mode=1`` is refused. LayerNormalization's Mean and
InvStdDev outputs, where read, are computed beside it. ONNX normalizes over the axes from
``axis`` to the end, as torch's ``normalized_shape``; a scale or bias that only broadcasts there is expanded
to that shape first.

Example:
    BatchNormalization(%x, %s, %b, %m, %v) {epsilon=1e-5} -> batch_norm(%x, %s, %b, %m, %v) {eps=1e-05}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from .._util import norm_axis
from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM, RMS_NORM
from ..elementwise import BINARY, WHERE
from ..elementwise.unary import UNARY
from ..reduce import REDUCE, VAR, VECTOR_NORM
from ..shape import EXPAND

__all__ = []


@BATCH_NORM.imports("onnx", "BatchNormalization")
def _batch_norm_from_onnx(call):
    if call.attr("training_mode", 0):
        call.unsupported("training_mode=1 (batch statistics) is not an inference graph; export in eval mode")
    momentum = float(call.attr("momentum", 0.9))
    return call.emit(BATCH_NORM, call.inputs()[:5], {"eps": float(call.attr("epsilon", 1e-5)),
                                                      "momentum": round(1.0 - momentum, 12)})


def _affine_operand(call, index, shape):
    """Input ``index`` (scale or bias) at the normalized ``shape`` (a constant reshaped, else expanded)."""
    if not call.has_input(index):
        return None
    const = call.constant(index)
    if const is not None:
        return call.rearranged(index, np.ascontiguousarray(np.broadcast_to(const, shape)))
    value = call.input(index)
    return value if tuple(value.type.shape) == shape else call.emit(EXPAND, [value], {"shape": shape})


@LAYER_NORM.imports("onnx", "LayerNormalization", "RMSNormalization")
def _layer_norm_from_onnx(call):
    """Normalize over axes ``axis..-1`` (LayerNormalization's extra outputs, mean and inv std, are not read)."""
    x = call.input(0)
    axis = norm_axis(call.attr("axis", -1), x.type.rank)
    shape = tuple(x.type.shape[axis:])
    eps = float(call.attr("epsilon", 1e-5))
    weight = _affine_operand(call, 1, shape)
    if call.op_type == "RMSNormalization":
        return call.emit(RMS_NORM, [x, weight], {"normalized_shape": shape, "eps": eps})
    y = call.emit(LAYER_NORM, [x, weight, _affine_operand(call, 2, shape)], {"normalized_shape": shape, "eps": eps})
    if not (call.output_read(1) or call.output_read(2)):
        return y
    axes = tuple(range(axis, x.type.rank))
    mean = call.emit(REDUCE["mean"], [x], {"axes": axes, "keepdims": True})
    var = call.emit(VAR, [x], {"axes": axes, "keepdims": True, "correction": 0.0})
    eps_value = call.const(np.asarray(eps, dtype=var.type.dtype), "eps")
    return [y, mean, call.emit(UNARY["rsqrt"], [call.emit(BINARY["add"], [var, eps_value])])]


@GROUP_NORM.imports("onnx", "InstanceNormalization", "GroupNormalization")
def _group_norm_from_onnx(call):
    """InstanceNormalization is group_norm with one group per channel."""
    x = call.input(0)
    channels = x.type.shape[1]
    groups = channels if call.op_type == "InstanceNormalization" else int(call.attr("num_groups"))
    scale, bias = call.constant(1), call.constant(2)
    if call.op_type == "GroupNormalization" and call.opset < 21:
        if scale is None or bias is None:
            call.unsupported("GroupNormalization (opset 18) with a per-group scale computed from data")
        weight, shift = (call.rearranged(i, np.repeat(a, channels // groups)) for i, a in ((1, scale), (2, bias)))
    else:
        weight, shift = call.input(1), call.input(2)
    return call.emit(GROUP_NORM, [x, weight, shift], {"groups": groups, "eps": float(call.attr("epsilon", 1e-5))})


@imports("onnx", "LpNormalization", "MeanVarianceNormalization")
def _lp_norm_from_onnx(call):
    """x / ||x||_p along ``axis``; MeanVarianceNormalization: (x - mean) / (std + 1e-9) over ``axes``."""
    x = call.input(0)
    if call.op_type == "LpNormalization":
        axes = (norm_axis(call.attr("axis", -1), x.type.rank),)
        size = call.emit(VECTOR_NORM, [x], {"axes": axes, "keepdims": True, "ord": float(call.attr("p", 2))})
        one, zero = (call.const(np.asarray(v, dtype=size.type.dtype)) for v in (1, 0))
        size = call.emit(WHERE, [call.emit(BINARY["eq"], [size, zero]), one, size])  # a zero vector stays zero
        return call.emit(BINARY["div"], [x, size])
    axes = tuple(a % x.type.rank for a in (call.attr("axes") or (0, 2, 3)))
    centred = call.emit(BINARY["sub"], [x, call.emit(REDUCE["mean"], [x], {"axes": axes, "keepdims": True})])
    spread = call.emit(UNARY["sqrt"], [call.emit(VAR, [x], {"axes": axes, "keepdims": True, "correction": 0.0})])
    eps = call.const(np.asarray(1e-9, dtype=spread.type.dtype), "eps")
    return call.emit(BINARY["div"], [centred, call.emit(BINARY["add"], [spread, eps])])
