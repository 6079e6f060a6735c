"""GraphBuilder: the incremental way frontends (Keras, jaxpr) and passes assemble a Graph.

Example:
    >>> b = GraphBuilder("model")
    >>> x = b.input("x", TensorType((1, 3, 8, 8), "float32"))
    >>> w = b.param("conv.weight", np.zeros((4, 3, 3, 3), np.float32))
    >>> y = b.emit("conv", [x, w], {"stride": (1, 1), "pads": ((1, 1), (1, 1)), "dilation": (1, 1)}, "conv")
    >>> graph = b.finish([y])
"""
from __future__ import annotations

import numpy as np

from .graph import Graph, Node, fresh_name, param_value
from .opdef import lookup
from .types import TensorType, Value
from .validate import IRError, infer_outputs

__all__ = ["GraphBuilder", "holds_trainable", "held_weight"]


def held_weight(array, read):
    """The index in ``read`` ((array, trainable, ...) tuples: the weights a frontend rule read) of the weight that the
    param ``array`` it stores holds: a view of one; else a trainable one re-arranged into a copy (``kernel.T`` made
    contiguous): the same size and sum. None for a rule's own constants (an epsilon)."""
    array = np.asarray(array)
    for index, (weight, *_) in enumerate(read):
        if np.shares_memory(array, weight):
            return index
    if array.size > 1:
        for index, (weight, trainable, *_) in enumerate(read):
            if trainable and array.size == np.size(weight) and np.isclose(
                    np.sum(array, dtype=np.float64), np.sum(weight, dtype=np.float64), rtol=1e-6, atol=0.0):
                return index
    return None


def holds_trainable(array, read) -> bool:
    """True when the param ``array`` a frontend rule stores holds a trainable weight of those it ``read``
    (``held_weight``). A rule's own constants (an epsilon) match none."""
    index = held_weight(array, read)
    return index is not None and read[index][1]


class GraphBuilder:
    """Holds nodes, parameters and taken names while a frontend walks its source."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.inputs, self.nodes = [], []
        self.params, self.param_values, self.taken = {}, {}, set()
        self.dropped = []  # source modules that are identities at inference (meta["dropped"])
        self.trainable = []  # names of the params that train in the source (meta["trainable"])
        self.sources = {}  # param name -> the source's own name of the weight it holds (meta["param_sources"])

    def fresh(self, hint: str) -> str:
        """A value name not used yet, derived from ``hint``."""
        name = fresh_name(self.taken, hint or "v")
        self.taken.add(name)
        return name

    def input(self, hint: str, type_: TensorType) -> Value:
        """A new graph input."""
        value = Value(self.fresh(hint), type_)
        self.inputs.append(value)
        return value

    def param(self, hint: str, array) -> Value:
        """A new stored parameter or constant: ``array`` itself, a strided view where it is one (Note [lazy
        relayout] in ops/_jax.py)."""
        array = np.asarray(array)
        name = self.fresh(hint)
        self.params[name] = array
        self.param_values[name] = value = param_value(name, array)
        return value

    def emit(self, op, inputs, attrs=None, scope: str = "", hint: str = ""):
        """Append ``op(inputs) {attrs}`` (op is an OpDef or its name); returns the output Value or a list."""
        op = lookup(op) if isinstance(op, str) else op
        where = f"node {scope or hint} ({op.name})"
        attrs = op.normalize_attrs(dict(attrs or {}), where)
        try:
            types = infer_outputs(op, [v.type if v is not None else None for v in inputs], attrs)
        except (ValueError, TypeError, IndexError) as exc:
            raise IRError(f"{where}: shape rule failed: {exc}") from exc
        base = hint or (scope.replace(".", "_") if scope else op.name)
        outs = tuple(Value(self.fresh(base), t) for t in types)
        self.nodes.append(Node(op, tuple(inputs), outs, attrs, scope))
        return outs[0] if len(outs) == 1 else list(outs)

    def finish(self, outputs) -> Graph:
        """The Graph with the given outputs (dead nodes are left for ``remove_dead_nodes``)."""
        meta = {"dropped": list(self.dropped)} if self.dropped else {}
        if self.trainable:
            meta["trainable"] = sorted(set(self.trainable))
        if self.sources:
            meta["param_sources"] = dict(self.sources)
        return Graph(tuple(self.inputs), tuple(outputs), tuple(self.nodes), dict(self.params),
                     dict(self.param_values), self.name, meta)
