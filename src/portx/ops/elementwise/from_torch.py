"""ATen import rules for the elementwise ops: binary arithmetic and comparisons, unary math and activations,
where, cast, and the copies and eval-time dropouts that are identities.

The binary and unary rules are made from the declaration tables (``BINARY_TABLE``, ``UNARY_TABLE``):
each row's ATen names map to its op. Python-number operands become 0-d constants typed the way
torch promotes them (``scalar_const``); where torch's result dtype still differs (``a // 2`` on
ints) a cast follows, and where torch computes in another dtype than the input's (``exp`` of ints,
``clamp(int, 0.5)``) the unary rule casts first.

Example:
    aten::rsub(%x, 1.0, alpha=2) -> sub(%scalar, mul(%x, %scalar));  aten::relu6(%x) -> clamp {min=0.0, max=6.0}
"""
from __future__ import annotations

from .._util import kind, named_rule
from ..elementwise import BINARY, BINARY_TABLE, CAST, WHERE, scalar_const, tensor_pair
from .float8 import saturating_cast
from ..elementwise.from_torch_math import scaled_elu
from ..elementwise.unary import BOOL_RESULTS, UNARY, UNARY_TABLE
from ..fft import COMPLEX_ABS

__all__ = []

#: ops that are the identity on integer tensors (floor/ceil keep the input's own dtype)
_INT_IDENTITY = {"floor", "ceil", "trunc", "round"}


def _binary_operands(call):
    """(a, b) with numbers as typed constants; rsub swaps, and alpha scales the subtrahend/addend."""
    a, b = call.arg("self"), call.arg("other", call.arg("exponent"))
    a, b = tensor_pair(call, a, b)
    if call.node.target._schema.name == "aten::rsub":  # rsub(self, other, alpha) = other - alpha * self
        a, b = b, a
    alpha = call.arg("alpha", 1)
    if alpha != 1:
        b = call.emit(BINARY["mul"], [b, scalar_const(call, alpha, b)])
    return a, b


def _binary_import(op):
    def import_torch(call):
        a, b = _binary_operands(call)
        extra = {"rounding_mode": call.arg("rounding_mode")} if op.name == "div" else {}
        out = call.emit(op, [a, b], extra)
        if out.type.dtype != call.out_type().dtype:
            out = call.emit(CAST, [out], {"dtype": call.out_type().dtype})
        return out
    return named_rule(import_torch, op.name, "from_aten")


for _name, (_, _, _aten, _) in BINARY_TABLE.items():
    BINARY[_name].imports("torch", *_aten)(_binary_import(BINARY[_name]))


@CAST.imports("torch", "aten::_to_copy", "aten::to", "aten::clone", "aten::alias", "aten::lift_fresh_copy",
              "aten::contiguous", "aten::alpha_dropout", "aten::feature_alpha_dropout")
def _cast_from_aten(call):
    """Copies and eval-time alpha dropout are identities; ``_to_copy`` with a new dtype is a cast.

    Alpha dropout (no Keras layer computes torch's) is recorded as dropped, and so is any other
    dropout module that reaches here as a ``clone``, so that the emitted code says so
    (``nn.Dropout`` itself is the ``dropout`` family's).
    """
    x = call.arg("self", call.arg("input"))
    if "Dropout" in call.module_kind:
        call.dropped(x, call.module_kind)
    dtype = call.out_type().dtype
    if dtype == "float8_e4m3fn" and x.type.dtype != dtype:  # torch saturates this one (Note [float8 casts])
        return saturating_cast(call, x, dtype)
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


@WHERE.imports("torch", "aten::where")
def _where_from_aten(call):
    a, b = call.arg("self"), call.arg("other")
    a, b = tensor_pair(call, a, b)
    return call.emit(WHERE, [call.arg("condition"), a, b])


# -- unary -----------------------------------------------------------------------------------------
def _unary_attrs(call, attr_spec) -> dict:
    attrs = {}
    for attr, (default, sources) in attr_spec.items():
        found = [call.arg(s) for s in sources if call.arg(s) is not None]
        attrs[attr] = found[0] if found else default
    return attrs


def _unary_input(call, name):
    """The input, cast first where torch computes in another dtype (exp of ints, clamp(int, 0.5))."""
    x, dtype = call.arg("self"), call.out_type().dtype
    if name in _INT_IDENTITY and kind(x.type.dtype) == 1:
        return x
    return x if name in BOOL_RESULTS or x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


def _clamp_by_tensors(call, x, low, high):
    """clamp with tensor bounds is maximum then minimum (bounds broadcast like any operand)."""
    for bound, op_name in ((low, "maximum"), (high, "minimum")):
        if bound is not None:
            x = call.emit(BINARY[op_name], [x, bound if hasattr(bound, "type") else scalar_const(call, bound, x)])
    dtype = call.out_type().dtype
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})


def _unary_import(op, attr_spec):
    name = op.name

    def import_torch(call):
        if name == "abs" and call.arg("self").type.dtype.startswith("complex"):
            return call.emit(COMPLEX_ABS, [call.arg("self")])  # |x| of a complex tensor is a float tensor
        attrs, x = _unary_attrs(call, attr_spec), _unary_input(call, name)
        if name == "elu" and (call.arg("scale", 1) != 1 or call.arg("input_scale", 1) != 1):
            return scaled_elu(call, x, attrs["alpha"])  # selu, celu-like scalings
        if name in _INT_IDENTITY and kind(x.type.dtype) == 1:
            return x  # floor/ceil of an integer tensor is the tensor itself, in its own dtype
        if name == "clamp" and any(hasattr(v, "type") for v in attrs.values()):
            return _clamp_by_tensors(call, x, attrs["min"], attrs["max"])
        return call.emit(op, [x], attrs)
    return named_rule(import_torch, name, "from_aten")


for _name, (_, _, _aten, _spec) in UNARY_TABLE.items():
    UNARY[_name].imports("torch", *_aten)(_unary_import(UNARY[_name], _spec))


@UNARY["clamp"].imports("torch", "aten::relu6")
def _relu6_from_aten(call):
    return call.emit(UNARY["clamp"], [_unary_input(call, "clamp")], {"min": 0.0, "max": 6.0})


@UNARY["round"].imports("torch", "aten::round")
def _round_from_aten(call):
    """``torch.round(x, decimals=d)``: half to even at 10**-d, computed as torch does (scale, round, unscale)."""
    x, decimals = _unary_input(call, "round"), int(call.arg("decimals", 0))
    if decimals == 0 or kind(x.type.dtype) != 2:
        return call.emit(UNARY["round"], [x])
    scale, op = (float(10 ** decimals), "div") if decimals > 0 else (float(10 ** -decimals), "mul")
    ten = scalar_const(call, scale, x)
    scaled = call.emit(BINARY["mul" if decimals > 0 else "div"], [x, ten])
    return call.emit(BINARY[op], [call.emit(UNARY["round"], [scaled]), ten])


@UNARY["bitwise_not"].imports("torch", "aten::bitwise_not")
def _bitwise_not_from_aten(call):
    """``~mask`` on a bool tensor (the padding-mask idiom) is logical not; on integers the bitwise complement."""
    x = call.arg("self")
    return call.emit(UNARY["logical_not" if x.type.dtype == "bool" else "bitwise_not"], [x])
