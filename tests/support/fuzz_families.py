"""Op families for the graph fuzzer (``fuzz_graphs.py``): one builder per family of registered ops.

Each entry of ``FAMILIES`` is ``(name, accepts, build)``: ``accepts(b, value)`` says whether the
value can be the family's main operand, and ``build(b, x)`` draws attributes and partner operands
(parameters, new graph inputs or values already in the graph) and emits the nodes. Attribute
ranges follow the torch import rules (e.g. max_pool padding at most half the effective kernel,
output_padding below stride or dilation), since those are the graphs real models produce.

Example:
    >>> name, accepts, build = FAMILIES[0]
"""
from __future__ import annotations

import numpy as np

from portx.ops._util import broadcast_shapes
from portx.ops.attention import ATTENTION
from portx.ops.elementwise import BINARY, CAST, WHERE
from portx.ops.embedding import EMBEDDING
from portx.ops.linear import LINEAR, MATMUL
from portx.ops.elementwise.unary import UNARY
from tests.support.fuzz_graphs import broadcast_partner_shape, broadcasts, is_float, is_int
from tests.support.fuzz_layers import LAYER_FAMILIES
from tests.support.fuzz_shapes import SHAPE_FAMILIES

__all__ = ["FAMILIES"]

_ATTRS = {
    "clamp": lambda b: dict(zip(("min", "max"), sorted([b.num(-2, 2), b.num(-2, 2)])))
    if b.flag() else b.pick([{"min": b.num(-1, 1)}, {"max": b.num(-1, 1)}]),
    "leaky_relu": lambda b: {"negative_slope": b.num(0, 0.5)},
    "elu": lambda b: {"alpha": b.num(0.1, 2)},
    "gelu": lambda b: {"approximate": b.pick(["none", "tanh"])},
    "softplus": lambda b: {"beta": b.pick([1.0, 0.5, 2.0]), "threshold": b.pick([20.0, 1.0, 5.0])},
}
_NEEDS_POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal", "log1p", "log2", "log10", "lgamma", "digamma", "polygamma"}
_NEEDS_UNIT = {"asin", "acos", "atanh", "erfinv", "tan"}  # |x| < 1
_GROWS = {"exp", "expm1", "exp2", "sinh", "cosh", "i0", "i1", "erfcx"}  # kept finite however large values grew
_NOT_FUZZED = {"logical_not", "bitwise_not", "signbit", "ndtri"}  # bool results; ndtri needs (0, 1)
_KEEPS_EXACT = {"relu", "abs", "neg", "clamp", "floor", "ceil", "sign", "trunc", "round", "stop_gradient"}
_ARITH = ("add", "sub", "mul", "div", "pow", "minimum", "maximum")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def _numeric(v) -> bool:
    return is_float(v) or is_int(v)


def _unary(b, x):
    """One unary op; ints get the integer-safe ones, bools logical_not."""
    if x.type.dtype == "bool":
        return b.emit(UNARY["logical_not"], [x], exact=True)
    names = sorted(set(UNARY) - _NOT_FUZZED) if is_float(x) else \
        ["abs", "neg", "sign", "relu", "bitwise_not"]
    name = b.pick(names)
    if name in _NEEDS_POSITIVE:
        x = b.positive(x)
    elif name in _GROWS:
        x = b.emit(UNARY["clamp"], [x], {"min": -6.0, "max": 6.0})
    elif name in _NEEDS_UNIT:
        x = b.emit(BINARY["mul"], [b.emit(UNARY["tanh"], [x]), b.param(np.array(0.9, x.type.dtype))])
    elif name == "acosh":  # x >= 1
        x = b.emit(BINARY["add"], [b.positive(x), b.param(np.array(1.0, x.type.dtype))])
    attrs = _ATTRS[name](b) if name in _ATTRS else {}
    return b.emit(UNARY[name], [x], attrs, exact=name in _KEEPS_EXACT)


def _partner(b, x, dtype=None, exact=False, shape=None):
    """A second operand broadcasting against ``x`` (or ``shape``).

    It is x itself, a value already in the graph (exact when ``exact``), a parameter, a 0-d
    constant or a new graph input.
    """
    dtype, shape = dtype or x.type.dtype, shape or x.type.shape
    source = b.pick(["self", "value", "param", "scalar", "input"])
    if source == "self" and x.type.dtype == dtype:
        return x
    if source == "value":
        found = b.existing(lambda v: v.type.dtype == dtype and broadcasts(v.type.shape, shape)
                           and (v in b.exact or not exact))
        if found is not None:
            return found
    if source == "input":
        return b.input(broadcast_partner_shape(b, shape), dtype)
    shape = () if source == "scalar" else broadcast_partner_shape(b, shape)
    return b.param(b.data(shape, dtype), "c")


def _arith(b, x):
    """Arithmetic with broadcasting; div by |y| + 0.5 (either sign), pow of a positive base to [-2, 2]."""
    name = b.pick(_ARITH if is_float(x) else [n for n in _ARITH if n != "pow"])
    y = _partner(b, x)
    attrs = {}
    if name == "div":
        y = b.positive(y) if b.flag() else b.emit(BINARY["mul"], [b.positive(y), b.param(np.array(-1, y.type.dtype))])
        attrs = {"rounding_mode": b.pick([None, None, "floor", "trunc"])}
    elif name == "pow":
        x, y = b.positive(x), b.emit(UNARY["clamp"], [y], {"min": -2.0, "max": 2.0})
    a, c = (y, x) if b.flag() and name in ("add", "mul", "minimum", "maximum") else (x, y)
    return b.emit(BINARY[name], [a, c], attrs, exact=name in ("minimum", "maximum"))


