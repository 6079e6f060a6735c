"""Scaled dot-product attention with torch's semantics (heads before sequence: (..., H, L, E)).

Note [fully masked rows]: when a mask hides every key of a query row, torch returns zeros for
that row (its ``_safe_softmax``), where a plain softmax over ``-inf`` gives NaN. The reference
and the Keras rule both zero such rows, and only when a mask is given: a causal mask alone always
leaves the first key visible.

Example IR:
    %o: float32[1x2x5x4] = attention(%q, %k, %v, _) {enable_gqa=False, is_causal=True, scale=0.5}
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import broadcast_shapes

__all__ = ["ATTENTION"]

ATTENTION = OpDef("attention", ("q", "k", "v", "mask?"), {"is_causal": False, "scale": REQUIRED, "enable_gqa": False},
                  family="attention",
                  doc="softmax(q @ k^T * scale + mask) @ v; a bool mask keeps True positions.")


@ATTENTION.infer
def _attention_type(q, k, v, mask=None, *, is_causal, scale, enable_gqa):
    if min(q.rank, k.rank, v.rank) < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not align")
    heads, kv_heads = (q.shape[-3], k.shape[-3]) if q.rank > 2 else (1, 1)
    if heads != kv_heads and not (enable_gqa and heads % kv_heads == 0):
        raise ValueError(f"attention: {heads} query heads and {kv_heads} key heads need enable_gqa")
    if mask is not None:
        broadcast_shapes(mask.shape, q.shape[:-1] + (k.shape[-2],))
    return q.with_shape(q.shape[:-1] + (v.shape[-1],))


@ATTENTION.reference
def _attention_numpy(q, k, v, mask=None, *, is_causal, scale, enable_gqa):
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    if enable_gqa and q.ndim > 2:
        k64, v64 = (np.repeat(a, q.shape[-3] // k.shape[-3], axis=-3) for a in (k64, v64))
    scores = q64 @ np.swapaxes(k64, -1, -2) * scale
    if is_causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    hidden = np.all(scores == -np.inf, axis=-1, keepdims=True)  # Note [fully masked rows]
    top = np.where(hidden, 0.0, scores.max(axis=-1, keepdims=True))
    weights = np.exp(scores - top)
    with np.errstate(invalid="ignore"):
        weights = np.where(hidden, 0.0, weights / weights.sum(axis=-1, keepdims=True))
    return (weights @ v64).astype(q.dtype)


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


@ATTENTION.imports("torch", "aten::scaled_dot_product_attention")
def _attention_from_aten(call):
    """dropout_p is ignored: exported models run in eval mode, where torch applies no dropout."""
    q, mask = call.arg("query"), call.arg("attn_mask")
    if mask is not None and call.arg("is_causal", False):
        call.unsupported("attn_mask together with is_causal=True (torch rejects it too)")
    scale = call.arg("scale")
    attrs = {"is_causal": bool(call.arg("is_causal", False)), "enable_gqa": bool(call.arg("enable_gqa", False)),
             "scale": float(scale) if scale is not None else 1.0 / math.sqrt(q.type.shape[-1])}
    return call.emit(ATTENTION, [q, call.arg("key"), call.arg("value"), mask], attrs)
