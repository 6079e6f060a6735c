"""JAX import rules for elementwise primitives: arithmetic, comparisons, logic, math, select_n, clamp, casts.

JAX's binary primitives take operands of one dtype (literals are already typed), so each maps to
the IR op directly (``rem`` is C fmod, ``is_finite`` isfinite, ``erf_inv`` erfinv); ``square(x) = x * x``.
Rounding, bit casts, logical shifts and polygamma are in from_jax_math.py. ``max(x, 0.0)`` (what
``jax.nn.relu`` traces to) becomes ``relu``. Copies, scheduling barriers and a ``reduce_precision`` to
the operand's own format compute nothing, so their rules hang on no OpDef (``ir.imports``); a gradient
stop is the ``stop_gradient`` op.

Example:
    add(%x, 1.0) -> add(%x, %scalar) {};  integer_pow[y=3](%x) -> mul(mul(%x, %x), %x)
"""
from __future__ import annotations

from ...ir import imports
from .._util import kind, named_rule
from ..elementwise import BINARY, CAST, WHERE
from ..shape import EXPAND
from ..elementwise.unary import UNARY

__all__ = []

# primitive -> IR binary op
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "pow": "pow", "max": "maximum", "min": "minimum",
           "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "atan2": "atan2",
           "rem": "fmod", "nextafter": "nextafter", "igamma": "igamma", "igammac": "igammac", "zeta": "zeta",
           "shift_left": "bitwise_left_shift", "shift_right_arithmetic": "bitwise_right_shift"}
# primitive -> IR unary op
_UNARY = {"exp": "exp", "log": "log", "tanh": "tanh", "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt",
          "erf": "erf", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil", "neg": "neg",
          "sin": "sin", "cos": "cos", "log1p": "log1p", "expm1": "expm1", "exp2": "exp2", "erfc": "erfc",
          "cbrt": "cbrt", "tan": "tan", "is_finite": "isfinite", "asin": "asin", "acos": "acos", "atan": "atan",
          "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "sinh": "sinh", "cosh": "cosh", "lgamma": "lgamma",
          "digamma": "digamma", "erf_inv": "erfinv", "bessel_i0e": "i0e", "bessel_i1e": "i1e"}
# primitive -> (IR op on bool operands, IR op on integers)
_LOGICAL = {"and": ("logical_and", "bitwise_and"), "or": ("logical_or", "bitwise_or"), "xor": ("ne", "bitwise_xor")}


def _binary_rule(prim, op):
    def rule(call):
        a, b = call.input(0), call.input(1)
        if prim == "max" and kind(a.type.dtype) == 2:
            for i, other in ((0, b), (1, a)):
                zero = call.const_value(i)
                if zero is not None and zero.size == 1 and float(zero.reshape(())) == 0.0 and \
                        other.type.shape == call.out_type().shape:
                    return call.emit(UNARY["relu"], [other])
        return call.emit(op, [a, b])
    return named_rule(rule, prim, "from_jax")


for _prim, _op in _BINARY.items():
    BINARY[_op].imports("jax", _prim)(_binary_rule(_prim, BINARY[_op]))


def _unary_rule(prim, op):
    def rule(call):
        return call.emit(op, [call.input(0)])
    return named_rule(rule, prim, "from_jax")


for _prim, _op in _UNARY.items():
    UNARY[_op].imports("jax", _prim)(_unary_rule(_prim, UNARY[_op]))


def _logical_rule(prim, on_bool, on_ints):
    def rule(call):
        return call.emit(on_bool if call.in_type(0).dtype == "bool" else on_ints, call.inputs)
    return named_rule(rule, prim, "from_jax")


for _prim, (_bool, _ints) in _LOGICAL.items():
    BINARY[_bool].imports("jax", _prim)(_logical_rule(_prim, BINARY[_bool], BINARY[_ints]))


@UNARY["logical_not"].imports("jax", "not")
def _not_from_jax(call):
    """``~`` on bool is logical not, on integers the bitwise complement."""
    return call.emit(UNARY["logical_not" if call.in_type(0).dtype == "bool" else "bitwise_not"], [call.input(0)])


