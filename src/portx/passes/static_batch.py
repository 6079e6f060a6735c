"""A static program's graph at another batch, by its ops' own shape rules (Note [static batch]).

``rebatch(graph, sites, s0, s1)`` gives the graph a program exported at batch ``s0`` would have at ``s1``: the
inputs' batch axes at ``s1``, every value's type inferred again, and the batch literals of shape attributes (the
leading entry of a reshape's or expand's ``shape``, a slice's ``end`` on axis 0) rewritten where the rule needs
it. ``diff_free`` (passes/free_dims.py) then reads the free batch off the two graphs as it does for two
lowerings; a node whose rule refuses both raises NotFree naming it.

Example:
    >>> g3 = rebatch(g2, [[0, 0]], 2, 3)            # x: float32[2x3x8x8] -> float32[3x3x8x8], flatten (3, 192)
    >>> found = diff_free(g2, g3, "batch", 2, 3)
"""
from __future__ import annotations

import numpy as np

from ..ir import Value, infer_outputs
from .free_dims import NotFree

__all__ = ["rebatch"]

#: attributes that hold a shape, whose leading entry is the batch where the op's input carries one
_SHAPE_ATTRS = ("shape",)


def rebatch(graph, sites, s0, s1):
    """``graph`` with the batch axes ``sites`` ([[input, axis], ...]) at ``s1`` instead of ``s0`` and every
    type inferred again; NotFree names the first node no rewrite makes fit."""
    new, params, param_values = {}, dict(graph.params), dict(graph.param_values)
    for i, value in enumerate(graph.inputs):
        shape = list(value.type.shape)
        for index, axis in sites:
            shape[axis] = s1 if index == i else shape[axis]
        new[value] = Value(value.name, value.type.with_shape(shape))
    nodes = []
    for node in graph.nodes:
        ins = [None if v is None else new.get(v, v) for v in node.inputs]
        attrs, types, ins = _fitted(graph, node, ins, s0, s1)
        for old, value in zip(node.inputs, ins):
            if old is not None and graph.is_param(old) and value is not old:  # a constant the size of the batch
                new[old], param_values[old.name] = value, value
                params[old.name] = np.repeat(graph.params[old.name][:1], s1, axis=0)
        outs = [Value(v.name, t) for v, t in zip(node.outputs, types)]
        new.update(zip(node.outputs, outs))
        nodes.append(node.replace(inputs=tuple(ins), outputs=tuple(outs), attrs=attrs))
    return graph.replace(inputs=tuple(new[v] for v in graph.inputs), outputs=tuple(new.get(v, v) for v in graph.outputs),
                         nodes=tuple(nodes), params=params, param_values=param_values)


def _fitted(graph, node, ins, s0, s1):
    """(attrs, output types, inputs) of ``node`` on inputs ``ins``: its batch literals rewritten, else as they
    are, else with its stored inputs of ``s0`` equal rows grown to ``s1`` rows (a folded mask of ones)."""
    grown = [v if v is None or not _grows(graph, v, s0) else Value(v.name, v.type.with_shape((s1, *v.type.shape[1:])))
             for v in ins]
    rewritten = _rewritten(node.attrs, s0, s1)
    tries = [(a, i) for i in (ins, grown) for a in (rewritten, node.attrs)]
    problem = None
    for attrs, inputs in tries:
        try:
            types = infer_outputs(node.op, [None if v is None else v.type for v in inputs],
                                  node.op.normalize_attrs(attrs, node.where()))
        except (ValueError, TypeError, IndexError) as exc:
            problem = exc
            continue
        return attrs, types, inputs
    raise NotFree(f"{node.where()} does not fit batch {s1} ({problem})")


def _grows(graph, value, s0) -> bool:
    """A stored input of ``s0`` equal rows (a mask of ones folded at the export's batch)."""
    if not graph.is_param(value) or not value.type.rank or value.type.shape[0] != s0 or s0 < 2:
        return False
    array = graph.params[value.name]
    return bool(np.array_equal(array, np.broadcast_to(array[:1], array.shape)))


def _rewritten(attrs, s0, s1) -> dict:
    """``attrs`` with the batch literal ``s0`` as ``s1``: the leading entry of a shape, a slice's end on axis 0."""
    out = dict(attrs)
    for name in _SHAPE_ATTRS:
        shape = attrs.get(name)
        if isinstance(shape, (tuple, list)) and shape and shape[0] == s0:
            out[name] = type(shape)((s1, *shape[1:]))
    if attrs.get("axis") == 0 and attrs.get("end") == s0:
        out["end"] = s1
    return out

# Note [static batch]: a .pt2 exported without Dims, or an ONNX/TF file with fixed dims, lowers at one batch
# only; its source cannot be lowered again at a second batch for ``diff_free``. Its ops can: each op's shape
# rule gives the types at another batch, and the only literals that spell the batch are shape attributes (a
# reshape to ``(2, 192)``, an expand to ``(2, 1, 5)``, ``x[:2]``). ``rebatch`` rewrites those where the node's
# input moved, and keeps the rest (a conv's stride of 2 is never touched). What this cannot see (rows that
# mix: a reshape across rows, batch statistics, a sort over axis 0) the verification sees: the batch's
# reference at another size is the source itself run on row chunks of its export size (Note [rows independent]
# in verification/chunks.py), so a model whose rows mix fails there and its batch stays pinned, with a warning.
