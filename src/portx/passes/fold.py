"""Clean-up passes: dead-node removal.

Example (before / after)::

    %a = relu(%x)            %b = neg(%x)
    %b = neg(%x)       ->    return %b
    return %b
"""
from __future__ import annotations

from ..ir import Graph

__all__ = ["remove_dead_nodes", "merge_reshapes_and_permutes"]


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


def merge_reshapes_and_permutes(graph: Graph) -> Graph:
    """Collapse chains of reshapes and of permutes; drop identity ones.

    Before / after::

        %a: f32[4x6] = reshape(%x) {shape=(4, 6)}
        %b: f32[2x2x6] = reshape(%a) {shape=(2, 2, 6)}   ->   %b = reshape(%x) {shape=(2, 2, 6)}
        %c = permute(%b) {perm=(1, 0, 2)}
        %d = permute(%c) {perm=(1, 0, 2)}                 ->   (gone: %d is %b)
    """
    from ..ops.shape import PERMUTE, RESHAPE

    producer = {}
    alias = {}  # Value -> the Value that replaces it
    nodes = []
    for node in graph.nodes:
        node = node.replace(inputs=tuple(alias.get(v, v) for v in node.inputs))
        source = node.inputs[0] if node.inputs else None
        if node.op is RESHAPE or node.op is PERMUTE:
            parent = producer.get(source)
            if parent is not None and parent.op is node.op:
                if node.op is RESHAPE:
                    node = node.replace(inputs=(parent.inputs[0],))
                else:
                    inner, outer = parent.attrs["perm"], node.attrs["perm"]
                    node = node.replace(inputs=(parent.inputs[0],), attrs={"perm": tuple(inner[i] for i in outer)})
            if _is_identity(node):
                alias[node.output] = node.inputs[0]
                continue
        nodes.append(node)
        for out in node.outputs:
            producer[out] = node
    outputs = tuple(alias.get(v, v) for v in graph.outputs)
    if any(v in graph.inputs or graph.is_param(v) for v in outputs):
        return graph  # an output would become an input: keep the explicit node
    return remove_dead_nodes(graph.replace(nodes=tuple(nodes), outputs=outputs))


def _is_identity(node) -> bool:
    if node.op.name == "reshape":
        return node.inputs[0].type.shape == node.output.type.shape
    return tuple(node.attrs["perm"]) == tuple(range(len(node.attrs["perm"])))
