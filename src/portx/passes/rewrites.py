"""Node rewrite rules: the machinery the legalize driver uses to replace one node by existing IR ops.

A rule is a function ``rule(node, rw) -> bool`` registered with ``@node_rule(OP, ...)``. It
returns False, emitting nothing, when the node is not its case ("integer nearest only"); else it
builds the replacement with ``rw.emit`` / ``rw.const`` and ends with ``rw.finish``, which
produces the node's own output value (same name, same type), so no user of the node changes.
An op table row names the rules for an op (``status = "rewrite:rule_a,rule_b"``); the driver
(``legalize.legalize``) tries them in order.

Example (before / after)::

    %y: float32[1x2x4x4] = resize(%x) {size=(4, 4), mode='nearest', ...}  # up
        ->
    %y_rows: float32[1x2x2x1x2x1] = reshape(%x) {shape=(1, 2, 2, 1, 2, 1)}  # up
    %y_repeat: float32[1x2x2x2x2x2] = expand(%y_rows) {shape=(1, 2, 2, 2, 2, 2)}  # up
    %y: float32[1x2x4x4] = reshape(%y_repeat) {shape=(1, 2, 4, 4)}  # up
"""
from __future__ import annotations

import numpy as np

from ..ir import IRError, Node, Value, infer_outputs, param_value
from ..ops.elementwise import CAST
from ..ops.linear import MATMUL
from ..ops.shape import RESHAPE

__all__ = ["NODE_RULES", "node_rule", "Rewriter", "contract_axes"]

#: rule name -> rule function; each function carries ``.ops`` (the OpDefs it rewrites)
NODE_RULES: dict = {}


def node_rule(*ops):
    """Register a node rule for ``ops`` under its function name: ``@node_rule(RESIZE)``."""
    def register(fn):
        if fn.__name__ in NODE_RULES:
            raise ValueError(f"rewrite rule {fn.__name__!r} is registered twice")
        fn.ops = ops
        NODE_RULES[fn.__name__] = fn
        return fn
    return register


class Rewriter:
    """What a node rule sees: fresh names, new constants and new nodes, all in the node's scope.

    Example (inside a rule)::

        rows = rw.const(matrix, "rows")              # param %up.rows, named from the scope
        y = rw.emit(MATMUL, [rows, x], hint="rows")  # %y_rows = matmul(%up.rows, %x)
        rw.finish(RESHAPE, [y], {"shape": out_shape})
    """

    def __init__(self, graph):
        self.taken = {v.name for v in graph.inputs} | set(graph.params)
        self.taken |= {v.name for n in graph.nodes for v in n.outputs}
        self.params, self.param_values = {}, {}
        self.node, self.nodes = None, []

    def begin(self, node):
        """Start rewriting ``node``; drops anything a failed rule left behind."""
        self.node, self.nodes = node, []

    def fresh(self, base) -> str:
        """An unused value name: ``base``, else ``base_1``, ``base_2``..."""
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name

    def const(self, array, hint) -> Value:
        """A new stored constant named ``<scope>.<hint>`` (``up.rows``)."""
        array = np.ascontiguousarray(array)
        name = self.fresh(f"{self.node.scope or self.node.output.name}.{hint}")
        self.params[name] = array
        self.param_values[name] = value = param_value(name, array)
        return value

    def _node(self, op, inputs, attrs, outputs=None, hint="t"):
        attrs = op.normalize_attrs(dict(attrs or {}), self.node.where())
        types = infer_outputs(op, [v.type for v in inputs], attrs)
        if outputs is None:
            outputs = [Value(self.fresh(f"{self.node.output.name}_{hint}"), t) for t in types]
        elif [v.type for v in outputs] != types:
            raise IRError(f"{self.node.where()}: rewrite gives {types[0]}, the node had {outputs[0].type}")
        self.nodes.append(Node(op, tuple(inputs), tuple(outputs), attrs, self.node.scope))
        return outputs[0]

    def emit(self, op, inputs, attrs=None, hint="t") -> Value:
        """Append ``op(inputs) {attrs}`` with a fresh output ``<node output>_<hint>``; returns it."""
        return self._node(op, inputs, attrs, hint=hint)

    def finish(self, op, inputs, attrs=None) -> Value:
        """Append the last node, whose output is the rewritten node's own output."""
        return self._node(op, inputs, attrs, list(self.node.outputs))


def _contract_axis(rw, x, matrix, axis, hint):
    """Apply an (n_out, n_in) matrix along ``axis`` of x with one matmul (reshapes around it if needed)."""
    rank, shape = x.type.rank, x.type.shape
    if axis == rank - 1:  # x @ M^T
        return MATMUL, [x, rw.const(matrix.T, hint)], None
    if axis == rank - 2:  # M @ x, broadcast over the leading axes
        return MATMUL, [rw.const(matrix, hint), x], None
    # earlier axes: fold the trailing ones into one, contract as the second-to-last axis, unfold
    flat = rw.emit(RESHAPE, [x], {"shape": shape[:axis + 1] + (int(np.prod(shape[axis + 1:])),)}, f"{hint}_flat")
    return MATMUL, [rw.const(matrix, hint), flat], shape[:axis] + (len(matrix),) + shape[axis + 1:]


def contract_axes(rw, x, matrices, hints, dtype):
    """``y[..., i, j] = sum M_a[i, p] M_b[j, q] x[..., p, q]``, one matmul per non-None matrix.

    ``matrices`` holds an (n_out, n_in) float64 array, or None (identity), per trailing axis. The
    matrices are stored in ``dtype`` (float32 or float64); other input dtypes are cast to float32
    around the contraction, as torch computes half-precision resizes in float32.
    Ends with ``rw.finish``.
    """
    compute = dtype if dtype in ("float32", "float64") else "float32"
    steps = [(x.type.rank - len(matrices) + i, m, h) for i, (m, h) in enumerate(zip(matrices, hints))
             if m is not None]
    y = x if compute == dtype else rw.emit(CAST, [x], {"dtype": compute}, "float32")
    for k, (axis, matrix, hint) in enumerate(reversed(steps)):
        op, inputs, unfold = _contract_axis(rw, y, matrix.astype(compute), axis, hint)
        last = k == len(steps) - 1 and unfold is None and compute == dtype
        if last:
            return rw.finish(op, inputs)
        y = rw.emit(op, inputs, None, hint)
        if unfold is not None:
            if k == len(steps) - 1 and compute == dtype:
                return rw.finish(RESHAPE, [y], {"shape": unfold})
            y = rw.emit(RESHAPE, [y], {"shape": unfold}, f"{hint}_unflat")
    return rw.finish(CAST, [y], {"dtype": dtype})
