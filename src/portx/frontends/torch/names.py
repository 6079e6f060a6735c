"""Naming helpers shared by the torch frontend modules: ATen op names and module scopes.

Example:
    >>> op_name(torch.ops.aten.conv2d.default)
    'aten::conv2d'
"""
from __future__ import annotations

import torch

__all__ = ["module_classes", "module_kind", "op_name", "scope_of"]


def op_name(target) -> str:
    """The schema name of an fx call target (``aten::conv2d``), or the callable's name."""
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.name
    return getattr(target, "__name__", str(target))


def scope_of(node) -> str:
    """The source module path an fx node came from (``layer1.0.conv1``), '' at the top level."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    return _clean(list(stack.values())[-1][0])


def _clean(path: str) -> str:
    return path.replace("L['self'].", "").replace("L__self__.", "")


def _class_name(kind) -> str:
    return (kind if isinstance(kind, str) else getattr(kind, "__qualname__", str(kind))).rsplit(".", 1)[-1]


def module_classes(graph) -> dict:
    """{source module path: its class name} over an fx graph's nodes (``graph.meta["module_classes"]``: the
    emitters name block classes after them). Example: ``{"layer1.0": "Bottleneck", "layer1": "Sequential"}``."""
    found = {}
    for node in graph.nodes:
        for path, kind in (node.meta.get("nn_module_stack") or {}).values():
            found.setdefault(_clean(path), _class_name(kind))
    return found


def module_kind(node) -> str:
    """The class name of the innermost source module an fx node came from (``Dropout``), '' at the top level.

    A live export records the class, a loaded ``.pt2`` its qualified name as a string.
    """
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    return _class_name(list(stack.values())[-1][1])
