"""Attention written out as matmul / softmax / matmul becomes one ``attention`` op.

Note [attention fusion]: eager attention (Hugging Face's ``eager`` implementation, ``nn.MultiheadAttention``
when it computes its weights, hand-written transformer blocks) reaches the IR as

    scores = matmul(q, k^T)  [times scalar constants on q, k or the scores]  [+ float mask]
    probs  = softmax(scores, axis=-1)  [dropout]
    out    = matmul(probs, v)

which is exactly the IR ``attention`` (SDPA's meaning: ``softmax(q @ k^T * scale + mask) @ v``), so the
pass rewrites each such chain into ``attention(q, k, v, mask) {scale, dropout_p}`` and the targets write
one ``ops.dot_product_attention`` / ``F.scaled_dot_product_attention`` call. It only fuses when every
intermediate (scores, probs) has no other reader and is no graph output (returned attention weights
keep the chain), the scale factors are scalar constants, and q, k and v share their batch axes. JAX's batched
matmul (``dot_general``, keras-hub MiT's attention) merges the batch and head axes for the two matmuls and splits
them for the softmax between: a reshape after the first matmul and its inverse before the second, both keeping
the last two axes, are read through (without a mask), and the attention runs on the merged axes. Where those
reshapes only squeeze a unit head axis (``jnp.matmul`` does so for a one-head attention, MiT-B0's first stage)
and q, k and v were reshaped so too, it runs on the axes before them, ``(B, 1, N, d)`` as a multi-head attention
on ``(B, h, N, d)``, its result reshaped back (read through too where the source does: Note [one-head attention]
in passes/layout/sink.py). ``k^T`` is
the keys when it is a permute of the last two axes; otherwise the pass adds that permute. A scale within float32
rounding of ``1/sqrt(E)`` (JAX's ``0.35355338`` for E = 8) is that default exactly, so the code writes no ``scale=``
and blocks whose head widths differ write the same call (keras-hub MiT's stages). One
difference is deliberate: a row that the mask hides entirely (all ``-inf``) is NaN in the source and
zeros after fusion (Note [fully masked rows] in ops/attention/__init__.py), so verification only passes
such a model where the source gave numbers.

Example (before / after)::

    %s = matmul(%q, %kt)                 %o = attention(%q, %k, %v, %mask) {scale=0.25, dropout_p=0.1}
    %t = mul(%s, %scale)           ->
    %u = add(%t, %mask)
    %p = softmax(%u) {axis=3}
    %d = dropout(%p) {rate=0.1, axes=()}
    %o = matmul(%d, %v)
"""
from __future__ import annotations

import math

from ..ir import Graph, Node, Value, fresh_name
from ..ops.attention import ATTENTION
from ..ops.dropout import DROPOUT
from ..ops.elementwise import BINARY
from ..ops.linear import MATMUL
from ..ops.reduce import SOFTMAX
from ..ops.shape import PERMUTE, RESHAPE
from .chains import Chains, near

__all__ = ["fuse_attention"]


class _Chain(Chains):
    """``Chains`` with the attention chain's own readings: a matmul, a batch reshape, scalar factors."""

    def from_matmul(self, value) -> bool:
        """True when ``value`` is a matmul's result, maybe times scalar constants."""
        return self.only(self.peel(value, [])[0], MATMUL) is not None

    def merged(self, value, used):
        """(input, node) where ``value`` is a reshape that keeps the last two axes (it merges or splits the batch
        and head axes: JAX's batched ``dot_general`` is a matmul over one batch axis between two such
        reshapes); else (value, None)."""
        node = self.only(value, RESHAPE)
        if node is None or node.inputs[0].type.shape[-2:] != value.type.shape[-2:]:
            return value, None
        used.append(node)
        return node.inputs[0], node

    def unmerged(self, values, batch, used):
        """``values`` before the reshapes that merged their ``batch`` axes (JAX's ``jnp.matmul`` squeezes a unit
        head axis before its ``dot_general``), when each has one; else ``values``."""
        found = [self.merged(value, []) for value in values]
        if any(node is None or value.type.shape[:-2] != batch for value, node in found):
            return values
        used.extend(node for _, node in found)
        return tuple(value for value, _ in found)

    def split_back(self, value, batch, used):
        """The reshape's output when ``value``'s one reader splits its batch axes back to ``batch`` (JAX's
        ``jnp.matmul`` restores the unit axis it squeezed), else ``value``."""
        (node,) = self.users.get(value, [None]) if self.readers.get(value) == 1 else (None,)
        if node is None or node.op is not RESHAPE or value in self.outputs or node.outputs[0].type.shape[:-2] != batch:
            return value
        used.append(node)
        return node.outputs[0]

    def peel(self, value, used):
        """``value`` without the scalar constants it is multiplied or divided by: (base, factor)."""
        factor = 1.0
        while True:
            node = self.only(value, BINARY["mul"]) or self.only(value, BINARY["div"])
            if node is None:
                return value, factor
            a, b = node.inputs
            if node.op is BINARY["mul"] and self.scalar(a) is not None:
                a, b = b, a
            c = self.scalar(b)
            if c is None or c == 0.0 or a.type.shape != value.type.shape:
                return value, factor
            factor = factor * c if node.op is BINARY["mul"] else factor / c
            used.append(node)
            value = a


