"""ONNX import rules for elementwise ops: arithmetic, comparisons, logic, activations, Cast, Clip, Where.

ONNX binary ops broadcast like NumPy and take operands of one dtype, so they map one to one; integer
``Div`` truncates (``rounding_mode="trunc"``). Activations whose ONNX form has parameters the IR op lacks
(HardSigmoid's alpha/beta, Selu, ThresholdedRelu, PRelu's slope tensor) are written as compositions.
Variadic ``Min``/``Max``/``Sum``/``Mean`` fold pairwise.

Example:
    Add(%a, %b) -> add(%a, %b);  HardSigmoid(%x) {alpha=0.2} -> clamp(add(mul(%x, 0.2), 0.5), 0, 1)
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ...ir.types import FLOAT8
from ..elementwise import BINARY, CAST, WHERE
from ..elementwise.unary import UNARY
from .float8 import saturating_cast

__all__ = []

#: ONNX op type -> IR binary op
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Pow": "pow", "Equal": "eq", "Less": "lt",
           "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge", "And": "logical_and", "Or": "logical_or",
           "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}
#: ONNX op type -> IR unary op (no attributes)
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Neg": "neg",
          "Abs": "abs", "Sqrt": "sqrt", "Reciprocal": "reciprocal", "Erf": "erf", "Sin": "sin", "Cos": "cos",
          "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Not": "logical_not", "Round": "round", "Asin": "asin",
          "Acos": "acos", "Atan": "atan", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "IsNaN": "isnan",
          "HardSwish": "hardswish", "Mish": "mish", "Softplus": "softplus", "BitwiseNot": "bitwise_not"}


def _binary_import(name):
    def import_onnx(call):
        return call.emit(BINARY[name], [call.input(0), call.input(1)])
    import_onnx.__name__ = import_onnx.__qualname__ = f"_{name}_from_onnx"
    return import_onnx


def _unary_import(name):
    def import_onnx(call):
        return call.emit(UNARY[name], [call.input(0)])
    import_onnx.__name__ = import_onnx.__qualname__ = f"_{name}_from_onnx"
    return import_onnx


for _onnx, _ir in _BINARY.items():
    BINARY[_ir].imports("onnx", _onnx)(_binary_import(_ir))
for _onnx, _ir in _UNARY.items():
    UNARY[_ir].imports("onnx", _onnx)(_unary_import(_ir))


def scalar(call, number, like):
    """A 0-d constant of ``like``'s dtype (ONNX operands share one dtype)."""
    return call.const(np.asarray(number, dtype=like.type.dtype if like.type.dtype != "bfloat16" else "float32"))


@BINARY["div"].imports("onnx", "Div")
def _div_from_onnx(call):
    """Integer Div truncates toward zero, as C does."""
    a, b = call.input(0), call.input(1)
    integer = a.type.dtype.startswith(("int", "uint"))
    return call.emit(BINARY["div"], [a, b], {"rounding_mode": "trunc" if integer else None})


@BINARY["minimum"].imports("onnx", "Min", "Max", "Sum", "Mean")
def _variadic_from_onnx(call):
    """Min/Max/Sum/Mean of any number of operands, folded pairwise (Mean divides the sum by their count)."""
    op = BINARY[{"Min": "minimum", "Max": "maximum"}.get(call.op_type, "add")]
    values = call.inputs()
    result = values[0]
    for value in values[1:]:
        result = call.emit(op, [result, value])
    if call.op_type == "Mean" and len(values) > 1:
        result = call.emit(BINARY["div"], [result, scalar(call, len(values), result)])
    return result


@UNARY["isinf"].imports("onnx", "IsInf")
def _isinf_from_onnx(call):
    """IsInf with ``detect_negative``/``detect_positive`` (both by default)."""
    x = call.input(0)
    neg, pos = call.attr("detect_negative", 1), call.attr("detect_positive", 1)
    found = call.emit(UNARY["isinf"], [x])
    if neg and pos:
        return found
    side = call.emit(BINARY["gt" if pos else "lt"], [x, scalar(call, 0, x)])
    return call.emit(BINARY["logical_and"], [found, side])


@CAST.imports("onnx", "Cast", "CastLike")
def _cast_from_onnx(call):
    """Cast to the ``to`` element type (CastLike: to the second input's dtype); to float8 with ``saturate=1`` (the
    default) clamped to its finite range first (Note [float8 casts])."""
    x = call.input(0)
    like = call.constant(1) if call.op_type == "CastLike" else None  # only its dtype matters
    if call.op_type == "Cast":
        dtype = call.dtype_attr("to")
    else:
        dtype = str(like.dtype) if like is not None else call.input(1).type.dtype
    if dtype in FLOAT8 and dtype != x.type.dtype and call.attr("saturate", 1):
        return saturating_cast(call, x, dtype)
    return x if dtype == x.type.dtype else call.emit(CAST, [x], {"dtype": dtype})


