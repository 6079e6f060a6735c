"""How each op runs on inputs stored in another axis order (Note [physical layouts] in layout_sink.py).

A rule ``rule(s, node) -> bool`` reads its inputs' physical orders (``s.perm_of``), emits the node
rewritten for them (axes, pads, shapes, weights) with ``s.bind``, and returns True; False sends the
node to ``s.fallback`` (inputs transposed back to logical order). Orders are tuples: stored axis
``i`` holds logical axis ``perm[i]``, so logical axis ``a`` is stored at ``inverse(perm)[a]``.

Example: ``RULES[SOFTMAX](sinker, node)`` rewrites ``softmax {axis=1}`` on an NHWC-stored NCHW
value as ``softmax {axis=3}``.
"""
from __future__ import annotations

import numpy as np

from ...ops.attention import ATTENTION
from ...ops.elementwise import BINARY, CAST, WHERE
from ...ops.embedding import EMBEDDING
from ...ops.linear import LINEAR, MATMUL
from ...ops.norm import LAYER_NORM, RMS_NORM
from ...ops.pad import PAD
from ...ops.reduce import ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, SOFTMAX, STD, VAR, VECTOR_NORM
from ...ops.shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ...ops.shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SELECT, SLICE, TILE
from ...ops.elementwise.unary import UNARY
from .reshape import reshape_rule
from .sink import inverse, most_common

__all__ = ["RULES", "BY_LAYOUT", "without_axes"]

RULES: dict = {}


def _rule(*ops):
    def register(fn):
        for op in ops:
            RULES[op] = fn
        return fn
    return register


def without_axes(perm, axes) -> tuple:
    """``perm`` after removing logical ``axes`` (renumbered): ``without_axes((0, 2, 3, 1), (2, 3)) == (0, 1)``."""
    return tuple(p - sum(1 for a in axes if a < p) for p in perm if p not in axes)


def _data(s, node):
    """(physical input 0, its order, where each logical axis is stored)."""
    x = node.inputs[0]
    perm = s.perm_of(x)
    return s.phys[x], perm, inverse(perm)


@_rule(*UNARY.values(), CAST)
def _same_order(s, node):
    """Elementwise on one input: any order works."""
    x, perm, _ = _data(s, node)
    s.bind(node, node.op, [x], node.attrs, [perm])
    s.owe(node.outputs[0], node.inputs[0])
    return True


@_rule(*BINARY.values(), WHERE)
def _broadcast(s, node):
    """Broadcasting ops: the order most full-rank inputs have (on a tie, one the inputs are at hand in: Note [ties go
    to orders at hand]); constants are transposed to it."""
    out = node.outputs[0].type
    full = [v for v in node.inputs if not s.is_param(v) and v.type.rank == out.rank]
    target = most_common([s.perm_of(v) for v in full], out.rank, lambda p: sum(not s.ready(v, p) for v in full))
    s.bind(node, node.op, [s.operand(v, target) for v in node.inputs], node.attrs, [target])
    return True


@_rule(PERMUTE)
def _permute(s, node):
    """A permute is free: its output is its input, read in another order."""
    x, perm, _ = _data(s, node)
    s.alias(node.outputs[0], x, tuple(inverse(node.attrs["perm"])[p] for p in perm))
    s.owe(node.outputs[0], node.inputs[0], node)
    return True


def _joined_order(s, node):
    """The order most non-constant inputs of a concat/stack have."""
    rank = node.inputs[0].type.rank
    return most_common([s.perm_of(v) for v in node.inputs if not s.is_param(v)], rank)


@_rule(CONCAT)
def _concat(s, node):
    target = _joined_order(s, node)
    axis = inverse(target)[node.attrs["axis"]]
    s.bind(node, node.op, [s.at(v, target) for v in node.inputs], {"axis": axis}, [target])
    return True


