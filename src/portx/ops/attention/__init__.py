"""Scaled dot-product attention with torch's semantics (heads before sequence: (..., H, L, E)).

Note [fully masked rows]: when a mask hides every key of a query row, torch returns zeros for
that row (its ``_safe_softmax``), where a plain softmax over ``-inf`` gives NaN. The reference
and the Keras emit rule (to_keras.py) both zero such rows, and only when a mask is given: a causal
mask alone always leaves the first key visible.

This module declares the OpDef with its shape rule and NumPy reference; the rules for each source
and target are beside it (``from_torch.py``, ``to_keras.py``, ``from_keras.py``, ``to_torch.py``).

The optional ``dropout_p`` drops attention weights in training only (inference, the reference
and verification ignore it).

Note [attention layout]: ``layout`` (None: torch's order) is the order q, k, v and the output are
stored in, as a permute of the logical rank-4 (B, H, L, E): stored axis ``i`` holds logical axis
``layout[i]``, the depth E stays last, and the mask keeps the logical order. The layout pass sets
it (layout_rules.py) so that a head split ``view -> permute`` needs no transpose: e.g. (0, 2, 1, 3)
is Keras' (B, L, H, E), which ``ops.dot_product_attention`` takes as it is.

Example IR:
    %o: float32[1x2x5x4] = attention(%q, %k, %v, _) {enable_gqa=False, is_causal=True, scale=0.5}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import broadcast_shapes

__all__ = ["ATTENTION", "inverse_perm"]


def inverse_perm(perm) -> tuple:
    """The inverse permutation: ``inverse_perm((2, 0, 1, 3)) == (1, 2, 0, 3)``."""
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


ATTENTION = OpDef("attention", ("q", "k", "v", "mask?"),
                  {"is_causal": False, "scale": REQUIRED, "enable_gqa": False, "dropout_p": 0.0,
                   "layout": None},
                  family="attention",
                  doc="softmax(q @ k^T * scale + mask) @ v; a bool mask keeps True positions; dropout_p "
                      "drops attention weights in training only; layout: the operands' stored order "
                      "(Note [attention layout]).")


@ATTENTION.infer
def _attention_type(q, k, v, mask=None, *, is_causal, scale, enable_gqa, dropout_p=0.0, layout=None):
    if layout is not None:
        if q.rank != 4 or sorted(layout) != [0, 1, 2, 3] or layout[-1] != 3:
            raise ValueError(f"attention: layout {layout} needs rank-4 operands with the depth last")
        back = inverse_perm(layout)
        q, k, v = (t.with_shape(tuple(t.shape[b] for b in back)) for t in (q, k, v))
        out = _attention_type(q, k, v, mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        return out.with_shape(tuple(out.shape[p] for p in layout))
    if min(q.rank, k.rank, v.rank) < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not align")
    heads, kv_heads = (q.shape[-3], k.shape[-3]) if q.rank > 2 else (1, 1)
    if heads != kv_heads and not (enable_gqa and heads % kv_heads == 0):
        raise ValueError(f"attention: {heads} query heads and {kv_heads} key heads need enable_gqa")
    if mask is not None:
        broadcast_shapes(mask.shape, q.shape[:-1] + (k.shape[-2],))
    return q.with_shape(q.shape[:-1] + (v.shape[-1],))


@ATTENTION.reference
def _attention_numpy(q, k, v, mask=None, *, is_causal, scale, enable_gqa, dropout_p=0.0, layout=None):
    """Inference: no dropout."""
    if layout is not None:  # Note [attention layout]
        q, k, v = (np.transpose(a, inverse_perm(layout)) for a in (q, k, v))
        out = _attention_numpy(q, k, v, mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        return np.ascontiguousarray(np.transpose(out, layout))
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
