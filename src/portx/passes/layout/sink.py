"""Permute sinking: every value gets a physical axis order, so that permutes cancel instead of running.

Note [physical layouts]: the pass keeps each node's logical meaning and chooses, value by value, a
physical order ``perm`` (the stored tensor is ``transpose(logical, perm)``). A permute node then
costs nothing: its output is its input, stored in the order the permute describes. Every op that
can work in any order (elementwise ops, broadcasting against a constant, concat/split/slice/...
axes, reductions, pads, reshapes that keep axis groups whole, linear and matmul on untouched
trailing axes) is rewritten for the order its inputs arrive in; the rest (convolutions, pools and
other ops with a fixed layout) get their inputs transposed back to the logical order, once per
value. Constants are transposed at conversion time. A flatten feeding only linear layers keeps its
physical order and the linear weights' input columns are reordered instead. The result never has
more permutes than the input: ``sink_permutes`` keeps whichever has fewer.

Note [carried permutes]: a source permute runs no node (its output is its input, stored in another
order); when a reader needs that output in an order it is not stored in (a reshape that merges the
shuffled channel groups, a window partition, a matmul's transposed operand), ``at`` emits one
transpose of the permute's input. That transpose is the source's own permute, run where it is needed
and in stored order (ShuffleNet's ``transpose(1, 2)`` of (N, g, C/g, H, W) becomes a swap of the last
two axes of (N, H, W, g, C/g)). The first one per source permute is recorded in
``meta["carried_permutes"]`` (transpose -> the source permute's value and scope), so the report counts
it as the source's; any further transpose of the same value is the layout pass's own.

Example (before / after; conv_cl is a conv with channels_last=True)::

    %a = permute(%x) {perm=(0, 2, 3, 1)}         %x_nhwc = permute(%x) {perm=(0, 2, 3, 1)}
    %b = conv_cl(%a, %w)                          %b = conv_cl(%x_nhwc, %w)
    %c = permute(%b) {perm=(0, 3, 1, 2)}    ->    %d = relu(%b)          # %d: NCHW, stored NHWC
    %d = relu(%c)                                 %f = conv_cl(%d, %w2)
    %e = permute(%d) {perm=(0, 2, 3, 1)}          %g = permute(%f) {perm=(0, 3, 1, 2)}
    %f = conv_cl(%e, %w2)                         return %g
    %g = permute(%f) {perm=(0, 3, 1, 2)}
    return %g
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ...ir import GraphBuilder, Node, Value, infer_outputs
from ...ops._util import channels_first_perm, channels_last_perm
from ...ops.attention import ATTENTION
from ...ops.shape import PERMUTE, RESHAPE

__all__ = ["Sinker", "inverse", "count_permutes", "moves_data", "writes_permute", "HEADS"]


_LAYOUT_SUFFIX = {**{channels_last_perm(r): name for r, name in ((3, "nwc"), (4, "nhwc"), (5, "ndhwc"))},
                  **{channels_first_perm(r): name for r, name in ((3, "ncw"), (4, "nchw"), (5, "ncdhw"))}}


def inverse(perm) -> tuple:
    """The inverse permutation: ``inverse((0, 2, 3, 1)) == (0, 3, 1, 2)``."""
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def moves_data(shape, perm) -> bool:
    """False when ``perm`` only moves axes of size 1 (then it is a reshape): ``moves_data((1, 3, 1), (2, 1, 0))``."""
    kept = [p for p in perm if shape[p] != 1]
    return kept != sorted(kept)


# Note [size-1 spatial dims]: a permute that moves only axes of size 1 moves no data, and was written as a reshape
# to the shape it makes. Where those axes are the spatial dims of a layout change (keras.applications' MobileNetV2
# at 32x32 ends in a 1x1 map: NCHW back to NHWC), the reshape wrote ``out.reshape(input_layer.shape[0], 1, 1,
# 1280)`` where a person writes ``out.permute(0, 2, 3, 1)``: the same view, and it reads as the layout change it is
# and names no size. So a channels-first/last permute whose channel axis is not of size 1 stays a permute. A
# one-channel image keeps its reshape (Note [one-channel images] in one_channel.py: there the channel axis moves),
# and so does an operand lifted to the rank it broadcasts against (``Sinker.operand``: a reshape already).


def writes_permute(shape, perm) -> bool:
    """True when ``perm`` of a tensor of ``shape`` is written as a permute, not a reshape: it moves data, or it is a
    layout change of a size-1 map (Note [size-1 spatial dims]): ``writes_permute((2, 8, 1, 1), (0, 2, 3, 1))``."""
    perm, rank = tuple(perm), len(perm)
    if moves_data(shape, perm):
        return True
    channel = {channels_last_perm(rank): 1, channels_first_perm(rank): rank - 1}.get(perm) if rank >= 3 else None
    return channel is not None and shape[channel] != 1


# Note [one-head attention]: attention's head transposes ``(B, N, h, d) -> (B, h, N, d)`` and back move no data
# when the model has one head (MiT-B0's first stage), so the pass wrote them as the reshapes they equal, and
# ``merge_reshapes_and_permutes`` folded those into the reshapes splitting the heads: ``q.reshape(B, 1, N, d)`` where
# the stages of two heads write ``q.reshape(B, N, 2, d).permute(0, 2, 1, 3)``, and the blocks of the two stages
# were two definitions. A head transpose (``(0, 2, 1, 3)``) that an attention reads, or that reads an attention's
# result, is a permute whatever it moves (``Sinker.transpose``; ``reshape_rule`` does not read through it), so every
# stage writes the same lines, the head count a number in them.
HEADS = (0, 2, 1, 3)


def count_permutes(graph) -> int:
    """Permute nodes that move data (a permute of size-1 axes is a free reshape)."""
    return sum(1 for n in graph.nodes if n.op is PERMUTE and moves_data(n.inputs[0].type.shape, n.attrs["perm"]))


def _identity(rank) -> tuple:
    return tuple(range(rank))


class Sinker:
    """Rebuilds a graph value by value in physical orders (Note [physical layouts]).

    Handlers (``layout_rules.RULES``) see the sinker: ``perm_of``, ``at``, ``operand``, ``emit``,
    ``bind`` and ``fallback``. Nodes in ``keep`` run in logical order (a permute there is kept).
    Example: ``Sinker(graph, RULES).run()``.
    """

    def __init__(self, graph, rules, keep=frozenset()):
        self.graph, self.rules, self.keep = graph, rules, keep
        self.users = graph.users()
        self.builder = GraphBuilder(graph.name)  # fresh names and new constants (the graph's own kept)
        self.builder.taken |= {v.name for v in graph.inputs} | set(graph.params)
        self.builder.taken |= {v.name for n in graph.nodes for v in n.outputs}
        self.builder.params, self.builder.param_values = dict(graph.params), dict(graph.param_values)
        self.phys = {v: v for v in graph.inputs}
        self.phys.update({v: v for v in graph.param_values.values()})
        self.perm, self.cache, self.scrambled, self.added = {}, {}, {}, set()
        self.owed, self.carried, self.claimed = {}, {}, set()  # Note [carried permutes]
        self.flips = frozenset(graph.meta.get("flip_permutes", ()))
        self.nodes, self.node = [], None
        self.attended = set()  # the attentions' results (Note [one-head attention])

    # -- values -----------------------------------------------------------------------------
    def perm_of(self, value) -> tuple:
        """The physical order of a logical value (identity unless a handler chose another)."""
        return self.perm.get(value, _identity(value.type.rank))

    def is_param(self, value) -> bool:
        """True for stored arrays of the source graph."""
        return self.graph.is_param(value)

    def fresh(self, base) -> str:
        """An unused value name derived from ``base``."""
        return self.builder.fresh(base)

    def const(self, array, hint) -> Value:
        """A new stored array named from ``hint``."""
        return self.builder.param(hint, array)

    def at(self, value, target):
        """``value`` stored in physical order ``target``: as it is, a transposed constant, or a permute."""
        if value is None:
            return None
        current = self.perm_of(value)
        if current == tuple(target):
            return self.phys[value]
        if self.is_param(value):
            key = (value, tuple(target))
            if key not in self.cache:
                array = np.transpose(self.graph.params[value.name], target)
                self.cache[key] = self.const(array, f"{value.name}.t{''.join(map(str, target))}")
            return self.cache[key]
        back = inverse(current)
        perm = tuple(back[t] for t in target)
        key = (self.phys[value], perm)  # values stored alike (two permutes of one input) share it
        if key not in self.cache:
            self.cache[key] = self.transpose(self.phys[value], perm)
            self._carry(value, self.cache[key])
        return self.cache[key]

    def ready(self, value, target) -> bool:
        """True when ``at(value, target)`` emits no node: ``value`` is stored so, a stored array, or transposed so
        already (the model's input, once its first convolution read it channels-last)."""
        current = self.perm_of(value)
        if value is None or current == tuple(target) or self.is_param(value):
            return True
        back = inverse(current)
        return (self.phys[value], tuple(back[t] for t in target)) in self.cache

    def owe(self, value, moved_from, permute=None) -> None:
        """Note [carried permutes]: ``value`` holds ``moved_from``'s stored data unmoved (a permute that ran
        no node, a reshape of the stored tensor, an elementwise op), so it owes the source permute that
        ``moved_from`` owes, or ``permute`` itself when that is the source's (not one the layout pass flipped in)."""
        owed = self.owed.get(moved_from)
        if permute is not None and permute.outputs[0].name not in self.flips:
            owed = permute
        if owed is not None and self.perm_of(value) != _identity(value.type.rank):  # identity: nothing left to move
            self.owed[value] = owed

    def _carry(self, value, out) -> None:
        """Note [carried permutes]: the first transpose that moves the data a source permute left unmoved
        does that permute's own work, in stored order."""
        permute = self.owed.get(value)
        if permute is not None and permute not in self.claimed and self.nodes and self.nodes[-1].op is PERMUTE \
                and self.nodes[-1].outputs[0] is out:
            self.claimed.add(permute)
            self.carried[out.name] = (permute.outputs[0].name, permute.scope)

    def transpose(self, source, perm, lifted=False):
        """Emit ``permute(source)`` named for the layout it makes (``x_nhwc``), or a reshape when only size-1 axes
        move (Note [size-1 spatial dims]; always for an operand ``lifted`` by a reshape; never beside an attention:
        Note [one-head attention]). It belongs to no layer of
        the source: no scope."""
        shape = tuple(source.type.shape[p] for p in perm)
        hint = f"{source.name}_{_LAYOUT_SUFFIX.get(tuple(perm), 't')}"
        beside = tuple(perm) == HEADS and (source in self.attended or self.node is not None
                                           and self.node.op is ATTENTION)
        if moves_data(source.type.shape, perm) if lifted else beside or writes_permute(source.type.shape, perm):
            out = self.emit(PERMUTE, [source], {"perm": tuple(perm)}, hint=hint, scope="")[0]
        else:
            out = self.emit(RESHAPE, [source], {"shape": shape}, hint=hint, scope="")[0]
        self.added.add(out.name)
        return out

    def operand(self, value, target):
        """An operand broadcast against a result stored in ``target`` order (rank alignment included)."""
        rank, own = len(target), None if value is None else value.type.rank
        if value is None or own == rank:
            return self.at(value, target)
        if own == 0:
            return self.at(value, ())
        if target == _identity(rank):  # NumPy broadcasting aligns trailing axes as before
            return self.at(value, _identity(own))
        key = (value, tuple(target), "broadcast")
        if key not in self.cache:
            shape = (1,) * (rank - own) + tuple(value.type.shape)
            if self.is_param(value):
                array = self.graph.params[value.name].reshape(shape).transpose(target)
                self.cache[key] = self.const(array, f"{value.name}.t{''.join(map(str, target))}")
            else:
                lifted = self.emit(RESHAPE, [self.at(value, _identity(own))], {"shape": shape},
                                   hint=f"{value.name}_r")[0]
                self.cache[key] = self.transpose(lifted, tuple(target), lifted=True)
        return self.cache[key]

    # -- nodes ------------------------------------------------------------------------------
    def emit(self, op, inputs, attrs, hint="t", like=None, perms=None, scope=None) -> list:
        """Append a node; outputs stand for the logical values ``like`` stored in ``perms``, else are fresh.

        The node takes the scope of the node being rewritten unless ``scope`` is given."""
        attrs = op.normalize_attrs(dict(attrs), self.node.where() if self.node else op.name)
        types = infer_outputs(op, [v.type if v is not None else None for v in inputs], attrs)
        if like is None:
            outs = [Value(self.fresh(hint), t) for t in types]
        else:
            outs = [self._physical(orig, t, perm) for orig, t, perm in zip(like, types, perms)]
        if scope is None:
            scope = self.node.scope if self.node else ""
        self.nodes.append(Node(op, tuple(inputs), tuple(outs), attrs, scope))
        if op is ATTENTION:
            self.attended.update(outs)
        return outs

    def _physical(self, orig, type_, perm):
        """The Value holding ``orig`` in order ``perm``: ``orig`` itself in logical order. A graph output
        keeps its name for its final, logical-order form; its physical form gets a new one."""
        if perm == _identity(len(perm)) and orig.type == type_:
            return orig
        return Value(self.fresh(f"{orig.name}_p") if orig in self.graph.outputs else orig.name, type_)

    def bind(self, node, op, inputs, attrs, perms) -> None:
        """Emit ``node`` as ``op(inputs) {attrs}`` whose outputs are stored in ``perms``."""
        perms = [tuple(p) for p in perms]
        outs = self.emit(op, inputs, attrs, like=node.outputs, perms=perms)
        for orig, out, perm in zip(node.outputs, outs, perms):
            self.phys[orig], self.perm[orig] = out, tuple(perm)

    def alias(self, value, physical, perm) -> None:
        """``value`` needs no node: it is ``physical`` stored in order ``perm``."""
        self.phys[value], self.perm[value] = physical, tuple(perm)

    def fallback(self, node) -> None:
        """A layout-bound op: inputs in logical order, the node as it was."""
        inputs = [None if v is None else self.at(v, _identity(v.type.rank)) for v in node.inputs]
        self.bind(node, node.op, inputs, node.attrs, [_identity(v.type.rank) for v in node.outputs])

    # -- driver -----------------------------------------------------------------------------
    def run(self):
        """The rebuilt graph (outputs in logical order; unused nodes and constants are not removed yet).

        Note [stored orders]: a value stored in another order keeps its name, so ``meta["stored_orders"]``
        maps those names to their order (to compare them with the source's own intermediates), and
        ``meta["layout_transposes"]`` names the transposes this pass added (they have no source layer).
        """
        for node in self.graph.nodes:
            self.node = node
            rule = None if node in self.keep else self.rules.get(node.op)
            if rule is None or not rule(self, node):
                self.fallback(node)
        self.node = None
        outputs = tuple(self._final(v) for v in self.graph.outputs)
        old = self.graph.meta.get("stored_orders", {})
        orders = dict(old)
        for value, perm in self.perm.items():
            if perm != _identity(len(perm)) and self.phys[value].name == value.name:
                orders[value.name] = perm if value.name not in old else tuple(old[value.name][p] for p in perm)
        meta = {**self.graph.meta, "stored_orders": orders,
                "layout_transposes": frozenset(self.graph.meta.get("layout_transposes", ())) | self.added,
                "carried_permutes": {**self.graph.meta.get("carried_permutes", {}), **self.carried}}
        return self.graph.replace(nodes=tuple(self.nodes), outputs=outputs, params=self.builder.params,
                                  param_values=self.builder.param_values, meta=meta)

    def _final(self, value):
        """A graph output in logical order, under its own name where a permute has to be added."""
        target = _identity(value.type.rank)
        if self.perm_of(value) == target or self.is_param(value):
            return self.at(value, target)
        source = self.phys[value]
        perm = inverse(self.perm_of(value))
        if (source, perm) in self.cache:
            return self.cache[(source, perm)]
        op, attrs = (PERMUTE, {"perm": perm}) if writes_permute(source.type.shape, perm) else \
            (RESHAPE, {"shape": value.type.shape})
        self.nodes.append(Node(op, (source,), (value,), op.normalize_attrs(attrs), ""))
        self.added.add(value.name)
        self.cache[(source, perm)] = value
        return value


# Note [ties go to orders at hand]: a broadcasting op whose inputs are stored in two orders, one each, runs in the
# order of one of them and transposes the other. Taking the first input's order made the first of three sibling
# blocks unlike the others (Note [sibling blocks] in passes/blocks_siblings.py): its residual add read the model's
# NCHW input beside its own NHWC branch, and ran in NCHW with a transpose back, where the next blocks, reading an
# NHWC convolution, ran in NHWC. The input had been transposed to NHWC already (for the first convolution), so the
# tie goes to the order in which fewer inputs need a new transpose (``Sinker.ready``): one permute fewer, and
# blocks alike. Without such an input the first input's order wins, as before.


def most_common(perms, rank, cost=None) -> tuple:
    """The order most inputs already have (on a tie the first, or the first of least ``cost(order)``: Note [ties
    go to orders at hand]); identity when there is none."""
    if not perms:
        return _identity(rank)
    counts = Counter(perms)
    best = max(counts.values())
    tied = [p for p in perms if counts[p] == best]
    return min(tied, key=cost) if cost else tied[0]