@_rule(STACK)
def _stack(s, node):
    """The new axis goes where the inputs' order puts the logical axes before it."""
    target, a = _joined_order(s, node), node.attrs["axis"]
    k = sum(1 for p in target if p < a)
    shifted = [p + (p >= a) for p in target]
    out = tuple(shifted[:k]) + (a,) + tuple(shifted[k:])
    s.bind(node, node.op, [s.at(v, target) for v in node.inputs], {"axis": k}, [out])
    return True


@_rule(SPLIT)
def _split(s, node):
    x, perm, where = _data(s, node)
    s.bind(node, node.op, [x], {**node.attrs, "axis": where[node.attrs["axis"]]}, [perm] * len(node.outputs))
    return True


@_rule(SLICE, SOFTMAX, LOG_SOFTMAX)
def _one_axis(s, node):
    x, perm, where = _data(s, node)
    s.bind(node, node.op, [x], {**node.attrs, "axis": where[node.attrs["axis"]]}, [perm])
    return True


@_rule(SELECT)
def _select(s, node):
    x, perm, where = _data(s, node)
    a = node.attrs["axis"]
    s.bind(node, node.op, [x], {**node.attrs, "axis": where[a]}, [without_axes(perm, (a,))])
    return True


@_rule(FLIP, ROLL)
def _axes_list(s, node):
    """flip / roll along listed axes (a roll of the flattened tensor depends on the order: fallback)."""
    if node.attrs.get("axes") is None:
        return False
    x, perm, where = _data(s, node)
    s.bind(node, node.op, [x], {**node.attrs, "axes": tuple(where[a] for a in node.attrs["axes"])}, [perm])
    return True


@_rule(*REDUCE.values(), VAR, STD, VECTOR_NORM)
def _reduce(s, node):
    x, perm, where = _data(s, node)
    axes = node.attrs["axes"]
    out = perm if node.attrs["keepdims"] else without_axes(perm, axes)
    s.bind(node, node.op, [x], {**node.attrs, "axes": tuple(sorted(where[a] for a in axes))}, [out])
    return True


@_rule(ARGMAX, ARGMIN)
def _arg_reduce(s, node):
    """argmax over one axis; over the flattened tensor (axis None) the order matters: fallback."""
    a = node.attrs["axis"]
    if a is None:
        return False
    x, perm, where = _data(s, node)
    out = perm if node.attrs["keepdims"] else without_axes(perm, (a,))
    s.bind(node, node.op, [x], {**node.attrs, "axis": where[a]}, [out])
    return True


@_rule(PAD)
def _pad(s, node):
    x, perm, _ = _data(s, node)
    s.bind(node, node.op, [x], {**node.attrs, "pads": tuple(tuple(node.attrs["pads"][p]) for p in perm)}, [perm])
    return True


@_rule(TILE)
def _tile(s, node):
    reps = tuple(node.attrs["reps"])
    if len(reps) != node.inputs[0].type.rank:
        return False
    x, perm, _ = _data(s, node)
    s.bind(node, node.op, [x], {"reps": tuple(reps[p] for p in perm)}, [perm])
    return True


@_rule(EXPAND)
def _expand(s, node):
    """New leading axes stay leading; the rest keep the input's order."""
    x, perm, _ = _data(s, node)
    shape = tuple(node.attrs["shape"])
    lead = len(shape) - len(perm)
    out = tuple(range(lead)) + tuple(p + lead for p in perm)
    s.bind(node, node.op, [x], {"shape": tuple(shape[p] for p in out)}, [out])
    return True


@_rule(INDEX_SELECT)
def _index_select(s, node):
    """The index's axes replace the selected axis where it is stored."""
    x, perm, where = _data(s, node)
    index, a = node.inputs[1], node.attrs["axis"]
    m = index.type.rank
    out = []
    for p in perm:
        out.extend(range(a, a + m) if p == a else [p if p < a else p + m - 1])
    s.bind(node, node.op, [x, s.at(index, tuple(range(m)))], {"axis": where[a]}, [tuple(out)])
    return True


@_rule(GATHER)
def _gather(s, node):
    x, perm, where = _data(s, node)
    s.bind(node, node.op, [x, s.at(node.inputs[1], perm)], {"axis": where[node.attrs["axis"]]}, [perm])
    return True


