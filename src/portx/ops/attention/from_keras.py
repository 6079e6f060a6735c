"""Keras attention: MultiHeadAttention and keras.ops.dot_product_attention -> linear / reshape / permute + attention.

Note [keras attention layout]: MultiHeadAttention projects ``(B, *T, C)`` to ``(B, *T, N, D)`` with
EinsumDense kernels ``(C, N, D)``; here each projection is one ``linear`` with the kernel flattened
to torch's ``(N * D, C)``, then a reshape. Attention runs over ``attention_axes`` (default: every
axis between batch and heads); the other axes act as extra batch axes. The rule permutes to
``(B, *batch_axes, N, *attention_axes, D)`` and flattens to the IR's ``(B', N, L, D)``, then undoes it.

Note [keras masked rows]: where a mask hides every key of a query row, Keras gives different
answers on its two paths. The fused path (query rank 3, no dropout: ``ops.dot_product_attention``)
replaces masked scores by ``-0.7 * float32 max``, so such a row averages all values; the rule
passes that same additive mask to the IR ``attention``. The einsum path (other ranks, dropout > 0)
masks its Softmax, which zeroes such rows, exactly what a boolean IR mask does.

Example:
    >>> keras.layers.MultiHeadAttention(2, 8)(x, x, use_causal_mask=True)
    # -> linear, reshape, permute (q, k, v); attention{is_causal=True, scale=1/sqrt(8)}; permute, reshape, linear
"""
from __future__ import annotations

import math

import numpy as np

from ..attention import ATTENTION
from ..elementwise import BINARY, CAST, WHERE
from ..linear import LINEAR
from ..shape import EXPAND, PERMUTE, RESHAPE
from ..elementwise.unary import UNARY

__all__ = ["KERAS_MASKED_SCORE", "additive_mask"]

#: the score jax.nn.dot_product_attention puts where a boolean mask is False (float32)
KERAS_MASKED_SCORE = float(np.float32(-0.7 * np.finfo(np.float32).max))

def _reshape(call, x, shape):
    shape = tuple(int(d) for d in shape)
    return x if tuple(x.type.shape) == shape else call.emit(RESHAPE, [x], {"shape": shape})


