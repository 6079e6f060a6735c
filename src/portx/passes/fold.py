"""Clean-up passes: dead-node removal.

Example (before / after)::

    %a = relu(%x)            %b = neg(%x)
    %b = neg(%x)       ->    return %b
    return %b
"""
from __future__ import annotations

from ..ir import Graph

__all__ = ["remove_dead_nodes"]


def remove_dead_nodes(graph: Graph) -> Graph:
    """Drop nodes whose outputs no graph output depends on, and parameters nothing reads."""
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(v in live for v in node.outputs):
            kept.append(node)
            live.update(v for v in node.inputs if v is not None)
    names = {v.name for v in live}
    return graph.replace(nodes=tuple(reversed(kept)),
                         params={k: a for k, a in graph.params.items() if k in names},
                         param_values={k: v for k, v in graph.param_values.items() if k in names})