@BINARY["div"].imports("jax", "div")
def _div_from_jax(call):
    """JAX divides integers toward zero (C semantics)."""
    rounding = "trunc" if kind(call.in_type(0).dtype) < 2 else None
    return call.emit(BINARY["div"], call.inputs, {"rounding_mode": rounding})


@BINARY["mul"].imports("jax", "square")
def _square_from_jax(call):
    x = call.input(0)
    return call.emit(BINARY["mul"], [x, x])


@BINARY["mul"].imports("jax", "integer_pow")
def _integer_pow_from_jax(call):
    """``x ** y`` for a Python int y: a product chain up to |y| = 4, else ``pow``; negative y inverts."""
    x, y = call.input(0), int(call.params["y"])
    dtype = x.type.dtype
    if y == 0:
        return call.emit(EXPAND, [call.scalar(1, dtype)], {"shape": x.type.shape})
    if y < 0 and kind(dtype) != 2:
        call.unsupported(f"integer_pow with y={y} on {dtype}")
    if abs(y) <= 4:
        out = x
        for _ in range(abs(y) - 1):
            out = call.emit(BINARY["mul"], [out, x])
    else:
        out = call.emit(BINARY["pow"], [x, call.scalar(abs(y), dtype)])
    return out if y > 0 else call.emit(UNARY["reciprocal"], [out])


@WHERE.imports("jax", "select_n")
def _select_n_from_jax(call):
    """``select_n(p, *cases)`` picks ``cases[p]``: a bool p is ``where(p, cases[1], cases[0])``."""
    pred, cases = call.input(0), call.inputs[1:]
    known = call.const_value(0)
    if known is not None and known.size and (known == known.flat[0]).all():  # one case everywhere
        chosen = cases[int(known.flat[0])]
        if chosen.type.shape == call.out_type().shape:
            return chosen
    if len(cases) == 1:
        return cases[0]
    if pred.type.dtype == "bool":
        return call.emit(WHERE, [pred, cases[1], cases[0]])
    out = cases[0]
    for i, case in enumerate(cases[1:], start=1):
        hit = call.emit(BINARY["eq"], [pred, call.scalar(i, pred.type.dtype)])
        out = call.emit(WHERE, [hit, case, out])
    return out


@UNARY["clamp"].imports("jax", "clamp")
def _clamp_from_jax(call):
    """``clamp(lo, x, hi)`` = ``min(max(x, lo), hi)``; known scalar bounds become clamp attributes."""
    x = call.input(1)
    lo, hi = call.const_value(0), call.const_value(2)
    if lo is not None and hi is not None and lo.size == 1 and hi.size == 1 and kind(x.type.dtype) == 2:
        return call.emit(UNARY["clamp"], [x], {"min": float(lo.reshape(())), "max": float(hi.reshape(()))})
    out = call.emit(BINARY["maximum"], [x, call.input(0)])
    return call.emit(BINARY["minimum"], [out, call.input(2)])


@CAST.imports("jax", "convert_element_type")
def _convert_from_jax(call):
    x, dtype = call.input(0), call.out_type().dtype
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


@imports("jax", "copy", "copy_p", "optimization_barrier")
def _identity_from_jax(call):
    """Copies and scheduling barriers compute nothing."""
    return call.inputs


@UNARY["stop_gradient"].imports("jax", "stop_gradient")
def _stop_gradient_from_jax(call):
    """The identity with a zero gradient, kept so that the converted model trains like the source."""
    return call.emit(UNARY["stop_gradient"], [call.input(0)])


_BITS = {"float32": (8, 23), "bfloat16": (8, 7), "float16": (5, 10), "float64": (11, 52)}


@imports("jax", "reduce_precision")
def _reduce_precision_from_jax(call):
    """An identity when it rounds to the operand's own format; other formats are refused."""
    bits = (call.params["exponent_bits"], call.params["mantissa_bits"])
    if _BITS.get(call.in_type(0).dtype) != bits:
        call.unsupported(f"reduce_precision to {bits} bits on {call.in_type(0).dtype}")
    return call.input(0)

