"""keras.ops elementwise operations in functional graphs (``x + y``, ``ops.relu(x)``, ``ops.cast``) -> IR.

Functional Keras models record every keras.ops call on a KerasTensor as an Operation node; the
Keras frontend looks its rule up as ``"ops." + class name`` (``ops.Add``, ``ops.TrueDivide``).

Note [keras operand dtypes]: Keras on JAX promotes like JAX: a Python number is "weak" and takes
the tensor's dtype (``x_f16 + 1.0`` stays float16, ``x_int + 1.5`` becomes float32). Arithmetic rules
cast every operand to the dtype Keras recorded for the output, so the IR node computes in exactly
that dtype; comparisons (bool outputs) cast both operands to their promoted dtype first.

Example:
    >>> y = keras.ops.add(x, 1.0)   # recorded as ops.Add -> IR: add(%x, %scalar)
"""
from __future__ import annotations

import numpy as np

from ...ir import Value
from .._util import kind, named_rule, promote
from ..elementwise import BINARY, CAST, WHERE
from ..elementwise.unary import BOOL_RESULTS, UNARY

__all__ = ["keras_operands", "keras_number", "out_dtype", "cast_to"]


def out_dtype(call, index=0) -> str:
    """The dtype Keras recorded for output ``index`` of the call."""
    return str(call.outputs[index].dtype)


def cast_to(call, x, dtype):
    """``x`` cast to ``dtype`` (no node when it already has it)."""
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


def keras_number(call, number, dtype, hint="scalar"):
    """A 0-d (or small array) constant of ``dtype`` for a Python number / NumPy operand."""
    return call.param(np.asarray(number, dtype="float32" if dtype == "bfloat16" else dtype), hint)


def _is_value(x) -> bool:
    return hasattr(x, "type")


def _weak_dtype(a, b) -> str:
    """JAX's promotion of two operands where Python numbers are weak (Note [keras operand dtypes])."""
    if _is_value(a) and _is_value(b):
        return promote(a.type, b.type)
    tensor, number = (a, b) if _is_value(a) else (b, a)
    dtype = tensor.type.dtype
    if isinstance(number, float) and kind(dtype) < 2:
        return "float32"
    if kind(dtype) == 0 and not isinstance(number, (bool, np.bool_)):
        return "int32"
    return dtype


def keras_operands(call, args, dtype=None) -> list:
    """``args`` (Values or numbers) as Values of one dtype; numbers become constants.

    ``dtype`` None promotes the two operands (Note [keras operand dtypes]).
    """
    if dtype is None:
        dtype = _weak_dtype(*args)
    return [cast_to(call, x, dtype) if _is_value(x) else keras_number(call, x, dtype, f"operand{i}")
            for i, x in enumerate(args)]


# keras.ops class -> IR binary op name; the result is computed in Keras' output dtype.
_ARITHMETIC = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "TrueDivide": "div",
               "Power": "pow", "Maximum": "maximum", "Minimum": "minimum", "BitwiseAnd": "bitwise_and",
               "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor", "Arctan2": "atan2"}
_COMPARE = {"Equal": "eq", "NotEqual": "ne", "Less": "lt", "LessEqual": "le", "Greater": "gt",
            "GreaterEqual": "ge", "LogicalAnd": "logical_and", "LogicalOr": "logical_or"}


def _arithmetic_rule(ir_name):
    op = BINARY[ir_name]

    def rule(call):
        dtype = out_dtype(call)
        if ir_name == "div" and kind(dtype) < 2:
            call.unsupported(f"integer division producing {dtype}")
        a, b = keras_operands(call, call.operands(2), dtype)
        return call.emit(op, [a, b])
    return named_rule(rule, ir_name, "from_keras")


def _compare_rule(ir_name):
    op = BINARY[ir_name]

    def rule(call):
        dtype = "bool" if ir_name.startswith("logical") else None
        return call.emit(op, keras_operands(call, call.operands(2), dtype))
    return named_rule(rule, ir_name, "from_keras")


for _cls, _name in _ARITHMETIC.items():
    BINARY[_name].imports("keras", f"ops.{_cls}")(_arithmetic_rule(_name))
for _cls, _name in _COMPARE.items():
    BINARY[_name].imports("keras", f"ops.{_cls}")(_compare_rule(_name))


@BINARY["div"].imports("keras", "ops.FloorDivide")
def _floor_divide_from_keras(call):
    a, b = keras_operands(call, call.operands(2), out_dtype(call))
    return call.emit(BINARY["div"], [a, b], {"rounding_mode": "floor"})


@BINARY["mul"].imports("keras", "ops.Square")
def _square_from_keras(call):
    x = cast_to(call, call.inputs[0], out_dtype(call))
    return call.emit(BINARY["mul"], [x, x])


@WHERE.imports("keras", "ops.Where")
def _where_from_keras(call):
    cond, a, b = call.operands(3)
    if a is None or b is None:
        call.unsupported("ops.where(condition) without x and y (its result size depends on the data)")
    a, b = keras_operands(call, [a, b], out_dtype(call))
    if not isinstance(cond, Value):  # a condition Keras computed eagerly (e.g. ops.tril(ops.ones(...)))
        cond = call.const(np.asarray(cond).astype(bool), "condition")
    return call.emit(WHERE, [cast_to(call, cond, "bool"), a, b])