def _permute(call, x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else call.emit(PERMUTE, [x], {"perm": perm})


def additive_mask(call, mask, dtype):
    """Boolean ``mask`` -> 0 where True, KERAS_MASKED_SCORE where False (Note [keras masked rows])."""
    zero = call.param(np.zeros((), dtype), "mask_keep")
    low = call.param(np.array(KERAS_MASKED_SCORE, dtype), "mask_drop")
    return call.emit(WHERE, [mask, zero, low])


def _read(call, dense, name) -> np.ndarray:
    """A projection's weight, read through ``call.weight`` so the parameters made from it train as in Keras."""
    path = f"{dense.name}/{name}"
    return call.weight(path) if call.has_weight(path) else np.asarray(getattr(dense, name))


def _project(call, x, dense, hint):
    """EinsumDense ``(C, N, D)`` (+ bias ``(N, D)``) as linear then reshape to ``(..., N, D)``."""
    kernel = _read(call, dense, "kernel")
    channels, heads, depth = kernel.shape
    weight = call.param(kernel.reshape(channels, heads * depth).T, f"{hint}.weight")
    bias = None if dense.bias is None else call.param(_read(call, dense, "bias").reshape(-1), f"{hint}.bias")
    y = call.emit(LINEAR, [x, weight, bias], hint=hint)
    return _reshape(call, y, x.type.shape[:-1] + (heads, depth))


def _to_heads(call, x, attn_axes):
    """``(B, *T, N, D)`` -> ``(B', N, L, D)``; returns it with what ``_from_heads`` needs."""
    rank = x.type.rank
    others = [a for a in range(1, rank - 2) if a not in attn_axes]
    perm = (0, *others, rank - 2, *attn_axes, rank - 1)
    y = _permute(call, x, perm)
    shape = y.type.shape
    lead = int(np.prod(shape[:1 + len(others)]))
    length = int(np.prod(shape[2 + len(others):-1]))
    return _reshape(call, y, (lead, shape[1 + len(others)], length, shape[-1])), (perm, shape)


def _from_heads(call, y, layout):
    """Undo ``_to_heads`` for the attention output (its last axis may differ)."""
    perm, shape = layout
    y = _reshape(call, y, shape[:-1] + (y.type.shape[-1],))
    return _permute(call, y, tuple(int(i) for i in np.argsort(perm)))


def _constant_mask(layer, q_len, s_len, causal):
    """Causal and sliding-window masks as one (q_len, s_len) bool array, or None."""
    mask = np.ones((q_len, s_len), bool)
    if causal:
        mask &= np.tril(mask)
    window = getattr(layer, "_sliding_window", None)
    if window is not None:
        mask &= np.abs(np.arange(q_len)[:, None] - np.arange(s_len)[None, :]) < window
    return None if mask.all() and not causal else mask


def _scores_mask(call, mask, q, k, attn_axes):
    """A Keras attention mask ``(B, *others, *T, *S)`` (maybe lower rank) as an IR mask ``(B', 1, L, S)``."""
    rank = q.type.rank  # projected query rank: B, *T, N, D
    full = rank + len(attn_axes) - 1  # scores: B, *others, N, *T_attn, *S_attn
    while mask.type.rank < full:  # Keras expands at the heads axis
        where = mask.type.rank - 2 * len(attn_axes)
        mask = _reshape(call, mask, mask.type.shape[:where] + (1,) + mask.type.shape[where:])
    others = [q.type.shape[a] for a in range(1, rank - 2) if a not in attn_axes]
    if not others and len(attn_axes) == 1:  # already (B, 1, T, S): broadcasting does the rest
        return mask
    target = (q.type.shape[0], *others, 1, *(q.type.shape[a] for a in attn_axes),
              *(k.type.shape[a] for a in attn_axes))
    if tuple(mask.type.shape) != target:
        mask = call.emit(EXPAND, [mask], {"shape": target})
    lead = int(np.prod(target[:1 + len(others)]))
    q_len = int(np.prod(target[2 + len(others):2 + len(others) + len(attn_axes)]))
    return _reshape(call, mask, (lead, 1, q_len, int(np.prod(target[2 + len(others) + len(attn_axes):]))))


def _check_mha(call, bound):
    if bound.get("return_attention_scores"):
        call.unsupported("MultiHeadAttention with return_attention_scores=True")
    if any(bound.get(name) is not None for name in ("query_mask", "value_mask", "key_mask")):
        call.unsupported("MultiHeadAttention with explicit query_mask/value_mask/key_mask")
    if any(getattr(t, "_keras_mask", None) is not None for t in call.node.arguments.keras_tensors):
        call.unsupported("MultiHeadAttention on inputs carrying a Keras mask (e.g. Embedding(mask_zero=True)); "
                         "pass an explicit attention_mask instead")


@ATTENTION.imports("keras", "MultiHeadAttention")
def _multi_head_attention_from_keras(call):
    layer, bound = call.layer, call.bound  # Note [keras call arguments] (frontends/keras/call_args.py)
    _check_mha(call, bound)
    query, value = bound["query"], bound["value"]
    key = bound.get("key") if bound.get("key") is not None else value
    q = _project(call, query, layer.query_dense, "query")
    k = _project(call, key, layer.key_dense, "key")
    v = _project(call, value, layer.value_dense, "value")
    attn_axes = tuple(a % (q.type.rank - 1) for a in layer.attention_axes)
    fused = q.type.rank == 4 and not layer.dropout  # Keras' ops.dot_product_attention path
    causal = bool(bound.get("use_causal_mask"))
    if (causal or getattr(layer, "_sliding_window", None) is not None) and query.type.rank != 3:
        call.unsupported("use_causal_mask / sliding_window on a query of rank != 3")
    layouts = [_to_heads(call, t, attn_axes) for t in (q, k, v)]
    (qh, q_layout), (kh, _), (vh, _) = layouts
    mask = bound.get("attention_mask")
    if mask is not None and mask.type.dtype != "bool":
        mask = call.emit(CAST, [mask], {"dtype": "bool"})
    fixed = _constant_mask(layer, qh.type.shape[2], kh.type.shape[2], causal)
    only_causal = mask is None and causal and getattr(layer, "_sliding_window", None) is None
    if fixed is not None and not only_causal:
        fixed_v = call.param(fixed[None], "mask_const")
        mask = fixed_v if mask is None else call.emit(BINARY["logical_and"], [mask, fixed_v])
    if mask is not None:
        mask = _scores_mask(call, mask, q, k, attn_axes)
        if fused:
            mask = additive_mask(call, mask, qh.type.dtype)
    scale = 1.0 / math.sqrt(float(layer.key_dim))
    out = call.emit(ATTENTION, [qh, kh, vh, mask], {"is_causal": only_causal, "scale": scale,
                                                   "dropout_p": float(layer.dropout)})  # training only
    out = _from_heads(call, out, q_layout)
    if getattr(layer, "_use_gate", False):
        gate = call.emit(UNARY["sigmoid"], [_project(call, query, layer._gate_dense, "gate")])
        out = call.emit(BINARY["mul"], [out, gate])
    return _output_projection(call, out, layer.output_dense)


def _output_projection(call, x, dense):
    """EinsumDense ``(N, Dv, *out)`` over the last two axes of ``x`` as a reshape + linear (+ reshape)."""
    kernel = _read(call, dense, "kernel")
    heads, depth = kernel.shape[:2]
    out_shape = kernel.shape[2:]
    flat = _reshape(call, x, x.type.shape[:-2] + (heads * depth,))
    weight = call.param(kernel.reshape(heads * depth, -1).T, "attention_output.weight")
    bias = None if dense.bias is None else call.param(_read(call, dense, "bias").reshape(-1),
                                                      "attention_output.bias")
    y = call.emit(LINEAR, [flat, weight, bias], hint="attention_output")
    return _reshape(call, y, x.type.shape[:-2] + tuple(out_shape))


@ATTENTION.imports("keras", "ops.DotProductAttention")
def _dot_product_attention_from_keras(call):
    """keras.ops.dot_product_attention: (B, T, N, H) operands, bool mask or float bias, optional causal."""
    op = call.layer
    bound = call.bound  # Note [keras call arguments]
    if getattr(op, "attn_logits_soft_cap", None) is not None:
        call.unsupported("dot_product_attention with attn_logits_soft_cap")
    q, k, v = (_permute(call, bound[n], (0, 2, 1, 3)) for n in ("query", "key", "value"))
    scale = bound.get("scale")
    scale = 1.0 / math.sqrt(q.type.shape[-1]) if scale is None else float(scale)
    causal = bool(getattr(op, "is_causal", False) or bound.get("is_causal"))
    mask, bias = bound.get("mask"), bound.get("bias")
    if mask is not None:
        mask = mask if mask.type.dtype == "bool" else call.emit(CAST, [mask], {"dtype": "bool"})
        if causal:  # JAX applies both; folding the causal part in keeps one additive mask
            mask = call.emit(BINARY["logical_and"], [mask, call.param(np.tril(np.ones(
                (q.type.shape[2], k.type.shape[2]), bool)), "causal")])
            causal = False
        mask = additive_mask(call, mask, q.type.dtype)
    if bias is not None:
        mask = bias if mask is None else call.emit(BINARY["add"], [bias, mask])
    out = call.emit(ATTENTION, [q, k, v, mask], {"is_causal": causal, "scale": scale})
    return _permute(call, out, (0, 2, 1, 3))