def _compare(b, x):
    """A comparison of exact operands (a rounding difference would flip the result)."""
    return b.emit(BINARY[b.pick(_COMPARE)], [x, _partner(b, x, exact=True)], exact=True)


def _bool_of(b, x):
    """A bool value broadcasting against ``x``: an existing bool, a comparison, or a stored mask."""
    found = b.existing(lambda v: v.type.dtype == "bool" and broadcasts(v.type.shape, x.type.shape))
    if found is not None and b.flag():
        return found
    exact = b.existing(lambda v: v in b.exact and _numeric(v) and broadcasts(v.type.shape, x.type.shape))
    if exact is not None and b.flag():
        cond = _compare(b, exact)
        if broadcasts(cond.type.shape, x.type.shape):
            return cond
    return b.param(b.data(broadcast_partner_shape(b, x.type.shape), "bool"), "mask")


def _logical(b, x):
    return b.emit(BINARY[b.pick(["logical_and", "logical_or"])], [x, _bool_of(b, x)], exact=True)


def _where(b, x):
    cond = _bool_of(b, x)
    other = _partner(b, x, shape=broadcast_shapes(cond.type.shape, x.type.shape))
    return b.emit(WHERE, [cond, x, other], exact=True)


def _cast(b, x):
    """Casts that round nothing: bool to numbers, ints to float, exact floats to bool."""
    if x.type.dtype == "bool":
        dtype = b.pick(["float32", "int32", "int64"])
    elif is_int(x):
        dtype = b.pick(["float32", "int32", "int64", "bool"])
    elif x in b.exact:
        dtype = "bool"
    else:
        return None
    return b.emit(CAST, [x], {"dtype": dtype}, exact=True)


def _bias(b, n):
    return b.stored((n,), hint=".bias") if b.flag() else None


def _linear(b, x):
    """x @ W.T (+ b) over the last axis; W stored (a Dense layer) or an input (a matmul)."""
    w = b.weight((b.int(1, 6), x.type.shape[-1]))
    bias = _bias(b, w.type.shape[0])
    return b.emit(LINEAR, [x, w] + ([bias] if bias is not None else []))


def _matmul(b, x):
    """Batched NumPy matmul with a vector, a matrix or a stack of matrices broadcasting against x."""
    k, n = x.type.shape[-1], b.int(1, 5)
    shapes = [(k,), (k, n)] + ([x.type.shape[:-2][-1:] + (k, n)] if x.type.rank > 2 else [])
    if x.type.rank == 1:
        shapes.append((b.int(1, 2), k, n))
    other = b.weight(b.pick(shapes), "w")
    return b.emit(MATMUL, [x, other])


def _attention(b, x):
    """q = x of shape (..., L, E); keys and values stored (or x itself), masks bool or additive."""
    *batch, length, e = x.type.shape
    gqa = len(batch) == 2 and batch[1] > 1 and b.flag()
    kv_batch = (batch[0], b.pick([h for h in range(1, batch[1]) if batch[1] % h == 0])) if gqa else tuple(batch)
    s = b.int(1, 5)
    key = x if not gqa and b.int(0, 3) == 0 else b.param(b.data(kv_batch + (s, e)), "key")
    s = key.type.shape[-2]
    value = b.param(b.data(kv_batch + (s, b.int(1, 5))), "value")
    mask, causal = None, b.flag()
    if not causal and b.flag():
        dtype = b.pick(["bool", "float32"])
        mask = b.param(b.data(b.pick([(length, s), (1, length, s), (length, 1)]), dtype), "mask")
    attrs = {"is_causal": causal, "enable_gqa": gqa, "scale": b.pick([float(1.0 / np.sqrt(e)), b.num(0.1, 1.0)])}
    return b.emit(ATTENTION, [x, key, value] + ([mask] if mask is not None else []), attrs)


def _embedding(b, x):
    """Rows of a stored table picked by an integer graph input (make_inputs keeps ids in range)."""
    ids = x if is_int(x) and x in b.inputs else b.input((b.int(1, 2), b.int(1, 4)), b.pick(["int32", "int64"]))
    shape = (b.int(2, 6), b.int(1, 5))
    table = b.input(shape) if b.int(0, 3) == 0 else b.stored(shape)  # computed or stored
    return b.emit(EMBEDDING, [table, ids])


def _numeric_exact(b, v):
    return _numeric(v) and v in b.exact


_WEIGHTS = {"unary": 6, "arith": 3, "reduce": 2, "compare": 2}  # families of many ops are drawn more often

FAMILIES = LAYER_FAMILIES + [
    ("attention", lambda b, v: is_float(v) and v.type.rank in (3, 4), _attention),
    ("linear", lambda b, v: is_float(v) and v.type.rank >= 1, _linear),
    ("matmul", lambda b, v: is_float(v) and v.type.rank >= 1, _matmul),
    ("arith", lambda b, v: _numeric(v), _arith),
    ("where", lambda b, v: True, _where),
    ("unary", lambda b, v: True, _unary),
    ("compare", _numeric_exact, _compare),
    ("logical", lambda b, v: v.type.dtype == "bool", _logical),
    ("cast", lambda b, v: True, _cast),
    ("embedding", lambda b, v: True, _embedding),
] + SHAPE_FAMILIES
FAMILIES = [f for f in FAMILIES for _ in range(_WEIGHTS.get(f[0], 1))]