@_rule(EMBEDDING)
def _embedding(s, node):
    """Rows picked by indices in any order; the feature axis comes last."""
    table, indices = node.inputs
    perm = s.perm_of(indices)
    s.bind(node, node.op, [s.at(table, (0, 1)), s.phys[indices]], node.attrs, [perm + (len(perm),)])
    return True


@_rule(LAYER_NORM, RMS_NORM)
def _trailing_norm(s, node):
    """Normalizing the trailing axes works while those axes stay trailing, in order."""
    x, perm, _ = _data(s, node)
    rank, n = len(perm), len(node.attrs["normalized_shape"])
    if perm[rank - n:] != tuple(range(rank - n, rank)):
        return False
    s.bind(node, node.op, [x] + [s.at(v, tuple(range(n))) if v is not None else None for v in node.inputs[1:]],
           node.attrs, [perm])
    return True


@_rule(LINEAR)
def _linear(s, node):
    """Linear acts on the last axis; after a reordered flatten its weight's columns are reordered."""
    x, w = node.inputs[:2]
    rest = [s.at(v, (0,)) if v is not None else None for v in node.inputs[2:]]
    if x in s.scrambled:
        columns = s.scrambled[x]
        weight = s.const(s.graph.params[w.name][:, columns], f"{w.name}.reordered")
        s.bind(node, node.op, [s.phys[x], weight] + rest, node.attrs, [tuple(range(x.type.rank))])
        return True
    perm = s.perm_of(x)
    if perm[-1] != len(perm) - 1:
        return _linear_second_to_last(s, node, perm)
    s.bind(node, node.op, [s.phys[x], s.at(w, (0, 1))] + rest, node.attrs, [perm])
    return True


def _linear_second_to_last(s, node, perm):
    """Features stored second to last (MLP-Mixer's token mixing): ``W @ x`` plus the bias as a column."""
    x, w = node.inputs[:2]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    rank = len(perm)
    if rank < 2 or inverse(perm)[rank - 1] != rank - 2 or not s.is_param(w) or (bias is not None
                                                                                and not s.is_param(bias)):
        return False
    if _in_attention_module(s.graph, w) or _into_residual(s, node):  # Note [held parameters] in targets/torch_xla/
        return False  # held.py; Note [a linear into a residual]
    if bias is None:
        s.bind(node, MATMUL, [s.at(w, (0, 1)), s.phys[x]], {}, [perm])
        return True
    y = s.emit(MATMUL, [s.at(w, (0, 1)), s.phys[x]], {}, hint=f"{node.outputs[0].name}_rows")[0]
    column = s.emit(RESHAPE, [s.at(bias, (0,))], {"shape": (bias.type.shape[0], 1)}, hint=f"{bias.name}_column")[0]
    s.bind(node, BINARY["add"], [y, column], {}, [perm])
    return True


def _into_residual(s, node) -> bool:
    """Note [a linear into a residual]: the weight-first matmul keeps the features second to last, and an add with a
    value stored in logical order then transposes its result back: the same one transpose as before a ``Linear``,
    which is what a person writes (keras-hub MiT's ``mix_ffn`` output: ``torch.matmul(self.mix_ffn.dense_1.weight,
    x) + bias.reshape(16, 1)`` and a permute after, where ``self.mix_ffn.dense_1(x.permute(0, 2, 1))`` is meant).
    True where a reader of the linear's result is such an add."""
    out, rank = node.outputs[0], node.outputs[0].type.rank
    return any(u.op is BINARY["add"] and any(o is not out and o in s.phys and o.type.rank == rank
                                             and s.perm_of(o) == tuple(range(rank)) for o in u.inputs)
               for u in s.users.get(out, []))


def _in_attention_module(graph, weight) -> bool:
    """True for a weight of a source ``nn.MultiheadAttention`` (its ``out_proj``): the emitted module declares that
    module with the source's keys only while each projection stays a ``linear`` on the weights as they are, so its
    output projection is never a column matmul on a copied bias; the one transpose before it is the cost."""
    classes, parts = graph.meta.get("module_classes") or {}, weight.name.split(".")
    return any(classes.get(".".join(parts[:i])) == "MultiheadAttention" for i in range(1, len(parts)))