# keras.ops class -> (IR unary op name, attrs from the operation: {ir attr: (keras attr, default)})
_UNARY = {
    "Relu": ("relu", {}), "Sigmoid": ("sigmoid", {}), "Tanh": ("tanh", {}), "Exp": ("exp", {}),
    "Sqrt": ("sqrt", {}), "Erf": ("erf", {}), "Silu": ("silu", {}), "Swish": ("silu", {}), "Log": ("log", {}),
    "Absolute": ("abs", {}), "Abs": ("abs", {}), "Negative": ("neg", {}), "Rsqrt": ("rsqrt", {}),
    "Reciprocal": ("reciprocal", {}), "Sign": ("sign", {}), "Floor": ("floor", {}), "Ceil": ("ceil", {}),
    "Sin": ("sin", {}), "Cos": ("cos", {}), "HardSigmoid": ("hardsigmoid", {}), "HardSilu": ("hardswish", {}),
    "HardSwish": ("hardswish", {}), "Elu": ("elu", {"alpha": ("alpha", 1.0)}),
    "LeakyRelu": ("leaky_relu", {"negative_slope": ("negative_slope", 0.2)}),
    "Log1p": ("log1p", {}), "Expm1": ("expm1", {}), "Exp2": ("exp2", {}), "Cbrt": ("cbrt", {}), "Trunc": ("trunc", {}),
    "Arcsin": ("asin", {}), "Arccos": ("acos", {}), "Arctan": ("atan", {}), "Arcsinh": ("asinh", {}),
    "Arccosh": ("acosh", {}), "Arctanh": ("atanh", {}), "Isnan": ("isnan", {}), "Isinf": ("isinf", {}),
    "Isfinite": ("isfinite", {}), "StopGradient": ("stop_gradient", {}),
}


def _unary_rule(ir_name, attr_spec):
    op = UNARY[ir_name]

    def rule(call):
        attrs = {ir: float(getattr(call.layer, attr, default)) for ir, (attr, default) in attr_spec.items()}
        x = call.inputs[0]  # a predicate (isnan) reads its input as it is; math computes in the output dtype
        return call.emit(op, [x if ir_name in BOOL_RESULTS else cast_to(call, x, out_dtype(call))], attrs)
    return named_rule(rule, ir_name, "from_keras")


for _cls, (_name, _spec) in _UNARY.items():
    UNARY[_name].imports("keras", f"ops.{_cls}")(_unary_rule(_name, _spec))


@UNARY["gelu"].imports("keras", "ops.Gelu")
def _gelu_from_keras(call):
    """keras.ops.gelu defaults to the tanh approximation (``approximate=True``)."""
    approximate = "tanh" if getattr(call.layer, "approximate", True) else "none"
    return call.emit(UNARY["gelu"], [cast_to(call, call.inputs[0], out_dtype(call))], {"approximate": approximate})


@UNARY["clamp"].imports("keras", "ops.Relu6")
def _relu6_from_keras(call):
    return call.emit(UNARY["clamp"], [cast_to(call, call.inputs[0], out_dtype(call))], {"min": 0.0, "max": 6.0})


@UNARY["clamp"].imports("keras", "ops.Clip")
def _clip_from_keras(call):
    x = cast_to(call, call.inputs[0], out_dtype(call))
    low, high = call.layer.x_min, call.layer.x_max
    if _is_value(low) or _is_value(high) or np.ndim(low) or np.ndim(high):
        for bound, name in ((low, "maximum"), (high, "minimum")):
            if bound is None:  # ops.clip(x, low, None): one-sided
                continue
            bound = bound if _is_value(bound) else keras_number(call, bound, x.type.dtype, f"clip_{name}")
            x = call.emit(BINARY[name], [x, cast_to(call, bound, x.type.dtype)])
        return x
    return call.emit(UNARY["clamp"], [x], {"min": None if low is None else float(low),
                                           "max": None if high is None else float(high)})


@UNARY["softplus"].imports("keras", "ops.Softplus")
def _softplus_from_keras(call):
    """jax.nn.softplus is log1p(exp(x)) everywhere; torch's threshold 20 changes it by < exp(-20)."""
    return call.emit(UNARY["softplus"], [cast_to(call, call.inputs[0], out_dtype(call))],
                     {"beta": 1.0, "threshold": 20.0})


@UNARY["elu"].imports("keras", "ops.Selu")
def _selu_from_keras(call):
    x = call.emit(UNARY["elu"], [cast_to(call, call.inputs[0], out_dtype(call))], {"alpha": 1.6732632423543772})
    return call.emit(BINARY["mul"], [x, keras_number(call, 1.0507009873554805, x.type.dtype, "selu_scale")])


@UNARY["bitwise_not"].imports("keras", "ops.BitwiseNot", "ops.BitwiseInvert")
def _bitwise_not_from_keras(call):
    """``ops.bitwise_not`` on integers; on bool it is logical not."""
    x = call.inputs[0]
    return call.emit(UNARY["logical_not" if x.type.dtype == "bool" else "bitwise_not"], [x])


@UNARY["logical_not"].imports("keras", "ops.LogicalNot")
def _logical_not_from_keras(call):
    return call.emit(UNARY["logical_not"], [cast_to(call, call.inputs[0], "bool")])


@CAST.imports("keras", "ops.Cast")
def _cast_from_keras(call):
    return cast_to(call, call.inputs[0], out_dtype(call))
