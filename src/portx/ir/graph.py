"""Graph and Node: the whole IR container, frozen and topologically ordered.

Example:
    >>> g = Graph(inputs=(x,), outputs=(y,), nodes=(node,), params={})
    >>> [n.op.name for n in g.nodes]
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .types import TensorType, Value

__all__ = ["Node", "Graph", "param_value", "fresh_name"]


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One op application. ``inputs`` may hold None for an absent optional input.

    Example: ``Node(RELU, (x,), (y,), {}, "layer1.relu")``.
    """

    op: object  # an OpDef; typed loosely to keep ir/ free of import cycles
    inputs: tuple
    outputs: tuple
    attrs: dict = field(default_factory=dict)
    scope: str = ""

    def replace(self, **changes) -> "Node":
        """A copy with some fields changed: ``node.replace(scope="head")``."""
        return replace(self, **changes)

    @property
    def output(self) -> Value:
        """The single output of a one-output node."""
        return self.outputs[0]

    def where(self) -> str:
        """How messages name this node: ``node layer1.conv (conv)``."""
        return f"node {self.scope or self.outputs[0].name} ({self.op.name})"


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    """Inputs, outputs, nodes in topological order, and parameters keyed by value name.

    ``params`` maps a value name to its NumPy array; ``param_values`` maps it to the Value.
    ``meta`` holds facts frontends and passes record for later stages (the layout pass's input/output
    layouts; ``trainable``: the names of the params that are trainable in the source; ``folded`` and
    ``dropped``: source modules folded or dropped; ``status_values``: the error-status values of nodes a pass
    rewrote); ``replace`` carries it along.
    Example: ``graph.params["conv.weight"].shape``.
    """

    inputs: tuple
    outputs: tuple
    nodes: tuple
    params: dict = field(default_factory=dict)
    param_values: dict = field(default_factory=dict)
    name: str = "model"
    meta: dict = field(default_factory=dict)

    def replace(self, **changes) -> "Graph":
        """A copy with some fields changed."""
        return replace(self, **changes)

    def is_param(self, value) -> bool:
        """True when ``value`` is a stored parameter or constant."""
        return value is not None and self.param_values.get(value.name) is value

    def is_trainable(self, name: str) -> bool:
        """True when param ``name`` is a trainable parameter of the source (``meta["trainable"]``), or a
        pass's copy of one (``w.t0231`` transposed, ``w.folded``): the source's name with dotted suffixes.

        Buffers, statistics and folded constants are not. Example: ``graph.is_trainable("pos_embed")``.
        """
        return self.trainable_root(name) is not None

    def trainable_root(self, name: str):
        """The trainable source parameter (``meta["trainable"]``) that param ``name`` is, or a pass's copy of
        (``w.t0231`` -> ``w``); None for buffers, statistics and folded constants."""
        names = self.meta.get("trainable", ())
        while name not in names:
            if "." not in name:
                return None
            name = name.rsplit(".", 1)[0]
        return name

    def free_attrs(self, node) -> dict:
        """``node.attrs`` with the free dims of ``meta["free"]`` (SymDims) in place of the example's ints."""
        free = self.meta.get("free", {}).get("attrs", {}).get(node.outputs[0].name) if node.outputs else None
        return {**node.attrs, **free} if free else node.attrs

    def free_shape(self, value) -> tuple:
        """``value``'s shape with SymDims on its free axes (Note [free dims] in types.py)."""
        axes = self.meta.get("free", {}).get("values", {}).get(value.name, {})
        return tuple(axes.get(axis, d) for axis, d in enumerate(value.type.shape))

    def producers(self) -> dict:
        """Map from Value to the node that produces it."""
        return {out: node for node in self.nodes for out in node.outputs}

    def users(self) -> dict:
        """Map from Value to the list of nodes reading it."""
        result = {}
        for node in self.nodes:
            for value in node.inputs:
                if value is not None:
                    result.setdefault(value, []).append(node)
        return result

    def weight_bytes(self) -> int:
        """Total bytes of all parameters."""
        return sum(int(a.nbytes) for a in self.params.values())


def param_value(name: str, array: np.ndarray) -> Value:
    """The Value that stands for a stored array: ``param_value("fc.weight", w)``."""
    return Value(name, TensorType(array.shape, str(array.dtype)))


def fresh_name(taken, base: str) -> str:
    """``base``, or ``base_1``, ``base_2``... whichever ``taken`` (a set or dict) does not hold yet."""
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name
