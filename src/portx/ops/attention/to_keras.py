"""Keras-JAX emit rule for attention, written out as ``keras.ops`` steps.

Scores are ``q @ k^T * scale``, then the causal and explicit masks, a softmax over the keys, and
the weighted sum of values; grouped-query attention repeats each key/value head first. Where a
mask is given, rows it hides entirely are zeroed (Note [fully masked rows] in __init__.py).

Example generated code:
    attn_scores = ops.multiply(ops.matmul(q, ops.swapaxes(k, -1, -2)), 0.125)
    attn_weights = ops.softmax(attn_scores, axis=-1)
    attn = ops.matmul(attn_weights, v)
"""
from __future__ import annotations

from ..attention import ATTENTION

__all__ = []


def _masked_scores(node, k, scores):
    """Apply the causal and explicit masks to the expression ``scores``; returns the new expression."""
    q, key, _, mask = (list(node.inputs) + [None])[:4]
    if node.attrs["is_causal"]:
        size = (q.type.shape[-2], key.type.shape[-2])
        scores = k.temp(node, f"ops.where(ops.tril(ops.ones({k.lit(size)}, dtype='bool')), {scores}, "
                              f"float('-inf'))", "causal_scores")
    if mask is not None:
        expr = (f"ops.where({k.ref(mask)}, {scores}, float('-inf'))" if mask.type.dtype == "bool"
                else f"ops.add({scores}, {k.ref(mask)})")
        scores = k.temp(node, expr, "masked_scores")
    return scores


@ATTENTION.emits("keras-jax")
def _attention_to_keras(node, k):
    q, key, value = node.inputs[:3]
    a = node.attrs
    keys, values = k.ref(key), k.ref(value)
    if q.type.rank > 2 and q.type.shape[-3] != key.type.shape[-3]:  # grouped-query: share each kv head
        repeat = q.type.shape[-3] // key.type.shape[-3]
        keys = k.temp(node, f"ops.repeat({keys}, {repeat}, axis=-3)", "keys")
        values = k.temp(node, f"ops.repeat({values}, {repeat}, axis=-3)", "values")
    scores = k.temp(node, f"ops.multiply(ops.matmul({k.ref(q)}, ops.swapaxes({keys}, -1, -2)), "
                          f"{k.lit(float(a['scale']))})", "scores")
    masked = _masked_scores(node, k, scores)
    weights = k.temp(node, f"ops.softmax({masked}, axis=-1)", "weights")
    if len(node.inputs) > 3 and node.inputs[3] is not None:  # Note [fully masked rows]
        weights = k.temp(node, f"ops.where(ops.all(ops.equal({masked}, float('-inf')), axis=-1, keepdims=True), "
                               f"0.0, {weights})", "weights")
    k.assign(node, f"ops.matmul({weights}, {values})")
