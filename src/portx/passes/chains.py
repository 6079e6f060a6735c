"""What the pattern-matching passes (fuse_idioms, fuse_attention) ask of a graph while they read a chain of ops.

Example:
    >>> chains = Chains(graph)
    >>> chains.only(value, SOFTMAX)   # the softmax producing value, when nothing else reads value
"""
from __future__ import annotations

__all__ = ["Chains", "near"]


def near(a, b, rel=1e-6) -> bool:
    """``a`` (a float or None) within ``rel`` of ``b``, relative: a float32 constant read as the number it rounds."""
    return a is not None and abs(a - b) <= rel * abs(b)


class Chains:
    """The graph facts a match needs: producers, reader counts, outputs, scalar constants."""

    def __init__(self, graph):
        self.graph = graph
        self.producer = graph.producers()
        self.users = graph.users()
        self.readers = {v: len(users) for v, users in self.users.items()}
        self.outputs = set(graph.outputs)

    def only(self, value, op, used=None, readers=1):
        """The node producing ``value`` with ``op`` when ``value`` has ``readers`` readers and is no graph output,
        else None; a node found joins ``used`` (the nodes a match replaces) when given."""
        node = self.producer.get(value)
        if node is None or node.op is not op or self.readers.get(value, 0) != readers or value in self.outputs:
            return None
        if used is not None:
            used.append(node)
        return node

    def scalar(self, value):
        """The float of a one-element real constant that does not train, or None (a complex one too)."""
        if not self.graph.is_param(value) or self.graph.is_trainable(value.name):
            return None
        array = self.graph.params[value.name]
        return float(array.reshape(())) if array.size == 1 and array.dtype.kind in "fiub" else None
