"""Node rewrite rules: the machinery the legalize driver uses to replace one node by existing IR ops.

A rule is a function ``rule(node, rw) -> bool`` registered with ``@node_rule(OP, ...)``. It
returns False, emitting nothing, when the node is not its case ("integer nearest only"); else it
builds the replacement with ``rw.emit`` / ``rw.const`` and ends with ``rw.result(value)``, which
gives the last new node the rewritten node's own output value (same name, same type), so no user
of the node changes. An op table row names the rules for an op
(``status = "rewrite:rule_a,rule_b"``); the driver (``driver.legalize``) tries them in order.

Example (before / after)::

    %y: float32[1x2x4x4] = resize(%x: float32[1x2x2x2]) {size=(4, 4), mode='nearest', ...}  # up
        ->
    %y_split: float32[1x2x2x1x2x1] = reshape(%x) {shape=(1, 2, 2, 1, 2, 1)}  # up
    %y_repeat: float32[1x2x2x2x2x2] = expand(%y_split) {shape=(1, 2, 2, 2, 2, 2)}  # up
    %y: float32[1x2x4x4] = reshape(%y_repeat) {shape=(1, 2, 4, 4)}  # up
"""
from __future__ import annotations

import numpy as np

from ...ir import GraphBuilder, IRError, Value
from ...ops.elementwise import CAST
from ...ops.linear import MATMUL
from ...ops.shape import RESHAPE

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
        rw.result(y)                                 # now %y = matmul(%up.rows, %x): the node's output
        return True
    """

    def __init__(self, graph):
        self.builder = GraphBuilder(graph.name)  # names, constants and nodes come from the IR's own builder
        self.builder.taken |= {v.name for v in graph.inputs} | set(graph.params)
        self.builder.taken |= {v.name for n in graph.nodes for v in n.outputs}
        self.node, self.nodes = None, self.builder.nodes
        self.graph = graph

    def stored(self, value):
        """The array of ``value`` where the graph stores it (a parameter or constant), else None; a rule folds
        what it computes from it (``rows = rw.const(rw.stored(indices) @ strides, "rows")``)."""
        return self.graph.params[value.name] if self.graph.is_param(value) else None

    @property
    def params(self) -> dict:
        """Every constant the rules made so far: name -> array."""
        return self.builder.params

    @property
    def param_values(self) -> dict:
        """Every constant the rules made so far: name -> its Value."""
        return self.builder.param_values

    def begin(self, node):
        """Start rewriting ``node``; drops anything a failed rule left behind."""
        self.node = node
        self.nodes = self.builder.nodes = []

    def fresh(self, base) -> str:
        """An unused value name: ``base``, else ``base_1``, ``base_2``..."""
        return self.builder.fresh(base)

    def const(self, array, hint) -> Value:
        """A new stored constant named ``<scope>.<hint>`` (``up.rows``)."""
        return self.builder.param(f"{self.node.scope or self.node.outputs[0].name}.{hint}", array)

    def emit(self, op, inputs, attrs=None, hint="t") -> Value:
        """Append ``op(inputs) {attrs}`` with a fresh output ``<node output>_<hint>``; returns it."""
        out = self.emit_outputs(op, inputs, attrs, hint)
        return out[0]

    def emit_outputs(self, op, inputs, attrs=None, hint="t") -> list:
        """``emit`` for an op with several outputs: all of them, in order."""
        out = self.builder.emit(op, inputs, attrs, scope=self.node.scope, hint=f"{self.node.outputs[0].name}_{hint}")
        return [out] if isinstance(out, Value) else list(out)

    def keep(self) -> bool:
        """End the rule with the node unchanged: the target expresses it natively (returns True)."""
        self.nodes.append(self.node)
        return True

    def result(self, value) -> Value:
        """End the rule: ``value``, the last node's output, becomes the rewritten node's own output."""
        last = self.nodes[-1] if self.nodes else None
        if last is None or last.outputs != (value,) or value.type != self.node.output.type:
            raise IRError(f"{self.node.where()}: rewrite ends with %{value.name}: {value.type}, "
                          f"expected the last node's output of type {self.node.output.type}")
        self.nodes[-1] = last.replace(outputs=self.node.outputs)
        self.builder.taken.discard(value.name)
        return self.node.output

    def results(self, values) -> tuple:
        """End the rule of a node with several outputs: ``values[i]``, each a new node's output, becomes the
        rewritten node's output ``i`` (its name and type), wherever in the new nodes it is made."""
        if len(values) != len(self.node.outputs):
            raise IRError(f"{self.node.where()}: rewrite ends with {len(values)} values for "
                          f"{len(self.node.outputs)} outputs")
        final = dict(zip(values, self.node.outputs))
        for value, out in final.items():
            if value.type != out.type:
                raise IRError(f"{self.node.where()}: rewrite gives %{out.name} the type {value.type}, "
                              f"expected {out.type}")
        self.nodes[:] = [n.replace(inputs=tuple(final.get(v, v) for v in n.inputs),
                                   outputs=tuple(final.get(v, v) for v in n.outputs)) for n in self.nodes]
        self.builder.taken -= {v.name for v in values}
        return self.node.outputs


def _contract_axis(rw, x, matrix, axis, hint):
    """Apply an (n_out, n_in) matrix along ``axis`` of x with one matmul (reshapes around it if needed)."""
    rank, shape = x.type.rank, x.type.shape
    if axis == rank - 1:  # x @ M^T
        return rw.emit(MATMUL, [x, rw.const(matrix.T, hint)], hint=hint)
    if axis == rank - 2:  # M @ x, broadcast over the leading axes
        return rw.emit(MATMUL, [rw.const(matrix, hint), x], hint=hint)
    # earlier axes: fold the trailing ones into one, contract as the second-to-last axis, unfold
    flat = rw.emit(RESHAPE, [x], {"shape": shape[:axis + 1] + (int(np.prod(shape[axis + 1:])),)}, f"{hint}_flat")
    y = rw.emit(MATMUL, [rw.const(matrix, hint), flat], hint=hint)
    return rw.emit(RESHAPE, [y], {"shape": shape[:axis] + (len(matrix),) + shape[axis + 1:]}, f"{hint}_unflat")


def contract_axes(rw, x, matrices, hints, dtype):
    """``y[..., i, j] = sum M_a[i, p] M_b[j, q] x[..., p, q]``, one matmul per non-None matrix.

    ``matrices`` holds an (n_out, n_in) float64 array, or None (identity), per trailing axis; at
    least one is not None. The matrices are stored in ``dtype`` (float32 or float64); other input
    dtypes are cast to float32 around the contraction, as torch computes half-precision resizes
    in float32. Ends the rule (``rw.result``).
    """
    compute = dtype if dtype in ("float32", "float64") else "float32"
    y = x if compute == dtype else rw.emit(CAST, [x], {"dtype": compute}, "float32")
    first = x.type.rank - len(matrices)
    for i in reversed(range(len(matrices))):  # last axis first, as torch's separable kernels do
        if matrices[i] is not None:
            y = _contract_axis(rw, y, matrices[i].astype(compute), first + i, hints[i])
    if compute != dtype:
        y = rw.emit(CAST, [y], {"dtype": dtype}, "cast")
    return rw.result(y)