@WHERE.imports("onnx", "Where")
def _where_from_onnx(call):
    return call.emit(WHERE, [call.input(0), call.input(1), call.input(2)])


@imports("onnx", "Identity")
def _identity_from_onnx(call):
    """The identity: the input's value is the output's."""
    return call.input(0)


@imports("onnx", "Clip")
def _clip_from_onnx(call):
    """Clip with constant bounds is clamp; bounds computed from data are maximum/minimum."""
    x = call.input(0)
    low, high = call.constant(1), call.constant(2)
    if (call.has_input(1) and low is None) or (call.has_input(2) and high is None):
        if call.has_input(1):
            x = call.emit(BINARY["maximum"], [x, call.input(1)])
        return call.emit(BINARY["minimum"], [x, call.input(2)]) if call.has_input(2) else x
    bounds = {key: None if bound is None else np.asarray(bound).item() for key, bound in (("min", low), ("max", high))}
    if bounds["min"] is None and bounds["max"] is None:
        return x
    return call.emit(UNARY["clamp"], [x], bounds)


@UNARY["leaky_relu"].imports("onnx", "LeakyRelu")
def _leaky_relu_from_onnx(call):
    return call.emit(UNARY["leaky_relu"], [call.input(0)], {"negative_slope": float(call.attr("alpha", 0.01))})


@UNARY["elu"].imports("onnx", "Elu")
def _elu_from_onnx(call):
    return call.emit(UNARY["elu"], [call.input(0)], {"alpha": float(call.attr("alpha", 1.0))})


@UNARY["gelu"].imports("onnx", "Gelu")
def _gelu_from_onnx(call):
    return call.emit(UNARY["gelu"], [call.input(0)], {"approximate": call.attr("approximate", "none")})


def _affine(call, x, scale, shift):
    y = call.emit(BINARY["mul"], [x, scalar(call, scale, x)]) if scale != 1 else x
    return call.emit(BINARY["add"], [y, scalar(call, shift, x)]) if shift else y


@imports("onnx", "HardSigmoid")
def _hardsigmoid_from_onnx(call):
    """max(0, min(1, alpha * x + beta)), ONNX's defaults alpha=0.2, beta=0.5 (torch's is 1/6, 0.5)."""
    x = call.input(0)
    y = _affine(call, x, float(call.attr("alpha", 0.2)), float(call.attr("beta", 0.5)))
    return call.emit(UNARY["clamp"], [y], {"min": 0.0, "max": 1.0})


@imports("onnx", "Selu", "Celu", "ThresholdedRelu", "Softsign", "Shrink")
def _composed_activation_from_onnx(call):
    """Activations the IR writes as compositions of where/exp/abs."""
    x = call.input(0)
    zero = scalar(call, 0, x)
    if call.op_type == "Softsign":
        return call.emit(BINARY["div"], [x, _affine(call, call.emit(UNARY["abs"], [x]), 1, 1)])
    if call.op_type == "ThresholdedRelu":
        keep = call.emit(BINARY["gt"], [x, scalar(call, float(call.attr("alpha", 1.0)), x)])
        return call.emit(WHERE, [keep, x, zero])
    if call.op_type == "Shrink":
        bias, lambd = float(call.attr("bias", 0.0)), float(call.attr("lambd", 0.5))
        low = call.emit(BINARY["lt"], [x, scalar(call, -lambd, x)])
        high = call.emit(BINARY["gt"], [x, scalar(call, lambd, x)])
        inner = call.emit(WHERE, [high, _affine(call, x, 1, -bias), zero])
        return call.emit(WHERE, [low, _affine(call, x, 1, bias), inner])
    if call.op_type == "Celu":
        alpha = float(call.attr("alpha", 1.0))
        scaled = call.emit(UNARY["elu"], [_affine(call, x, 1 / alpha, 0)], {"alpha": 1.0})
        return _affine(call, scaled, alpha, 0)
    alpha = float(call.attr("alpha", 1.67326319217681884765625))
    gamma = float(call.attr("gamma", 1.05070102214813232421875))
    return _affine(call, call.emit(UNARY["elu"], [x], {"alpha": alpha}), gamma, 0)


@imports("onnx", "PRelu")
def _prelu_from_onnx(call):
    """x where x >= 0, else slope * x (the slope broadcasts, as NumPy)."""
    x, slope = call.input(0), call.input(1)
    negative = call.emit(BINARY["mul"], [x, slope])
    return call.emit(WHERE, [call.emit(BINARY["ge"], [x, scalar(call, 0, x)]), x, negative])
