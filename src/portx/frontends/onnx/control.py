"""ONNX control flow the walker resolves statically: ``If`` on a constant, ``Loop`` with a constant count.

Note [onnx control flow] is in walk.py. A subgraph reads outer values by name, so its nodes are walked
in the outer walk's environment; its own initializers become constants there.

Example:
    If(cond=True) {then: y = Relu(x)} -> relu(%x)
"""
from __future__ import annotations

import numpy as np

from ...errors import Unsupported
from ...ops.shape import STACK
from .tensors import tensor_array

__all__ = ["inline_if", "unroll_loop", "MAX_UNROLL"]

#: the most Loop iterations portx writes out one by one
MAX_UNROLL = 1024


def _graph_attr(node, name):
    return next((a.g for a in node.attribute if a.name == name), None)


def _add_initializers(walker, graph):
    for tensor in graph.initializer:
        walker.consts[tensor.name] = tensor_array(tensor)


def inline_if(walker, node, scope):
    """``If``: the branch its constant condition takes, walked in place."""
    cond = walker.consts.get(node.input[0])
    if cond is None:
        raise Unsupported("If on a condition computed from data has no static TPU form; "
                          "export the model with that branch fixed (e.g. trace it, or fold the condition)")
    branch = _graph_attr(node, "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch")
    _add_initializers(walker, branch)
    walker.walk(branch.node, f"{scope}/")
    if any(out.name in walker.poisoned for out in branch.output):
        walker.poison(node)  # a node in the branch failed (collected); keep scanning
        return
    for name, out in zip(node.output, branch.output):
        if name:
            walker.set(name, walker.get(out.name))


def _trip_count(walker, node):
    count = walker.consts.get(node.input[0]) if node.input and node.input[0] else None
    cond = walker.consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else np.array(True)
    if cond is None or (count is None and len(node.input) > 0 and node.input[0]):
        raise Unsupported("Loop whose trip count or condition is computed from data has no static TPU form; "
                          "export with a fixed number of iterations")
    return (None if count is None else int(np.asarray(count).reshape(-1)[0])), bool(np.asarray(cond).reshape(-1)[0])


def unroll_loop(walker, node, scope):
    """``Loop`` with a constant trip count (and a condition that stays constant), unrolled."""
    count, cond = _trip_count(walker, node)
    body = _graph_attr(node, "body")
    _add_initializers(walker, body)
    carried = [walker.get(n) for n in node.input[2:]]
    n_carried = len(carried)
    scans = [[] for _ in body.output[1 + n_carried:]]
    step = 0
    while cond and (count is None or step < count):
        if step >= MAX_UNROLL:
            raise Unsupported(f"Loop runs more than {MAX_UNROLL} iterations; portx unrolls at most that many")
        walker.set(body.input[0].name, np.array(step, dtype=np.int64))
        walker.set(body.input[1].name, np.array(cond))
        for info, value in zip(body.input[2:], carried):
            walker.set(info.name, value)
        walker.walk(body.node, f"{scope}/iter{step}/")
        if any(o.name in walker.poisoned for o in body.output):
            walker.poison(node)
            return
        new_cond = walker.consts.get(body.output[0].name)
        if new_cond is None:
            raise Unsupported("Loop whose condition is computed from data has no static TPU form")
        cond = bool(np.asarray(new_cond).reshape(-1)[0])
        carried = [walker.get(o.name) for o in body.output[1:1 + n_carried]]
        for rows, out in zip(scans, body.output[1 + n_carried:]):
            rows.append(walker.get(out.name))
        step += 1
    for name, value in zip(node.output, carried + [_stacked(walker, rows, scope) for rows in scans]):
        if name:
            walker.set(name, value)


def _stacked(walker, rows, scope):
    if not rows:
        raise Unsupported("Loop with zero iterations and scan outputs (an empty tensor) cannot be converted")
    if all(isinstance(r, np.ndarray) for r in rows):
        return np.stack(rows)
    values = [walker.value_of(r, f"{scope}.scan") for r in rows]
    return walker.builder.emit(STACK, values, {"axis": 0}, scope)

