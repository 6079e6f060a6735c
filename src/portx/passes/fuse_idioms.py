"""Softmax and GELU written out op by op become one ``softmax`` / ``gelu`` op.

Note [idioms fused]: a model traced through JAX (a Keras layer whose ``call`` runs ``keras.ops``, keras-hub's MiT
attention, GPT-2's ``gelu_approximate``) reaches the IR as what ``jax.nn.softmax`` and ``jax.nn.gelu`` compute, not
as the functions a person called:

    softmax(x, axis)                         gelu(x, approximate="tanh")
    m = amax(x, axes=(axis,))                c = x * x * x
    m = maximum(-inf, m)    [JAX's guard]    u = 0.7978846 * (x + 0.044715 * c)
    m = reshape(m) / stop_gradient(m)        y = x * (0.5 * (1 + tanh(u)))
    e = exp(x - m)
    y = e / reshape(sum(e, axes=(axis,)))    gelu(x): y = (0.5 * x) * erfc(-x * 0.70710677)

so the emitted code read twenty lines where a person writes ``torch.softmax(x, dim=-1)`` or ``F.gelu(x,
approximate="tanh")``, and the attention around such a softmax could not fuse (Note [attention fusion]). This pass
rewrites each chain into the one op, which means the same: the max a softmax subtracts only keeps ``exp`` in range,
and both targets' softmax subtracts it too (a row of all ``-inf`` is NaN either way); the GELU constants must be
the function's own to 1e-6 (relative), products and sums are matched in any operand order, and the erf form
``0.5 * x * (1 + erf(x * 0.70710677))`` is GELU too. A chain fuses only when no value inside it has a reader
outside it or is a graph output; ``x`` may have any readers. The constants left unread are dropped.
"""
from __future__ import annotations

import math

from ..ir import Graph, Node
from ..ops.elementwise import BINARY
from ..ops.elementwise.unary import UNARY
from ..ops.reduce import REDUCE, SOFTMAX
from ..ops.shape import EXPAND, RESHAPE
from .chains import Chains, near
from .fold import remove_dead_nodes

__all__ = ["fuse_idioms"]

_TANH_SCALE, _CUBE_SCALE, _ERF_SCALE = math.sqrt(2 / math.pi), 0.044715, math.sqrt(0.5)


class _Trees(Chains):
    """``Chains`` with products and ``1 + f(x)`` read as the GELU forms write them."""

    def product(self, value, used):
        """``value`` as a product: (the scalar constants' product, the other factors in order). Products
        and divisions by constants inside it are read through when only this product reads them."""
        node = self.only(value, BINARY["mul"], used) or self.only(value, BINARY["div"], used)
        return (1.0, [value]) if node is None else self.factors(node, used)

    def factors(self, node, used):
        """``product`` of the multiplication or division ``node`` (in ``used``)."""
        a, b = node.inputs
        if node.op is BINARY["div"]:
            c = self.scalar(b)
            if c is None or c == 0.0:
                used.remove(node)
                return 1.0, [node.outputs[0]]
            scale, rest = self.product(a, used)
            return scale / c, rest
        scale, rest = 1.0, []
        for side in (a, b):
            c = self.scalar(side)
            s, more = (c, []) if c is not None else self.product(side, used)
            scale, rest = scale * s, rest + more
        return scale, rest

    def plus_one(self, value, op, used):
        """The input of ``op`` where ``value`` is ``1 + op(input)`` (either order), else None."""
        add = self.only(value, BINARY["add"], used)
        if add is None:
            return None
        for one, other in (add.inputs, add.inputs[::-1]):
            inner = self.only(other, op, [])
            if near(self.scalar(one), 1.0) and inner is not None:
                used.append(inner)
                return inner.inputs[0]
        return None


def _gelu(trees, root):
    """(x, approximate, nodes replaced) where ``root`` ends a GELU of x, else None."""
    used = [root]
    scale, factors = trees.factors(root, used)
    if not near(scale, 0.5) or len(factors) != 2:
        return None
    for x, rest in (factors, factors[::-1]):
        for approximate, match in (("tanh", _tanh_part), ("none", _erf_part)):
            more = []
            if match(trees, x, rest, more):
                return x, approximate, used + more
    return None


