"""Keras-JAX emit rules for the elementwise ops: ``keras.ops`` calls, one per node.

Binary and unary rules are made from the declaration tables: a binary row names its ``keras.ops``
function (``ops.add``), a unary row carries an expression template whose ``{x}`` is the input and
whose other fields are the node's attributes as literals (``ops.leaky_relu({x},
negative_slope={negative_slope})``). Division picks its form by rounding mode; integer ``trunc``
stays exact, without a float round trip.

Example generated code:
    add = ops.add(x, y)
    gelu = ops.gelu(add, approximate=True)
"""
from __future__ import annotations

from .._util import kind, named_rule
from ..elementwise import BINARY, BINARY_TABLE, CAST, WHERE
from ..elementwise.unary import UNARY, UNARY_TABLE

__all__ = []


def _div_to_keras(node, k, a, b):
    """Division by rounding mode; integer trunc stays exact (no float round trip)."""
    mode = node.attrs.get("rounding_mode")
    if mode == "floor":
        return f"ops.floor_divide({a}, {b})"
    if mode == "trunc" and kind(node.outputs[0].type.dtype) == 1:
        return f"ops.multiply(ops.multiply(ops.sign({a}), ops.sign({b})), ops.floor_divide(ops.abs({a}), ops.abs({b})))"
    if mode == "trunc":
        return f"ops.trunc(ops.divide({a}, {b}))"
    return f"ops.divide({a}, {b})"


def _binary_emit(name, fn):
    def emit(node, k):
        a, b = (k.ref(v) for v in node.inputs)
        k.assign(node, _div_to_keras(node, k, a, b) if name == "div" else f"{fn}({a}, {b})")
    return named_rule(emit, name, "to_keras")


for _name, (_, _fn, _, _) in BINARY_TABLE.items():
    BINARY[_name].emits("keras-jax")(_binary_emit(_name, _fn))


@CAST.emits("keras-jax")
def _cast_to_keras(node, k):
    k.assign(node, f"ops.cast({k.ref(node.inputs[0])}, {k.lit(node.attrs['dtype'])})")


@WHERE.emits("keras-jax")
def _where_to_keras(node, k):
    c, a, b = (k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.where({c}, {a}, {b})")


def _unary_emit(name, template):
    def emit(node, k):
        fields = {a: k.lit(v) for a, v in node.attrs.items()}
        fields["approximate_bool"] = k.lit(node.attrs.get("approximate") == "tanh")
        k.assign(node, template.format(x=k.ref(node.inputs[0]), **fields))
    return named_rule(emit, name, "to_keras")


for _name, (_, _template, _, _) in UNARY_TABLE.items():
    UNARY[_name].emits("keras-jax")(_unary_emit(_name, _template))