@_rule(MATMUL)
def _matmul(s, node):
    """A constant matrix on either side contracts one axis wherever it is stored; two batches of
    matrices multiply in any order of their batch axes, the same for both."""
    a, b = node.inputs
    if s.is_param(b) and b.type.rank == 2 and a.type.rank >= 2 and not s.is_param(a):
        return _contract(s, node, a, a.type.rank - 1, b, right=True)
    if s.is_param(a) and a.type.rank == 2 and b.type.rank >= 2 and not s.is_param(b):
        return _contract(s, node, b, b.type.rank - 2, a, right=False)
    pa, pb = s.perm_of(a), s.perm_of(b)
    rank = len(pa)
    if rank < 2 or rank != len(pb) or pa != pb or pa[-2:] != (rank - 2, rank - 1):
        return False
    s.bind(node, node.op, [s.phys[a], s.phys[b]], node.attrs, [pa])
    return True


def _contract(s, node, x, axis, matrix, right):
    """``y`` = ``x`` with logical ``axis`` contracted by a constant matrix, in x's stored order.

    Stored last: ``x @ M``; stored second to last: ``M @ x``; elsewhere the axes after it are
    merged so that it becomes second to last (reshapes only, never a transpose).
    """
    perm = s.perm_of(x)
    j, phys = inverse(perm)[axis], s.phys[x]
    rank = len(perm)
    array = s.graph.params[matrix.name]

    def constant(want_right):
        if want_right == right:
            return s.at(matrix, (0, 1))
        return s.const(array.T, f"{matrix.name}.T")

    if j == rank - 1:
        s.bind(node, MATMUL, [phys, constant(True)], {}, [perm])
        return True
    if j == rank - 2:
        s.bind(node, MATMUL, [constant(False), phys], {}, [perm])
        return True
    shape = phys.type.shape
    flat = s.emit(RESHAPE, [phys], {"shape": shape[:j + 1] + (int(np.prod(shape[j + 1:])),)}, hint=f"{x.name}_flat")[0]
    y = s.emit(MATMUL, [constant(False), flat], {}, hint=f"{x.name}_contracted")[0]
    out_shape = tuple(node.outputs[0].type.shape[p] for p in perm)
    s.bind(node, RESHAPE, [y], {"shape": out_shape}, [perm])
    return True


@_rule(ATTENTION)
def _attention(s, node):
    """Note [attention layout]: q, k and v stored alike with the depth last run as they are stored
    (the op's ``layout``): rank 4, float, no dropout; a value depth other than the keys' (LeViT) runs
    stepwise, its operands read back in the logical order, which XLA folds into the dot products."""
    q, k, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    target = s.perm_of(q)
    floats = all(t.type.dtype in ("float32", "bfloat16", "float16") for t in (q, k, v))
    if (q.type.rank != 4 or target == (0, 1, 2, 3) or target[-1] != 3 or node.attrs.get("layout") is not None
            or not floats or node.attrs.get("dropout_p")
            or any(s.is_param(t) for t in (q, k, v)) or s.perm_of(k) != target or s.perm_of(v) != target):
        return False
    inputs = [s.phys[q], s.phys[k], s.phys[v]] + ([] if mask is None else [s.at(mask, tuple(range(mask.type.rank)))])
    s.bind(node, node.op, inputs, {**node.attrs, "layout": target}, [target])
    return True


RULES[RESHAPE] = reshape_rule

#: OpDef.layout tag -> rule, for ops declared with a tag and no entry in RULES (``rules.get`` falls back here)
BY_LAYOUT = {"axis": _one_axis, "axes": _axes_list}


class _Rules(dict):
    """RULES, falling back to the op's declared layout tag (OpDef(..., layout="axis"))."""

    def get(self, op, default=None):
        return super().get(op) or BY_LAYOUT.get(getattr(op, "layout", None), default)


RULES = _Rules(RULES)
