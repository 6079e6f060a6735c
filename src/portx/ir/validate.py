"""Structural and type validation of a Graph.

Example:
    >>> validate(graph)          # raises IRError naming the node at fault
"""
from __future__ import annotations

from .graph import Graph
from .types import TensorType

__all__ = ["IRError", "validate", "infer_outputs"]


class IRError(ValueError):
    """An IR invariant is broken; the message names the node and what was expected."""


def infer_outputs(op, input_types, attrs) -> list:
    """Output types from the op's rule, always as a list."""
    result = op.infer_rule(*input_types, **attrs)
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _check_node(node, defined, graph):
    op = node.op
    if op.infer_rule is None:
        raise IRError(f"{node.where()}: op has no shape rule")
    for value in node.inputs:
        if value is not None and value not in defined:
            raise IRError(f"{node.where()}: input %{value.name} is used before it is defined")
    present = [v for v in node.inputs if v is not None]
    if len(present) < op.min_inputs():
        raise IRError(f"{node.where()}: needs {op.min_inputs()} inputs, got {len(present)}")
    if not op.variadic and len(node.inputs) > len(op.input_names):
        raise IRError(f"{node.where()}: takes {len(op.input_names)} inputs, got {len(node.inputs)}")
    try:
        attrs = op.normalize_attrs(node.attrs, node.where())
        expected = infer_outputs(op, [v.type if v is not None else None for v in node.inputs], attrs)
    except (ValueError, TypeError, IndexError) as exc:
        raise IRError(f"{node.where()}: shape rule failed: {exc}") from exc
    if len(expected) != len(node.outputs):
        raise IRError(f"{node.where()}: rule gives {len(expected)} outputs, node has {len(node.outputs)}")
    for value, want in zip(node.outputs, expected):
        if not isinstance(want, TensorType) or value.type != want:
            raise IRError(f"{node.where()}: output %{value.name} is {value.type}, shape rule says {want}")


def validate(graph: Graph) -> Graph:
    """Check order, names and types; return the graph so calls can chain."""
    defined = set(graph.inputs) | set(graph.param_values.values())
    names = {v.name for v in defined}
    if len(names) != len(defined):
        raise IRError("graph inputs and parameters reuse a name")
    for name, value in graph.param_values.items():
        array = graph.params.get(name)
        if array is None or tuple(array.shape) != value.type.shape or str(array.dtype) != value.type.dtype:
            raise IRError(f"parameter {name}: stored array does not match its type {value.type}")
    for node in graph.nodes:
        _check_node(node, defined, graph)
        for out in node.outputs:
            if out in defined or out.name in names:
                raise IRError(f"{node.where()}: output name %{out.name} is defined twice")
            defined.add(out)
            names.add(out.name)
    for out in graph.outputs:
        if out not in defined:
            raise IRError(f"graph output %{out.name} is never defined")
    return graph
