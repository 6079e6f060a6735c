"""Keras-JAX emit rules for the elementwise ops: named layers for activations and merges, else ``keras.ops``.

An activation of a float32 graph value is the named Keras layer keras.applications writes
(``layers.ReLU``, ``layers.Activation('gelu')``, ``layers.LeakyReLU``), and so is an add, subtract or
multiply of two such values where Keras's merge layers take the shapes (same rank and batch size):
``model.get_layer(name)`` then finds them under the IR node's name. Everything else is one
``keras.ops`` call per node, made from the declaration tables: a binary row names its function
(``ops.add``), a unary row carries an expression template whose ``{x}`` is the input and whose other
fields are the node's attributes as literals. Special functions keras.ops lacks (lgamma, digamma,
igamma, zeta) name a ``jax.scipy.special`` function, written as a ``JaxFunction`` layer (sort/to_keras.py).
polygamma(n >= 1) of a negative x is taken by reflection (``_polygamma_reflected``: jax's is wrong there).
Division picks its form by rounding mode; integer ``trunc`` stays exact, without a float round trip.

Example generated code:
    add = layers.Add(name='add')([x, y])
    mlp_1 = layers.Activation('gelu', name='mlp_1')(add)
    scaled = ops.multiply(x, 0.5)
"""
from __future__ import annotations

import math

from .._util import kind, named_rule
from ..elementwise import BINARY, BINARY_TABLE, BITCAST, CAST, WHERE
from ..elementwise.unary import UNARY, UNARY_TABLE
from ..sort.to_keras import jax_function
from .float8 import refuse_for_keras

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


#: binary ops that are a Keras merge layer
_MERGE_LAYERS = {"add": "Add", "sub": "Subtract", "mul": "Multiply"}


def _merge_layer_fits(node, k) -> bool:
    """Keras merge layers take float32 KerasTensors of one rank and one batch size, broadcasting the rest."""
    a, b = node.inputs
    out = node.outputs[0].type.shape
    return (k.layer_ready(node) and a.type.rank == b.type.rank == len(out) >= 1 and a.type.shape[0] == b.type.shape[0]
            and all(d in (1, o) for v in (a, b) for d, o in zip(v.type.shape, out)))


def _binary_emit(name, fn):
    def emit(node, k):
        if name in _MERGE_LAYERS and _merge_layer_fits(node, k):
            k.layer(node, _MERGE_LAYERS[name], {}, list(node.inputs))
            return
        a, b = (_bitwise_operand(k, v) if name.startswith("bitwise") else k.ref(v) for v in node.inputs)
        if fn.startswith("special."):
            k.assign(node, jax_function(k, fn, [a, b]))
            return
        if name == "copysign":  # |a| with b's sign bit (keras.ops has no copysign), in the result's dtype
            dtype = node.outputs[0].type.dtype
            a = a if node.inputs[0].type.dtype == dtype else f"ops.cast({a}, {k.lit(dtype)})"
            k.assign(node, f"ops.where(ops.signbit({b}), ops.negative(ops.abs({a})), ops.abs({a}))")
            return
        call = fn
        if name.startswith("bitwise") and node.outputs[0].type.dtype == "bool":  # the same on bools, and
            call = fn.replace("bitwise", "logical")  # broadcasts right: Keras' bitwise specs keep x's shape
        elif name.startswith("bitwise") and node.inputs[0].type.shape != node.outputs[0].type.shape:
            a = k.free_expr(node, "broadcast_to", a, k.graph.free_shape(node.outputs[0]))
        k.assign(node, _div_to_keras(node, k, a, b) if name == "div" else f"{call}({a}, {b})")
    return named_rule(emit, name, "to_keras")


def _bitwise_operand(k, value) -> str:
    """``ref``, but a stored 0-d value as a typed NumPy scalar: Keras' bitwise ops read the operand's dtype."""
    if not k.is_param(value) or value.type.rank != 0:
        return k.ref(value)
    k.uses_numpy = True
    return f"np.array({k.lit(k.param(value).item())}, dtype={k.lit(value.type.dtype)})"


for _name, (_, _fn, _, _) in BINARY_TABLE.items():
    BINARY[_name].emits("keras-jax")(_binary_emit(_name, _fn))


@CAST.emits("keras-jax")
def _cast_to_keras(node, k):
    refuse_for_keras(node)
    k.assign(node, f"ops.cast({k.ref(node.inputs[0])}, {k.lit(node.attrs['dtype'])})")


