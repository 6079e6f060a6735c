"""Keras-JAX emit rule for attention, written out as ``keras.ops`` steps.

Scores are ``q @ k^T * scale``, then the causal and explicit masks, a softmax over the keys, and
the weighted sum of values; grouped-query attention repeats each key/value head first. Where a
mask is given, rows it hides entirely are zeroed (Note [fully masked rows] in __init__.py).

The softmax is a named ``Softmax`` layer (``<scope>_probs``) on float32 tensors, so
``model.get_layer("attn_probs").output`` shows the attention map.

Example generated code:
    attn_scores = ops.multiply(ops.matmul(attn_q, ops.swapaxes(attn_k, -1, -2)), 0.125)
    attn_probs = layers.Softmax(name='attn_probs')(attn_scores)
    attn_context = ops.matmul(attn_probs, attn_v)
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
    if all(v in k.live and v.type.dtype == "float32" for v in (q, key, value)):
        weights = k.sublayer(node, "Softmax", {"axis": -1}, [masked], hint="probs")
    else:
        weights = k.temp(node, f"ops.softmax({masked})", "probs")
    if len(node.inputs) > 3 and node.inputs[3] is not None:  # Note [fully masked rows]
        weights = k.temp(node, f"ops.where(ops.all(ops.equal({masked}, float('-inf')), axis=-1, keepdims=True), "
                               f"0.0, {weights})", "probs")
    k.assign(node, f"ops.matmul({weights}, {values})")
