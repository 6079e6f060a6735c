"""ONNX import rules for elementwise ops the IR writes as compositions: Mod, Xor, Sinh, Cosh, Tan, Swish,
Hardmax and OneHot.

Example:
    Mod(%a, %b) {fmod=1} -> sub(%a, mul(div(%a, %b) {rounding_mode="trunc"}, %b))
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY, CAST, WHERE
from ..elementwise.from_onnx import scalar
from ..elementwise.unary import UNARY
from ..reduce import ARGMAX
from ..shape.from_onnx import reshaped
from .._util import norm_axis

__all__ = []


@imports("onnx", "Mod")
def _mod_from_onnx(call):
    """fmod=1: C's fmod (the sign of the dividend); fmod=0 (integers): Python's % (the sign of the divisor)."""
    a, b = call.input(0), call.input(1)
    mode = "trunc" if call.attr("fmod", 0) else "floor"
    quotient = call.emit(BINARY["div"], [a, b], {"rounding_mode": mode})
    return call.emit(BINARY["sub"], [a, call.emit(BINARY["mul"], [quotient, b])])


@imports("onnx", "Xor")
def _xor_from_onnx(call):
    return call.emit(BINARY["bitwise_xor"], [call.input(0), call.input(1)])


@imports("onnx", "Sinh", "Cosh", "Tan", "Swish")
def _trig_from_onnx(call):
    """sinh/cosh from exp; tan = sin / cos; Swish = x * sigmoid(alpha * x)."""
    x = call.input(0)
    if call.op_type == "Tan":
        return call.emit(BINARY["div"], [call.emit(UNARY["sin"], [x]), call.emit(UNARY["cos"], [x])])
    if call.op_type == "Swish":
        alpha = float(call.attr("alpha", 1.0))
        scaled = x if alpha == 1 else call.emit(BINARY["mul"], [x, scalar(call, alpha, x)])
        return call.emit(BINARY["mul"], [x, call.emit(UNARY["sigmoid"], [scaled])])
    up, down = call.emit(UNARY["exp"], [x]), call.emit(UNARY["exp"], [call.emit(UNARY["neg"], [x])])
    both = call.emit(BINARY["sub" if call.op_type == "Sinh" else "add"], [up, down])
    return call.emit(BINARY["mul"], [both, scalar(call, 0.5, x)])


def _iota(call, n, axis, rank, dtype):
    """arange(n) shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[axis] = n
    return call.const(np.arange(n, dtype=dtype).reshape(shape), "iota")


@imports("onnx", "Hardmax")
def _hardmax_from_onnx(call):
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    x = call.input(0)
    axis = norm_axis(call.attr("axis", -1), x.type.rank)
    best = call.emit(ARGMAX, [x], {"axis": axis, "keepdims": True})
    hit = call.emit(BINARY["eq"], [best, _iota(call, x.type.shape[axis], axis, x.type.rank, best.type.dtype)])
    return call.emit(CAST, [hit], {"dtype": x.type.dtype})


@imports("onnx", "OneHot")
def _one_hot_from_onnx(call):
    """on where the index (negative ones counted from ``depth``) equals the position along ``axis``, else off."""
    indices, depth, values = call.input(0), call.constant(1), call.constant(2)
    if depth is None or values is None:
        call.unsupported("depth and values must be constants")
    depth, rank = int(np.asarray(depth).reshape(-1)[0]), call.input(0).type.rank + 1
    axis = norm_axis(call.attr("axis", -1), rank)
    negative = call.emit(BINARY["lt"], [indices, scalar(call, 0, indices)])
    wrapped = call.emit(WHERE, [negative, call.emit(BINARY["add"], [indices, scalar(call, depth, indices)]), indices])
    shape = list(indices.type.shape)
    shape.insert(axis, 1)
    hit = call.emit(BINARY["eq"], [reshaped(call, wrapped, shape), _iota(call, depth, axis, rank, indices.type.dtype)])
    off, on = (call.const(np.asarray(v)) for v in np.asarray(values).reshape(-1)[:2])
    return call.emit(WHERE, [hit, on, off])
