"""Random valid IR graphs for ``tests/test_fuzz.py``, built directly with ``portx.ir``.

``graphs()`` is a hypothesis strategy: 1..3 graph inputs (mostly float32 NC... tensors, some
integer or bool), then 1..6 op applications drawn from the families in ``FAMILIES`` (see
``fuzz_families.py``), each on an operand already in the graph. Output types come from each
op's own shape rule (``infer_outputs``), so graphs are valid by construction. Attribute ranges
follow what the torch import rules can produce. A node that would read only stored arrays is
folded into a new stored array, as the torch frontend folds everything input-independent.

Two rules keep the numeric comparison meaningful (no false alarms):
- Values outside an op's domain never reach it: log/sqrt/rsqrt/reciprocal, div denominators and
  pow bases go through ``positive`` (``|x| + 0.5``); exp and pow exponents are clamped.
- Discontinuous ops whose result flips on a rounding difference (comparisons, argmax, casts to
  bool) only read *exact* values: graph inputs, parameters, and data movement of exact values,
  which the NumPy reference and Keras hold bit for bit alike.

Example:
    >>> @given(graphs())
    ... def test_valid(graph): validate(graph)
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from portx.ir import Graph, Node, TensorType, Value, infer_outputs, param_value
from portx.ops._util import broadcast_shapes, kind
from portx.ops.elementwise import BINARY
from portx.ops.elementwise.unary import UNARY

__all__ = ["Builder", "graphs", "is_float", "is_int", "broadcast_partner_shape"]

# Node scopes name Keras layers: some clash with Keras' own op names, reserved words or input names.
SCOPES = ("", "", "", "block.conv", "layer1.0.act", "softmax", "dense", "add", "x0", "model", "class", "ops.pad")
INPUT_DTYPES = ("float32",) * 6 + ("int32", "int64", "bool")


def is_float(v) -> bool:
    """True for float32 values (the dtype every float op is fuzzed in)."""
    return v.type.dtype == "float32"


def is_int(v) -> bool:
    """True for int32 / int64 values."""
    return v.type.dtype in ("int32", "int64")


class Builder:
    """Collects inputs, parameters and nodes while the strategy builds a graph.

    Example: ``y = b.emit(UNARY["relu"], [b.input((1, 3))], exact=True)``.
    """

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)  # Note [seeded choices]
        self.inputs, self.nodes, self.values, self.exact = [], [], [], set()
        self.params, self.param_values = {}, {}

    # -- drawing ---------------------------------------------------------------------------------
    # Note [seeded choices]: every choice comes from one NumPy generator seeded by hypothesis. Drawn
    # from hypothesis directly, choices cluster on small values, False and first list items while
    # long examples are generated (8 of 26 unary ops in 400 graphs); seeded, they are uniform (18).
    # The cost is shrinking: a failure is reported as the graph hypothesis found, not a minimal one
    # (it prints as text IR of at most a dozen nodes).
    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, items):
        """One of ``items``."""
        items = list(items)
        return items[self.int(0, len(items) - 1)]

    def flag(self) -> bool:
        """True or False."""
        return self.int(0, 1) == 1

    def num(self, lo: float, hi: float) -> float:
        """A float in [lo, hi] with three decimals (short in text IR and generated code)."""
        return round(float(self.rng.uniform(lo, hi)), 3)

    def axes(self, rank: int, min_size: int = 1) -> tuple:
        """A sorted tuple of distinct axes."""
        count = self.int(min_size, rank)
        return tuple(sorted(int(a) for a in self.rng.choice(rank, size=count, replace=False)))

    def permutation(self, items) -> list:
        """``items`` in a random order."""
        return [items[i] for i in self.rng.permutation(len(items))]

    # -- values ----------------------------------------------------------------------------------
    def input(self, shape, dtype="float32") -> Value:
        """A new graph input."""
        value = Value(f"x{len(self.inputs)}", TensorType(tuple(shape), dtype))
        self.inputs.append(value)
        self.values.append(value)
        self.exact.add(value)
        return value

    def data(self, shape, dtype="float32", low=None, high=None) -> np.ndarray:
        """Seeded parameter data: normal floats, ints in [low, high), or bools."""
        if dtype == "bool":
            return self.rng.integers(0, 2, shape).astype(bool)
        if kind(dtype) == 1:
            return self.rng.integers(-3 if low is None else low, 4 if high is None else high, shape).astype(dtype)
        return self.rng.standard_normal(shape).astype(dtype)

    def param(self, array, hint="p") -> Value:
        """A stored parameter holding ``array``; ``hint`` ".weight" names it like a torch weight."""
        name = f"l{len(self.params)}{hint}" if hint.startswith(".") else f"{hint}{len(self.params)}"
        array = np.asarray(array)
        self.params[name] = array
        self.param_values[name] = value = param_value(name, array)
        self.exact.add(value)
        return value

    def emit(self, op, inputs, attrs=None, exact=False):
        """Append ``op(inputs) {attrs}`` with inferred output types; returns its Value (list if several).

        ``exact``: the op moves or selects data only, so exact inputs give exact outputs.
        """
        attrs = op.normalize_attrs(dict(attrs or {}))
        if all(v is None or v.name in self.param_values for v in inputs):
            return self._folded(op, inputs, attrs)
        types = infer_outputs(op, [None if v is None else v.type for v in inputs], attrs)
        i = len(self.nodes)
        outs = tuple(Value(f"v{i}" if len(types) == 1 else f"v{i}_{j}", t) for j, t in enumerate(types))
        self.nodes.append(Node(op, tuple(inputs), outs, attrs, self.pick(SCOPES)))
        self.values.extend(outs)
        if exact and all(v is None or v in self.exact for v in inputs):
            self.exact.update(outs)
        return outs[0] if len(outs) == 1 else list(outs)

    def _folded(self, op, inputs, attrs):
        """A node that reads only stored arrays becomes a stored array, as the frontend folds it."""
        arrays = [None if v is None else self.params[v.name] for v in inputs]
        while arrays and arrays[-1] is None:
            arrays.pop()
        types = infer_outputs(op, [None if v is None else v.type for v in inputs], attrs)
        result = op.reference_rule(*arrays, **attrs)
        results = result if isinstance(result, (list, tuple)) else [result]
        folded = [self.param(np.asarray(r).astype(t.dtype), "folded") for r, t in zip(results, types)]
        return folded if len(folded) > 1 else folded[0]

    def positive(self, x) -> Value:
        """``|x| + 0.5`` (``|x| + 1`` for ints): inside the domain of log, sqrt, division, pow."""
        one = np.array(0.5 if is_float(x) else 1, dtype=x.type.dtype)
        return self.emit(BINARY["add"], [self.emit(UNARY["abs"], [x]), self.param(one, "c")])

    def existing(self, accept):
        """A value already in the graph that ``accept`` allows (half the time the newest, which makes
        chains such as reshape -> reshape that the passes merge), or None."""
        found = [v for v in self.values if accept(v)]
        if not found:
            return None
        return found[-1] if self.flag() else self.pick(found)

    def stored(self, shape, dtype="float32", hint=".weight"):
        """A new parameter of ``shape``, or (sometimes) one already stored: weights tied between layers."""
        tied = [v for v in self.param_values.values() if v.type.shape == tuple(shape) and v.type.dtype == dtype]
        if tied and self.int(0, 3) == 0:
            return self.pick(tied)
        return self.param(self.data(shape, dtype), hint)

    def weight(self, shape, hint=".weight"):
        """A stored weight, or (sometimes) a graph input, as when a model multiplies by a computed tensor."""
        return self.input(shape) if self.int(0, 4) == 0 else self.stored(shape, hint=hint)

    def graph(self) -> Graph:
        """The finished graph: every unread value is an output, sometimes one more besides."""
        read = {v for n in self.nodes for v in n.inputs}
        produced = [v for n in self.nodes for v in n.outputs]
        outputs = [v for v in produced if v not in read]
        extra = [v for v in produced if v not in outputs]
        if extra and self.flag():
            outputs.append(self.pick(extra))
        if self.int(0, 7) == 0:  # a model may return one of its inputs unchanged
            outputs.append(self.pick(self.inputs))
        return Graph(tuple(self.inputs), tuple(outputs), tuple(self.nodes), self.params, self.param_values,
                     self.pick(["model", "fuzz", "Fuzz_Net2"]))


def broadcast_partner_shape(b, shape) -> tuple:
    """A shape that broadcasts against ``shape``: dims kept or 1, 1s grown, leading dims dropped or added."""
    dims = [b.pick([d, 1]) if d != 1 else b.pick([1, 1, 2, 3]) for d in shape]
    if b.flag():
        dims = dims[b.int(0, len(dims)):]
    elif len(shape) < 4 and b.int(0, 3) == 0:
        dims = [b.int(1, 2)] + dims
    return tuple(dims)


def _random_shape(b) -> tuple:
    rank = b.pick([1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5])
    return (b.int(1, 2),) + tuple(b.int(1, 6 if rank < 5 else 3) for _ in range(rank - 1))


def broadcasts(a, b_shape, max_rank=5) -> bool:
    """True when the shapes broadcast to a result of at most ``max_rank`` dims."""
    try:
        return len(broadcast_shapes(a, b_shape)) <= max_rank
    except ValueError:
        return False


@st.composite
def graphs(draw, families=None):
    """A random valid Graph (see the module docstring)."""
    from tests.support.fuzz_families import FAMILIES  # the families use Builder; import here to avoid a cycle

    b = Builder(draw(st.integers(0, 2**32 - 1)))
    for _ in range(b.int(1, 3)):
        dtype = b.pick(INPUT_DTYPES) if b.inputs else "float32"
        b.input(_random_shape(b), dtype)
    chosen, applied = families or FAMILIES, 0
    target = b.int(1, 6)
    for _ in range(40):  # some draws fit no value in the graph; try again
        name, accepts, build = b.pick(chosen)
        x = b.existing(lambda v: accepts(b, v))
        if x is not None:
            build(b, x)
            applied += 1
        if applied >= target:
            break
    if not b.nodes:  # nothing applied (e.g. only bool inputs for float families): one safe op
        b.emit(UNARY["logical_not"] if b.values[0].type.dtype == "bool" else UNARY["abs"], [b.values[0]])
    return b.graph()
