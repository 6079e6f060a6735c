"""The op-table driver: ``legalize(graph, table)`` applies the node rules a target's op table names.

Every op whose row says ``status = "rewrite:<rule>[,<rule>...]"`` has each of its nodes offered to
those node rules in order (``resize.py``, ``pool.py``); the first that matches replaces the node,
and a node no rule matches stays as it is (the emitter's native form). Both targets' pipelines
start with this step (``passes/pipeline.py``), so emitters only ever see what their table allows.
The table's dtype rows name graph passes (``dtypes.py``), which the pipelines list by name.

Example (before / after ``legalize(graph, "keras-jax")``; ``op.resize`` says
``rewrite:resize_nearest_as_repeat,...``)::

    %y: float32[1x2x4x4] = resize(%x) {size=(4, 4), mode='nearest', ...}    # up
        ->
    %y_split = reshape(%x) ...; %y_repeat = expand(%y_split) ...; %y = reshape(%y_repeat) ...
"""
from __future__ import annotations

from ...ir import Graph, IRError
from .decompose import DECOMPOSITIONS
from .rewriter import NODE_RULES, Rewriter
from .tables import load_table, rules_of

__all__ = ["apply_rules", "decompose", "legalize", "legalize_for_keras_jax", "legalize_for_torch_xla"]


def _plans(table) -> dict:
    """op name -> the node rules its row names, in order."""
    plans = {}
    for op, row in load_table(table).get("op", {}).items():
        names = rules_of(row.get("status", ""))
        if names:
            plans[op] = [NODE_RULES[n] for n in names]
    return plans


def legalize(graph: Graph, table: str = "keras-jax") -> Graph:
    """Apply the node rules the op table of ``table`` (a target name or alias) names to every node of those ops.

    Example: ``legalize(graph, "torch-xla")`` rewrites each uneven adaptive pool and every resize.
    """
    return apply_rules(graph, _plans(table))


def decompose(graph: Graph) -> Graph:
    """Apply the decompositions both targets share (Note [decompositions] in ``decompose.py``)."""
    return apply_rules(graph, DECOMPOSITIONS)


def apply_rules(graph: Graph, plans: dict) -> Graph:
    """Offer each node to the rules ``plans`` lists for its op (op name -> rules, in order); the first that
    matches replaces it, and a node no rule matches stays as it is. A replaced node's error statuses stay
    marked (Note [status outputs])."""
    rw, nodes, status = Rewriter(graph), [], list(graph.meta.get("status_values", ()))
    for node in graph.nodes:
        for rule in plans.get(node.op.name, ()):
            rw.begin(node)
            try:
                matched = rule(node.replace(attrs=node.op.normalize_attrs(node.attrs, node.where())), rw)
            except (ValueError, TypeError, IndexError) as exc:
                raise IRError(f"{node.where()}: rewrite {rule.__name__} failed: {exc}") from exc
            if matched:
                nodes.extend(rw.nodes)
                status += [node.outputs[i].name for i in node.op.status_outputs if i < len(node.outputs)]
                break
        else:
            nodes.append(node)
    if not rw.params and len(nodes) == len(graph.nodes) and all(a is b for a, b in zip(nodes, graph.nodes)):
        return graph
    meta = {**graph.meta, "status_values": status} if status else graph.meta
    return graph.replace(nodes=tuple(nodes), params={**graph.params, **rw.params},
                         param_values={**graph.param_values, **rw.param_values}, meta=meta)


# Note [status outputs]: an op may declare outputs that are an error status (``OpDef.status_outputs``:
# cholesky_ex's info), which verification reads to tell inputs outside the source's domain
# (verification/domain.py). A rewrite replaces the node by other ops, none of which declares it, but keeps the
# output's name (``Rewriter.result``), so the driver records the names of a replaced node's status outputs in
# ``graph.meta["status_values"]``, and verification reads both: the ops still in the graph and that list.


def legalize_for_keras_jax(graph: Graph) -> Graph:
    """``legalize(graph, "keras-jax")``: the keras-jax pipeline's op-table step (op_tables/keras_jax.toml)."""
    return legalize(graph, "keras-jax")


def legalize_for_torch_xla(graph: Graph) -> Graph:
    """``legalize(graph, "torch-xla")``: the torch-xla pipeline's op-table step (op_tables/torch_xla.toml)."""
    return legalize(graph, "torch-xla")