@BITCAST.emits("keras-jax")
def _bitcast_to_keras(node, k):
    refuse_for_keras(node)
    k.assign(node, f"ops.view({k.ref(node.inputs[0])}, {k.lit(node.attrs['dtype'])})")


@WHERE.emits("keras-jax")
def _where_to_keras(node, k):
    c, a, b = (k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.where({c}, {a}, {b})")


#: unary ops that are ``layers.Activation(name)`` with Keras's default arguments
_ACTIVATIONS = {"silu": "silu", "sigmoid": "sigmoid", "tanh": "tanh", "hardswish": "hard_silu",
                "hardsigmoid": "hard_sigmoid", "mish": "mish"}


def _activation_layer(node):
    """(Keras layer class, arguments) computing the unary ``node`` as torch does, or None."""
    op, a = node.op.name, node.attrs
    if op == "relu" or (op == "clamp" and a["min"] == 0 and a["max"] is None):
        return "ReLU", {}
    if op == "clamp" and a["min"] == 0 and a["max"] is not None and a["max"] > 0:
        return "ReLU", {"max_value": float(a["max"])}  # ReLU6 and the like
    if op == "leaky_relu":
        return "LeakyReLU", {"negative_slope": float(a["negative_slope"])}
    if (op == "gelu" and a["approximate"] == "none") or (op == "elu" and a["alpha"] == 1.0):
        return "Activation", {"activation": op}
    if op in _ACTIVATIONS:
        return "Activation", {"activation": _ACTIVATIONS[op]}
    return None


def _unary_emit(name, template):
    def emit(node, k):
        layer = _activation_layer(node) if k.layer_ready(node) else None
        if layer is not None:
            k.layer(node, layer[0], layer[1], [node.inputs[0]])
            return
        if name == "polygamma" and int(node.attrs["n"]) >= 1:
            k.assign(node, _polygamma_reflected(node, k, int(node.attrs["n"])))
            return
        if template.startswith("special."):
            prefix = [int(node.attrs["n"])] if "n" in node.attrs else []
            k.assign(node, jax_function(k, template, [k.ref(node.inputs[0])], prefix=prefix))
            return
        fields = {a: k.lit(v) for a, v in node.attrs.items()}
        fields["approximate_bool"] = k.lit(node.attrs.get("approximate") == "tanh")
        k.assign(node, template.format(x=k.ref(node.inputs[0]), **fields))
    return named_rule(emit, name, "to_keras")


def _cot_derivative(n) -> list:
    """Coefficients, lowest first, of D_n with (d/du)^n cot(u) = D_n(cot u): D_0(c) = c, D_k+1 = -(1 + c^2) D_k'."""
    coef = [0.0, 1.0]
    for _ in range(n):
        deriv = [i * c for i, c in enumerate(coef)][1:] or [0.0]
        coef = [-(a + b) for a, b in zip([*deriv, 0.0, 0.0], [0.0, 0.0, *deriv])]
    return coef


def _polygamma_reflected(node, k, n) -> str:
    """polygamma(n >= 1, x) with x < 0 by reflection: jax's Hurwitz zeta sums only 9 terms before its asymptotic
    tail, wrong for q below about -5 where torch's Cephes sums until q + i > 9 (trigamma(-8.6): 10.76, jax -5.60).
    psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) D_n(cot(pi x)), cot taken at x - round(x) (exact in float)."""
    x = k.ref(node.inputs[0])
    direct = jax_function(k, "special.polygamma", [x], prefix=[n])
    mirror = jax_function(k, "special.polygamma", [f"ops.subtract(1.0, {x})"], prefix=[n])
    turn = k.temp(node, f"ops.multiply({math.pi!r}, ops.subtract({x}, ops.round({x})))", "turn")
    cot = k.temp(node, f"ops.divide(ops.cos({turn}), ops.sin({turn}))", "cot")
    poly = "0.0"
    for c in reversed(_cot_derivative(n)):
        poly = f"ops.add(ops.multiply({poly}, {cot}), {c!r})"
    scale = math.pi ** (n + 1)
    mirrored = f"ops.subtract(ops.multiply({float((-1) ** n)!r}, {mirror}), ops.multiply({scale!r}, {poly}))"
    return f"ops.where(ops.less({x}, 0.0), {mirrored}, {direct})"


for _name, (_, _template, _, _) in UNARY_TABLE.items():
    UNARY[_name].emits("keras-jax")(_unary_emit(_name, _template))
