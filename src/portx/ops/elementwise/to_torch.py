"""torch-xla emit rules for the elementwise ops (binary, unary, where, cast): operators and torch calls.

Binary arithmetic and comparisons are Python operators, so a stored 0-d operand can be a plain
number (``relu * 0.5``) where torch then computes in the IR's dtype (TorchEmitter.operand).
Activations are functional calls (``F.gelu(x, approximate="tanh")``): stateless, and the way
hand-written forward methods use them. Like hand-written PyTorch (torchvision's ``ReLU(inplace=True)``,
``out += identity``), relu, relu6, silu, hardswish and add overwrite an operand in place when the emitter
allows it (``TorchEmitter.overwrite``: a fresh conv/norm/add output nothing else reads), which spares
an allocation per activation: ``relu = F.relu(bn, inplace=True)``, ``add = bn.add_(shortcut)``.

Example:
    >>> BINARY["add"].emit_rules["torch-xla"]   # writes ``add = a + b``
"""
from __future__ import annotations

from .._util import kind, named_rule, promote
from ..elementwise import BINARY, BITCAST, CAST, WHERE
from ..elementwise.unary import UNARY
from .float8 import non_saturating_e4m3fn

__all__ = []

_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
              "gt": ">", "ge": ">=", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
              "bitwise_left_shift": "<<", "bitwise_right_shift": ">>"}
_CALLS = {"minimum": "torch.minimum", "maximum": "torch.maximum", "logical_and": "torch.logical_and",
          "logical_or": "torch.logical_or", "atan2": "torch.atan2", "fmod": "torch.fmod",
          "remainder": "torch.remainder", "copysign": "torch.copysign", "nextafter": "torch.nextafter",
          "hypot": "torch.hypot", "igamma": "torch.special.gammainc", "igammac": "torch.special.gammaincc",
          "zeta": "torch.special.zeta"}


def _binary_operands(node, t):
    """Both operands; a stored 0-d one becomes a number when torch keeps the IR's compute dtype."""
    a, b = node.inputs
    compute = promote(a.type, b.type)
    return t.operand(a, b, compute), t.operand(b, a, compute)


def _overwrites(t, node, value) -> bool:
    """True when ``node`` may write its output into ``value``'s tensor (same type; ``TorchEmitter.overwrite``)."""
    return value.type == node.outputs[0].type and t.overwrite(value)


def _in_place_add(node, t, a, b) -> str:
    """``a.add_(b)`` (or ``b.add_(a)``: float addition commutes) where an operand may be overwritten, else ""."""
    x, y = node.inputs
    if _overwrites(t, node, x):
        return f"{a}.{node.op.name}_({b})"
    if node.op.name == "add" and _overwrites(t, node, y):
        return f"{b}.add_({a})"
    return ""


def _binary_rule(name):
    def emit(node, t):
        a, b = _binary_operands(node, t)
        in_place = _in_place_add(node, t, a, b) if name in ("add", "sub") else ""
        if in_place:
            t.assign(node, in_place)
        elif name in _OPERATORS:
            t.assign(node, f"{a} {_OPERATORS[name]} {b}")
        elif name == "div":
            mode = node.attrs.get("rounding_mode")
            t.assign(node, f"{a} / {b}" if mode is None else f"torch.div({a}, {b}, rounding_mode={t.lit(mode)})")
        else:
            t.assign(node, f"{_CALLS[name]}({t.ref(node.inputs[0])}, {t.ref(node.inputs[1])})")
    return named_rule(emit, name, "to_torch")


for _name, _op in BINARY.items():
    _op.emits("torch-xla")(_binary_rule(_name))


@WHERE.emits("torch-xla")
def _where_to_torch(node, t):
    cond, a, b = node.inputs
    out = node.outputs[0].type.dtype
    t.assign(node, f"torch.where({t.ref(cond)}, {t.operand(a, b, out)}, {t.operand(b, a, out)})")


@BITCAST.emits("torch-xla")
def _bitcast_to_torch(node, t):
    t.assign(node, f"{t.ref(node.inputs[0])}.view({t.dtype(node.attrs['dtype'])})")


@CAST.emits("torch-xla")
def _cast_to_torch(node, t):
    """``.to(dtype)``; to float8_e4m3fn with NaN past its range, as the IR's cast (Note [float8 casts])."""
    x, dtype = node.inputs[0], node.attrs["dtype"]
    if dtype == "float8_e4m3fn" and x.type.dtype != "bool":
        t.assign(node, non_saturating_e4m3fn(t.ref(x), x.type.dtype))
        return
    t.assign(node, f"{t.ref(x)}.to({t.dtype(dtype)})")