def _swaps_last(perm) -> bool:
    n = len(perm)
    return n >= 2 and tuple(perm) == tuple(range(n - 2)) + (n - 1, n - 2)


def _match(chain, out_node):
    """(attention inputs, attrs, the nodes it replaces, a permute to add or None) for ``out_node``, or None."""
    probs, v = out_node.inputs
    used, rate = [out_node], 0.0
    probs, merge = chain.merged(probs, used)  # Note [attention fusion]: the batch axes merged for the matmul
    drop = chain.only(probs, DROPOUT)
    if drop is not None and not drop.attrs["axes"]:
        used.append(drop)
        rate, probs = float(drop.attrs["rate"]), drop.inputs[0]
    soft = chain.only(probs, SOFTMAX)
    if soft is None or soft.attrs["axis"] % probs.type.rank != probs.type.rank - 1:
        return None
    used.append(soft)
    scores, mask = soft.inputs[0], None
    add = chain.only(scores, BINARY["add"])
    if add is not None:
        for s, m in (add.inputs, add.inputs[::-1]):
            if s.type.shape == scores.type.shape and m.type.dtype == s.type.dtype and chain.from_matmul(s):
                used.append(add)
                scores, mask = s, m
                break
    scores, scale = chain.peel(scores, used)
    if merge is not None:  # and split again after the first
        scores, split = chain.merged(scores, used)
        if split is None or scores.type.shape != merge.outputs[0].type.shape:
            return None
    qk = chain.only(scores, MATMUL)
    if qk is None:
        return None
    used.append(qk)
    q, scale_q = chain.peel(qk.inputs[0], used)
    kt, scale_k = chain.peel(qk.inputs[1], used)
    out = out_node.outputs[0]
    if merge is not None:  # Note [attention fusion]: on the axes before the merge, when q, k and v had them
        q, kt, v = chain.unmerged((q, kt, v), merge.inputs[0].type.shape[:-2], used)
        out = chain.split_back(out, v.type.shape[:-2], used)
    if not (q.type.rank == kt.type.rank == v.type.rank >= 3 and q.type.shape[:-2] == kt.type.shape[:-2]
            == v.type.shape[:-2] and q.type.dtype == kt.type.dtype == v.type.dtype):
        return None
    flip = chain.producer.get(kt)
    if flip is not None and flip.op is PERMUTE and _swaps_last(flip.attrs["perm"]):
        k, transpose = flip.inputs[0], None
        if chain.readers.get(kt) == 1 and kt not in chain.outputs:
            used.append(flip)
    else:
        k, transpose = None, kt
    scale, default = scale * scale_q * scale_k, 1.0 / math.sqrt(q.type.shape[-1])
    scale = default if near(scale, default) else scale  # the source's float32 1/sqrt(E): SDPA's default, unwritten
    attrs = {"is_causal": False, "scale": scale, "enable_gqa": False, "dropout_p": rate}
    return (q, k, v, mask), attrs, used, transpose, out


def fuse_attention(graph: Graph) -> Graph:
    """Rewrite matmul / softmax / matmul chains into ``attention`` (Note [attention fusion])."""
    chain = _Chain(graph)
    fused, removed = {}, set()
    taken = {v.name for n in graph.nodes for v in n.outputs} | set(graph.params) | {v.name for v in graph.inputs}
    for node in graph.nodes:
        if node.op is not MATMUL or len(node.inputs) != 2:
            continue
        match = _match(chain, node)
        if match is None or any(n in removed for n in match[2]):
            continue
        (q, k, v, mask), attrs, used, transpose, out = match
        new = []
        if transpose is not None:  # keys given already transposed: transpose them back
            perm = tuple(range(transpose.type.rank - 2)) + (transpose.type.rank - 1, transpose.type.rank - 2)
            shape = transpose.type.shape[:-2] + transpose.type.shape[:-3:-1]
            k = Value(fresh_name(taken, f"{transpose.name}_keys"), transpose.type.with_shape(shape))
            taken.add(k.name)
            new.append(Node(PERMUTE, (transpose,), (k,), {"perm": perm}, node.scope))
        heads = out
        if v.type.shape[:-2] != out.type.shape[:-2]:  # on the axes before the merge, its result merged after it
            heads = Value(fresh_name(taken, f"{out.name}_heads"), out.type.with_shape(v.type.shape[:-2]
                                                                                        + out.type.shape[-2:]))
            taken.add(heads.name)
        new.append(Node(ATTENTION, (q, k, v, mask), (heads,), attrs, node.scope))
        if heads is not out:
            new.append(Node(RESHAPE, (heads,), (out,), {"shape": out.type.shape}, node.scope))
        fused[node] = new
        removed.update(used)
    if not fused:
        return graph
    nodes = []
    for node in graph.nodes:
        if node in fused:
            nodes.extend(fused[node])
        elif node not in removed:
            nodes.append(node)
    return graph.replace(nodes=tuple(nodes))
