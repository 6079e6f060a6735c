"""Reshapes on values stored in another axis order (Note [physical layouts] in layout_sink.py).

Note [reshape groups]: a reshape pairs runs of input axes with runs of output axes of equal size
(size-1 axes aside): ``(N, C, H, W) -> (N, C, H * W)`` pairs (N)(N), (C)(C), (H, W)(HW). When each
input run is stored contiguously and in order, the reshape can run on the stored tensor: the
output keeps the runs in their stored order, e.g. NCHW stored as NHWC reshaped to (N, C, HW) is
stored as (N, HW, C). A run that is not stored in order ("flatten" of NCHW stored NHWC) cannot; when
its result feeds only linear layers, the flatten runs in stored order and each linear's weight
columns are reordered to match, so no transpose is needed at all. Otherwise (a channel shuffle: the
channel axis split, permuted and merged again) one transpose puts each run in order where it is
stored (``grouped_order``) and the reshape runs there, so the values after it stay channels-last.

Example: ``reshape_groups((2, 3, 4, 5), (2, 3, 20)) == [([0], [0]), ([1], [1]), ([2, 3], [2])]``.
"""
from __future__ import annotations

import numpy as np

from ...ops.linear import LINEAR
from .sink import HEADS, moves_data

__all__ = ["grouped_order", "reshape_groups", "reshaped_order", "reshape_rule"]


def reshape_groups(shape_in, shape_out):
    """[(input axes, output axes)] runs of equal size, size-1 axes left out; None for empty tensors."""
    if 0 in shape_in or 0 in shape_out:
        return None
    ins = [i for i, d in enumerate(shape_in) if d != 1]
    outs = [j for j, d in enumerate(shape_out) if d != 1]
    groups, i, j = [], 0, 0
    while i < len(ins) and j < len(outs):
        gi, gj = [ins[i]], [outs[j]]
        size_in, size_out = shape_in[ins[i]], shape_out[outs[j]]
        i, j = i + 1, j + 1
        while size_in != size_out:
            if size_in < size_out and i < len(ins):
                gi.append(ins[i])
                size_in, i = size_in * shape_in[ins[i]], i + 1
            elif size_out < size_in and j < len(outs):
                gj.append(outs[j])
                size_out, j = size_out * shape_out[outs[j]], j + 1
            else:
                return None
        groups.append((gi, gj))
    return groups if i == len(ins) and j == len(outs) else None


def reshaped_order(perm, shape_in, shape_out, groups, loose=()):
    """The stored order of the reshape's output, or None when an input run is not stored in order.

    Runs listed in ``loose`` (indices into ``groups``) only need to be stored contiguously.
    Size-1 output axes follow the output axis before them (or lead).
    """
    stored = [p for p in perm if shape_in[p] != 1]
    where = {p: i for i, p in enumerate(stored)}
    ranked = []
    for k, (gi, gj) in enumerate(groups):
        spots = sorted(where[a] for a in gi) if k in loose else [where[a] for a in gi]
        if spots != list(range(spots[0], spots[0] + len(spots))):
            return None
        ranked.append((spots[0], gj))
    follow, front, prev = {}, [], None
    for j, d in enumerate(shape_out):
        if d == 1:
            (follow.setdefault(prev, []) if prev is not None else front).append(j)
        else:
            prev = j
    order = list(front)
    for _, gj in sorted(ranked):
        for j in gj:
            order += [j] + follow.get(j, [])
    return tuple(order)


def _bind_reshape(s, node, phys, order):
    shape = node.outputs[0].type.shape
    s.bind(node, node.op, [phys], {"shape": tuple(shape[p] for p in order)}, [order])


def reshape_rule(s, node) -> bool:
    """Reshape in stored order (Note [reshape groups]); False falls back to logical order."""
    x, out = node.inputs[0], node.outputs[0]
    perm, phys = s.perm_of(x), s.phys[x]
    groups = reshape_groups(x.type.shape, out.type.shape)
    if groups is None or phys in s.attended and perm == HEADS and not moves_data(phys.type.shape, perm):
        return False  # an attention's result transposed back before it is reshaped: Note [one-head attention]
    order = reshaped_order(perm, x.type.shape, out.type.shape, groups)
    if order is not None:
        _bind_reshape(s, node, phys, order)
        s.owe(out, x)  # Note [carried permutes]: the stored data has not moved
        return True
    if _flatten_into_linear(s, node, perm, phys, groups):
        return True
    target = grouped_order(perm, x.type.shape, groups)
    if target == tuple(range(x.type.rank)):
        return False  # the logical order itself: the fallback does just that
    _bind_reshape(s, node, s.at(x, target), reshaped_order(target, x.type.shape, out.type.shape, groups))
    return True


def grouped_order(perm, shape_in, groups):
    """The stored order nearest ``perm`` in which every input run is contiguous and in logical order:
    each run moves to where its first stored axis is (Note [reshape groups]). One transpose gets there,
    and the values after the reshape stay in their stored order (a channel shuffle keeps NHWC).

    Example: ``grouped_order((0, 3, 4, 2, 1), (1, 4, 2, 8, 8), [([0], [0]), ([1, 2], [1]), ([3], [2]), ([4], [3])])``
    is ``(0, 3, 4, 1, 2)``.
    """
    run_of = {a: tuple(gi) for gi, _ in groups for a in gi}
    order, placed = [], set()
    for p in perm:
        run = run_of.get(p, (p,))  # size-1 axes stay where they are
        if run not in placed:
            placed.add(run)
            order += run
    return tuple(order)


def _flatten_into_linear(s, node, perm, phys, groups) -> bool:
    """A flatten whose last run is stored out of order, read only by linear layers with stored weights."""
    x, out = node.inputs[0], node.outputs[0]
    users = s.users.get(out, [])
    last = out.type.rank - 1
    if not groups or groups[-1][1] != [last] or out in s.graph.outputs or not users or any(
            u.op is not LINEAR or u.inputs[0] is not out or u.inputs[1] is out or not s.is_param(u.inputs[1])
            for u in users):
        return False
    order = reshaped_order(perm, x.type.shape, out.type.shape, groups, loose=(len(groups) - 1,))
    if order != tuple(range(out.type.rank)):
        return False
    run = groups[-1][0]  # logical axes of the flattened run
    stored_run = [p for p in perm if p in run]
    columns = np.arange(out.type.shape[last]).reshape([x.type.shape[a] for a in run])
    s.scrambled[out] = columns.transpose([run.index(p) for p in stored_run]).reshape(-1)
    _bind_reshape(s, node, phys, order)
    return True