def _tanh_part(trees, x, value, used) -> bool:
    """``value`` is ``1 + tanh(0.7978846 * (x + 0.044715 * x * x * x))``."""
    u = trees.plus_one(value, UNARY["tanh"], used)
    scale, inner = trees.product(u, used) if u is not None else (None, ())
    if not near(scale, _TANH_SCALE) or len(inner) != 1:
        return False
    add = trees.only(inner[0], BINARY["add"], used)
    for a, b in (add.inputs, add.inputs[::-1]) if add is not None else ():
        if a is x:
            cube_scale, cube = trees.product(b, used)
            return near(cube_scale, _CUBE_SCALE) and cube == [x, x, x]
    return False


def _erf_part(trees, x, value, used) -> bool:
    """``value`` is ``erfc(-x * 0.70710677)`` or ``1 + erf(x * 0.70710677)`` (``x / sqrt(2)``)."""
    erfc = trees.only(value, UNARY["erfc"], used)
    if erfc is not None:
        scale, inner = trees.product(erfc.inputs[0], used)
        neg = trees.only(inner[0], UNARY["neg"], used) if len(inner) == 1 else None
        return (near(scale, _ERF_SCALE) and neg is not None and neg.inputs[0] is x) or \
            (near(scale, -_ERF_SCALE) and inner == [x])
    r = trees.plus_one(value, UNARY["erf"], used)
    scale, inner = trees.product(r, used) if r is not None else (None, ())
    return near(scale, _ERF_SCALE) and inner == [x]


def _softmax(trees, root):
    """(x, axis, nodes replaced) where ``root`` (a division) ends a softmax of x, else None."""
    if root.attrs.get("rounding_mode") is not None:
        return None
    used = [root]
    e, total = root.inputs
    exp = trees.only(e, UNARY["exp"], used, readers=2)
    sub = trees.only(exp.inputs[0], BINARY["sub"], used) if exp is not None else None
    if sub is None or not e.type.dtype.startswith(("float", "bfloat")) or sub.inputs[0].type != e.type:
        return None
    x, m = sub.inputs
    reduced = _reduced(trees, total, REDUCE["sum"], used)
    if reduced is None or reduced[0] is not e:
        return None
    axis = reduced[1]
    stop = trees.only(m, UNARY["stop_gradient"], used)
    peak = _reduced(trees, stop.inputs[0] if stop is not None else m, REDUCE["amax"], used, guard=True)
    kept = e.type.shape[:axis] + (1,) + e.type.shape[axis + 1:]
    if peak is None or peak[0] is not x or peak[1] != axis or m.type.shape != kept or total.type.shape != kept:
        return None
    return x, axis, used


def _reduced(trees, value, op, used, guard=False):
    """(input, axis) where ``value`` is ``op`` over one axis with that axis kept (``keepdims``, or a reshape or
    expand putting it back); with ``guard``, maybe inside ``maximum(-inf, .)`` (JAX's softmax). Else None."""
    node = trees.only(value, RESHAPE, used) or trees.only(value, EXPAND, used)
    inner = node.inputs[0] if node is not None else value
    if guard:
        top = trees.only(inner, BINARY["maximum"], used)
        for low, other in (top.inputs, top.inputs[::-1]) if top is not None else ():
            if trees.scalar(low) == -math.inf:
                inner = other
    reduce = trees.only(inner, op, used)
    if reduce is None or len(reduce.attrs["axes"]) != 1 or reduce.attrs["keepdims"] == (node is not None):
        return None
    return reduce.inputs[0], reduce.attrs["axes"][0] % reduce.inputs[0].type.rank


def fuse_idioms(graph: Graph) -> Graph:
    """Rewrite written-out softmax and GELU chains into one op each (Note [idioms fused])."""
    trees = _Trees(graph)
    idioms = {BINARY["div"]: (_softmax, SOFTMAX, "axis"), BINARY["mul"]: (_gelu, UNARY["gelu"], "approximate")}
    fused, removed = {}, set()
    for node in graph.nodes:
        if node in removed or node.op not in idioms:
            continue
        find, op, attr = idioms[node.op]
        match = find(trees, node)
        if match is None or any(n in removed for n in match[2]):
            continue
        fused[node] = Node(op, (match[0],), node.outputs, {attr: match[1]}, node.scope)
        removed.update(match[2])
    if not fused:
        return graph
    nodes = tuple(fused.get(n, n) for n in graph.nodes if n in fused or n not in removed)
    return remove_dead_nodes(graph.replace(nodes=nodes))
