"""More keras.ops elementwise math in functional graphs: logarithms, hyperbolic functions, special functions,
rounding, remainders, shifts and sign bits (``ops.log2``, ``ops.erfinv``, ``ops.mod``, ``ops.left_shift``, ...).

Rules follow from_keras_ops.py: operands are cast to the dtype Keras recorded for the output (Note [keras
operand dtypes]); ``ops.round(x, decimals)`` scales, rounds half to even and scales back, as jnp.round does.

Example:
    >>> y = keras.ops.mod(x, 0.7)   # recorded as ops.Mod -> IR: remainder(%x, %scalar)
"""
from __future__ import annotations

from .._util import kind, named_rule
from ..elementwise import BINARY
from ..elementwise.from_keras_ops import cast_to, keras_number, keras_operands, out_dtype
from ..elementwise.unary import BOOL_RESULTS, UNARY

__all__ = []

#: keras.ops class -> IR unary op
_UNARY = {"Log2": "log2", "Log10": "log10", "Tan": "tan", "Sinh": "sinh", "Cosh": "cosh", "Signbit": "signbit",
          "Erfinv": "erfinv", "Erfc": "erfc", "I0": "i0"}
#: keras.ops class -> IR binary op (computed in Keras' output dtype)
_BINARY = {"Mod": "remainder", "Fmod": "fmod", "Hypot": "hypot", "Nextafter": "nextafter",
           "LeftShift": "bitwise_left_shift", "BitwiseLeftShift": "bitwise_left_shift",
           "RightShift": "bitwise_right_shift", "BitwiseRightShift": "bitwise_right_shift"}


def _unary_rule(ir_name):
    op = UNARY[ir_name]

    def rule(call):
        x = call.inputs[0]
        return call.emit(op, [x if ir_name in BOOL_RESULTS else cast_to(call, x, out_dtype(call))])
    return named_rule(rule, ir_name, "from_keras")


def _binary_rule(ir_name):
    op = BINARY[ir_name]

    def rule(call):
        return call.emit(op, keras_operands(call, call.operands(2), out_dtype(call)))
    return named_rule(rule, ir_name, "from_keras")


for _cls, _name in _UNARY.items():
    UNARY[_name].imports("keras", f"ops.{_cls}")(_unary_rule(_name))
for _cls, _name in _BINARY.items():
    BINARY[_name].imports("keras", f"ops.{_cls}")(_binary_rule(_name))


@UNARY["round"].imports("keras", "ops.Round")
def _round_from_keras(call):
    """Half to even at ``10**-decimals``: scale, round, scale back (integers are their own rounding at decimals 0)."""
    x, decimals = cast_to(call, call.inputs[0], out_dtype(call)), int(getattr(call.layer, "decimals", 0) or 0)
    if kind(x.type.dtype) != 2:
        if decimals < 0:
            call.unsupported(f"ops.round of integers with decimals={decimals}")
        return x
    if decimals == 0:
        return call.emit(UNARY["round"], [x])
    ten = keras_number(call, float(10 ** abs(decimals)), x.type.dtype, "round_scale")
    first, second = ("mul", "div") if decimals > 0 else ("div", "mul")
    scaled = call.emit(BINARY[first], [x, ten])
    return call.emit(BINARY[second], [call.emit(UNARY["round"], [scaled]), ten])
