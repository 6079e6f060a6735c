"""Row-wise chains between a merge and a split of the same leading axes keep those axes apart.

Note [unmerged rows]: ``nn.MultiheadAttention`` runs its output projection on ``(L * B, E)`` rows and
splits them back to ``(L, B, E)``. Merging L and B needs them stored in that order, so a layout that
stores B first (the one that lets the attention's transposes cancel) would need a transpose there.
A linear layer, a dropout, a cast and unary elementwise ops act on each row alone, so the chain runs
just as well on the unmerged ``(L, B, E)``: ``unmerge_rows`` rewrites the merging reshape to keep the
leading axes, retypes the chain, and the split becomes an identity reshape (removed by
``merge_reshapes_and_permutes``). The retyped values get new names (``_rows``): their shapes differ
from the source's intermediates of the same name.

Example (before / after)::

    %m: f32[34x32] = reshape(%a) {shape=(34, 32)}       %m_rows: f32[17x2x32] = reshape(%a) {shape=(17, 2, 32)}
    %l: f32[34x32] = linear(%m, %w, %b)           ->    %l_rows: f32[17x2x32] = linear(%m_rows, %w, %b)
    %y: f32[17x2x32] = reshape(%l) {shape=(17, 2, 32)}  %y: f32[17x2x32] = reshape(%l_rows) {shape=(17, 2, 32)}
"""
from __future__ import annotations

from math import prod

from ...ir import GraphBuilder, Value, infer_outputs
from ...ops.dropout import DROPOUT
from ...ops.elementwise import CAST
from ...ops.elementwise.unary import UNARY
from ...ops.linear import LINEAR
from ...ops.shape import RESHAPE

__all__ = ["unmerge_rows"]

_ROWWISE = frozenset((LINEAR, DROPOUT, CAST, *UNARY.values()))


def _leading(x_shape, merged) -> int:
    """How many leading axes of ``x_shape`` make the ``merged`` rows (at least two), or 0."""
    for k in range(2, len(x_shape)):
        if prod(x_shape[:k]) == merged:
            return k
    return 0


def _chain(graph, users, reshape):
    """(row-wise nodes, the split reshape, leading axes) after a merging ``reshape``, or None."""
    x, v = reshape.inputs[0], reshape.outputs[0]
    if v.type.rank != 2 or x.type.rank < 3:
        return None
    k = _leading(x.type.shape, v.type.shape[0])
    if not k:
        return None
    lead, chain = tuple(x.type.shape[:k]), []
    while True:
        readers = users.get(v, [])
        if len(readers) != 1 or v in graph.outputs:
            return None
        node = readers[0]
        if node.op is RESHAPE:
            ok = chain and tuple(node.outputs[0].type.shape) == lead + (v.type.shape[-1],)
            return (chain, node, lead) if ok else None
        others = node.inputs[1:]
        if (node.op not in _ROWWISE or node.inputs[0] != v or node.attrs.get("axes")
                or any(o is not None and not graph.is_param(o) for o in others)):
            return None
        chain.append(node)
        v = node.outputs[0]


def unmerge_rows(graph):
    """Note [unmerged rows]. Example: ``unmerge_rows(g)`` keeps (L, B) apart around a projection."""
    users = graph.users()
    names = GraphBuilder(graph.name)
    names.taken |= {v.name for v in graph.inputs} | set(graph.params)
    names.taken |= {v.name for n in graph.nodes for v in n.outputs}
    plans = {}
    for node in graph.nodes:
        if node.op is RESHAPE and node not in plans:
            found = _chain(graph, users, node)
            if found is not None:
                chain, split, lead = found
                plans[node] = lead
                plans.update({n: lead for n in chain})
    if not plans:
        return graph
    renamed, nodes = {}, []
    for node in graph.nodes:
        lead = plans.get(node)
        node = node.replace(inputs=tuple(renamed.get(v, v) for v in node.inputs))
        if lead is None:
            nodes.append(node)
            continue
        old = node.outputs[0]
        attrs = {"shape": lead + (old.type.shape[-1],)} if node.op is RESHAPE else node.attrs
        out_type = infer_outputs(node.op, [v.type if v is not None else None for v in node.inputs], attrs)[0]
        new = Value(names.fresh(f"{old.name}_rows"), out_type)
        renamed[old] = new
        nodes.append(node.replace(outputs=(new,), attrs=attrs))
    return graph.replace(nodes=tuple(nodes))
