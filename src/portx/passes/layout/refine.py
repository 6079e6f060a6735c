"""Reshape -> permute -> reshape chains split to their finest axes, so the permute moves whole source axes.

Note [refined permutes]: ``nn.MultiheadAttention`` splits heads as ``(L, B, E) -> (L, B * H, D)``,
``transpose(0, 1)``, ``-> (B, H, L, D)``: the first reshape merges the batch with the heads, which
no stored order of ``(L, B, E)`` other than the source's allows, so the layout pass had to keep a
transpose there. Splitting every axis at the boundaries of the shapes on both sides of the permute
gives the same data movement on the finest axes, ``(L, B, E) -> (L, B, H, D)``,
``permute(1, 2, 0, 3)``, ``-> (B, H, L, D)``: each reshape now only splits or merges neighbouring
axes, which the sinker carries through any stored order.

Example (before / after)::

    %a: f32[17x8x8] = reshape(%x) {shape=(17, 8, 8)}        %a_fine: f32[17x2x4x8] = reshape(%x) {shape=(17, 2, 4, 8)}
    %b: f32[8x17x8] = permute(%a) {perm=(1, 0, 2)}    ->    %b_fine: f32[2x4x17x8] = permute(%a_fine) {perm=(1, 2, 0, 3)}
    %y: f32[2x4x17x8] = reshape(%b) {shape=(2, 4, 17, 8)}   %y: f32[2x4x17x8] = reshape(%b_fine) {shape=(2, 4, 17, 8)}
"""
from __future__ import annotations

from math import prod

from ...ir import GraphBuilder, Node, Value
from ...ops.shape import PERMUTE, RESHAPE

__all__ = ["refine_permutes"]


def _points(shape) -> set:
    """Row-major axis boundaries as element strides: ``_points((2, 3)) == {1, 3, 6}``."""
    return {prod(shape[i:]) for i in range(len(shape) + 1)}


def _factors(shape, other):
    """Per axis of ``shape``, its sizes split at ``other``'s boundaries too; None when they do not nest."""
    points = sorted(_points(shape) | _points(other))
    if any(b % a for a, b in zip(points, points[1:])):
        return None
    result = []
    for i in range(len(shape)):
        low, high = prod(shape[i + 1:]), prod(shape[i:])
        inner = [p for p in points if low <= p <= high]
        result.append([b // a for a, b in zip(inner, inner[1:])][::-1])
    return result


def _refine(x_shape, a_shape, perm, y_shape):
    """(fine shape of ``a``, fine perm) or None: ``a`` split at ``x``'s and (through ``perm``) ``y``'s boundaries."""
    first = _factors(a_shape, x_shape) if x_shape is not None else [[s] for s in a_shape]
    if first is None:
        return None
    b_fine = [f for j in perm for f in first[j]]
    second = _factors(tuple(b_fine), y_shape) if y_shape is not None else [[s] for s in b_fine]
    if second is None:
        return None
    # the factors of b_fine, grouped back per axis of a
    per_b, k = [], 0
    for j in perm:
        per_b.append([f for piece in second[k:k + len(first[j])] for f in piece])
        k += len(first[j])
    fine = [None] * len(perm)
    for j, factors in zip(perm, per_b):
        fine[j] = factors
    start, offsets = 0, []
    for factors in fine:
        offsets.append(start)
        start += len(factors)
    fine_perm = tuple(offsets[j] + i for j in perm for i in range(len(fine[j])))
    return tuple(f for factors in fine for f in factors), fine_perm


def refine_permutes(graph):
    """Note [refined permutes]. Example: ``refine_permutes(g)`` turns a head split into a 4-d permute."""
    users, producers = graph.users(), graph.producers()
    names = GraphBuilder(graph.name)
    names.taken |= {v.name for v in graph.inputs} | set(graph.params)
    names.taken |= {v.name for n in graph.nodes for v in n.outputs}
    rewrites, flips = {}, set(graph.meta.get("flip_permutes", ()))
    for node in graph.nodes:
        if node.op is not PERMUTE:
            continue
        a, b = node.inputs[0], node.outputs[0]
        before = producers.get(a)
        readers = users.get(b, [])
        merge = (before is not None and before.op is RESHAPE and before not in rewrites
                 and len(users.get(a, [])) == 1 and a not in graph.outputs)
        split = len(readers) == 1 and readers[0].op is RESHAPE and b not in graph.outputs
        x_shape = tuple(before.inputs[0].type.shape) if merge else None
        y_shape = tuple(readers[0].outputs[0].type.shape) if split else None
        if 0 in a.type.shape:
            continue
        found = _refine(x_shape, tuple(a.type.shape), tuple(node.attrs["perm"]), y_shape)
        if found is None or len(found[0]) <= a.type.rank:
            continue
        fine_shape, fine_perm = found
        source = before.inputs[0] if merge else a
        a_fine = Value(names.fresh(f"{a.name}_fine"), a.type.with_shape(fine_shape))
        b_fine = Value(names.fresh(f"{b.name}_fine"), b.type.with_shape(tuple(fine_shape[p] for p in fine_perm)))
        if b.name in flips:  # a permute the layout pass flipped in stays its own (Note [carried permutes])
            flips.add(b_fine.name)
        out = readers[0].outputs[0] if split else b  # the split reshape reads b_fine directly
        rewrites[node] = [Node(RESHAPE, (source,), (a_fine,), {"shape": fine_shape}, node.scope),
                          Node(PERMUTE, (a_fine,), (b_fine,), {"perm": fine_perm}, node.scope),
                          Node(RESHAPE, (b_fine,), (out,), {"shape": tuple(out.type.shape)}, node.scope)]
        if split:
            rewrites[readers[0]] = []
    if not rewrites:
        return graph
    nodes = []
    for node in graph.nodes:
        nodes.extend(rewrites.get(node, [node]))
    return graph.replace(nodes=tuple(nodes), meta={**graph.meta, "flip_permutes": frozenset(flips)})
