"""Outputs that do not depend on any model input, evaluated once at emit time.

A Keras functional model returns only KerasTensors, so an output the graph computes from constants alone
(``torch.arange(5)``, ``torch.signal.windows.hann(8)``, ``torch.eye(3)`` beside a computed output) is
written as a stored array: each op's NumPy reference evaluates the nodes it needs here. A random op
(``ops.random.RANDOM_OPS``) is never evaluated here: it draws at run time, so its outputs count as live
(Note [random ops] in frontends/torch/dynamic.py).

Example:
    >>> constant_outputs(graph)          # {Value: array} for every output no input reaches
    {<Value hann>: array([0., 0.188, ...], dtype=float32)}
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOps
from ..ops.random import RANDOM_OPS

__all__ = ["live_values", "constant_outputs", "evaluate_constant"]


def live_values(graph) -> set:
    """The values computed at run time: from the graph's inputs (the inputs included) or from a random draw."""

    live = set(graph.inputs)
    for node in graph.nodes:
        if node.op in RANDOM_OPS or any(v in live for v in node.inputs if v is not None):
            live.update(node.outputs)
    return live


def evaluate_constant(graph, value) -> np.ndarray:
    """``value`` (one no input reaches) evaluated with each op's NumPy reference, in its IR dtype."""

    producer = {out: node for node in graph.nodes for out in node.outputs}
    env = {}

    def get(v):
        if v in env:
            return env[v]
        if graph.is_param(v):
            env[v] = np.asarray(graph.params[v.name])
            return env[v]
        node = producer[v]
        if node.op in RANDOM_OPS:
            raise UnsupportedOps([(node.op.name, [node.scope], "a model with no inputs draws random numbers: "
                                  "Keras needs an input to draw them at run time; give forward an input")])
        args = [None if i is None else get(i) for i in node.inputs]
        while args and args[-1] is None and not node.op.variadic:
            args.pop()
        result = node.op.reference_rule(*args, **node.attrs)
        for out, array in zip(node.outputs, result if isinstance(result, (list, tuple)) else [result]):
            env[out] = np.asarray(array)
        return env[v]

    array = get(value)
    return np.asarray(array, dtype=np.dtype(value.type.dtype) if value.type.dtype != "bfloat16" else array.dtype)


def constant_outputs(graph) -> dict:
    """{output Value: array} for each graph output that is no stored array and that no input reaches."""
    live = live_values(graph)
    return {v: evaluate_constant(graph, v) for v in graph.outputs if v not in live and not graph.is_param(v)}