# name: expression template; {x} is the input, other fields are the node's attributes as literals.
_UNARY_TEMPLATES = {
    "relu": "torch.relu({x})", "silu": "F.silu({x})", "sigmoid": "torch.sigmoid({x})", "tanh": "torch.tanh({x})",
    "hardswish": "F.hardswish({x})", "hardsigmoid": "F.hardsigmoid({x})", "mish": "F.mish({x})",
    "exp": "torch.exp({x})", "log": "torch.log({x})", "neg": "-{x}", "abs": "torch.abs({x})",
    "sqrt": "torch.sqrt({x})", "rsqrt": "torch.rsqrt({x})", "reciprocal": "torch.reciprocal({x})",
    "erf": "torch.erf({x})", "sin": "torch.sin({x})", "cos": "torch.cos({x})", "floor": "torch.floor({x})",
    "ceil": "torch.ceil({x})", "sign": "torch.sign({x})", "logical_not": "torch.logical_not({x})",
    "bitwise_not": "torch.bitwise_not({x})", "log1p": "torch.log1p({x})", "expm1": "torch.expm1({x})",
    "exp2": "torch.exp2({x})", "cbrt": "torch.sign({x}) * torch.abs({x}).pow(1.0 / 3)",  # torch has no cbrt
    "trunc": "torch.trunc({x})", "round": "torch.round({x})", "asin": "torch.asin({x})",
    "acos": "torch.acos({x})", "atan": "torch.atan({x})", "asinh": "torch.asinh({x})", "acosh": "torch.acosh({x})",
    "atanh": "torch.atanh({x})", "isnan": "torch.isnan({x})", "isinf": "torch.isinf({x})",
    "isfinite": "torch.isfinite({x})", "stop_gradient": "{x}.detach()",
    "log2": "torch.log2({x})", "log10": "torch.log10({x})", "tan": "torch.tan({x})", "sinh": "torch.sinh({x})",
    "cosh": "torch.cosh({x})", "signbit": "torch.signbit({x})", "erfc": "torch.erfc({x})",
    "erfinv": "torch.erfinv({x})", "i0": "torch.i0({x})", "lgamma": "torch.lgamma({x})",
    "digamma": "torch.digamma({x})", "polygamma": "torch.polygamma({n}, {x})", "i0e": "torch.special.i0e({x})",
    "i1": "torch.special.i1({x})", "i1e": "torch.special.i1e({x})", "ndtri": "torch.special.ndtri({x})",
    "erfcx": "torch.special.erfcx({x})",
}
_DEFAULTS = {"leaky_relu": {"negative_slope": 0.01}, "elu": {"alpha": 1.0}, "gelu": {"approximate": "none"},
             "softplus": {"beta": 1.0, "threshold": 20.0}}
_WITH_OPTIONS = {"leaky_relu": "F.leaky_relu", "elu": "F.elu", "gelu": "F.gelu", "softplus": "F.softplus"}
#: activations written in place where the emitter allows it (``_overwrites``)
_IN_PLACE = {"relu": "F.relu({x}, inplace=True)", "silu": "F.silu({x}, inplace=True)",
             "hardswish": "F.hardswish({x}, inplace=True)"}


def _options(t, node, name) -> str:
    """``, key=value`` for each attribute that differs from the torch default."""
    defaults = _DEFAULTS[name]
    return "".join(f", {k}={t.lit(node.attrs[k])}" for k in defaults if node.attrs.get(k, defaults[k]) != defaults[k])


def _unary_rule(name):
    def emit(node, t):
        x = t.ref(node.inputs[0])
        if name in _IN_PLACE and _overwrites(t, node, node.inputs[0]):
            t.assign(node, _IN_PLACE[name].format(x=x))
        elif name in _UNARY_TEMPLATES:
            t.assign(node, _UNARY_TEMPLATES[name].format(x=x, **node.attrs))
        else:
            t.assign(node, f"{_WITH_OPTIONS[name]}({x}{_options(t, node, name)})")
    return named_rule(emit, name, "to_torch")


for _name, _op in UNARY.items():
    if _name != "clamp":
        _op.emits("torch-xla")(_unary_rule(_name))


def _bound(t, value, dtype) -> str:
    """A clamp bound; whole numbers stay ints on integer tensors (a float bound would promote them)."""
    if kind(dtype) == 1 and float(value).is_integer():
        return t.lit(int(value))
    return t.lit(float(value))


@UNARY["clamp"].emits("torch-xla")
def _clamp_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    dtype = x.type.dtype
    if (a["min"], a["max"]) == (0.0, 6.0) and kind(dtype) >= 2:
        inplace = ", inplace=True" if _overwrites(t, node, x) else ""
        t.assign(node, f"F.relu6({t.ref(x)}{inplace})")
        return
    bounds = "".join(f", {k}={_bound(t, a[k], dtype)}" for k in ("min", "max") if a[k] is not None)
    t.assign(node, f"torch.clamp({t.ref(x)}{bounds})")
