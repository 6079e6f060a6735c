"""ONNX import rule for Attention (opset 23+): 4-D (batch, heads, seq, head_dim) Q, K and V, an optional
mask, ``is_causal`` and ``scale``; a KV cache (past_key/past_value) is concatenated in front of K and V,
which are the present_key/present_value outputs (``is_causal`` then shifts the causal mask by the cache
length, written as an explicit mask). Refused: softcap, local windows, the qk output, nonpad_kv_seqlen.

3-D inputs (heads folded into the last axis, ``q_num_heads``/``kv_num_heads``) are split into heads first
and merged after. Fewer K/V heads than Q heads is grouped-query attention (``enable_gqa``).

Example:
    Attention(%q, %k, %v) {is_causal=1} -> attention(%q, %k, %v, _) {is_causal=True, scale=0.125}
"""
from __future__ import annotations

import math

import numpy as np

from ..attention import ATTENTION
from ..elementwise import BINARY, WHERE
from ..shape import CONCAT, PERMUTE, RESHAPE

__all__ = []


def _heads(call, x, heads):
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hd = x.type.shape
    y = call.emit(RESHAPE, [x], {"shape": (b, s, heads, hd // heads)})
    return call.emit(PERMUTE, [y], {"perm": (0, 2, 1, 3)})


def _refused(call) -> str:
    """Why this Attention node has no IR form, or ''."""
    if call.has_input(6) or call.output_read(3):
        return "nonpad_kv_seqlen or the qk_matmul_output output"
    if call.attr("softcap", 0.0) or call.attr("left_window_size", -1) != -1 or call.attr("right_window_size", -1) != -1:
        return "softcap or a local attention window"
    return ""


def _cached(call, value, index):
    """K or V with the cache (input ``index``) in front along the sequence axis: the present_* output."""
    if not call.has_input(index):
        return value
    return call.emit(CONCAT, [call.input(index), value], {"axis": 2})


def _offset_causal(call, mask, queries, keys):
    """With a cache the causal mask shifts right by its length: query i sees keys j <= i + past."""
    keep = call.const(np.tril(np.ones((queries, keys), bool), keys - queries), "causal")
    if mask is None:
        return keep
    if mask.type.dtype == "bool":
        return call.emit(BINARY["logical_and"], [mask, keep])
    return call.emit(WHERE, [keep, mask, call.const(np.asarray(-np.inf, dtype=mask.type.dtype), "neg_inf")])


@ATTENTION.imports("onnx", "Attention")
def _attention_from_onnx(call):
    why = _refused(call)
    if why:
        call.unsupported(why)
    q, k, v, mask = call.input(0), call.input(1), call.input(2), call.input(3)
    folded = q.type.rank == 3
    if folded:
        q_heads, kv_heads = int(call.attr("q_num_heads")), int(call.attr("kv_num_heads"))
        q, k, v = _heads(call, q, q_heads), _heads(call, k, kv_heads), _heads(call, v, kv_heads)
    k, v = _cached(call, k, 4), _cached(call, v, 5)
    if mask is not None and mask.type.dtype != "bool" and mask.type.dtype != q.type.dtype:
        call.unsupported(f"a mask of dtype {mask.type.dtype}")
    causal = bool(call.attr("is_causal", 0))
    if causal and call.has_input(4):
        mask, causal = _offset_causal(call, mask, q.type.shape[-2], k.type.shape[-2]), False
    scale = call.attr("scale") or 1.0 / math.sqrt(q.type.shape[-1])
    y = call.emit(ATTENTION, [q, k, v, mask], {"is_causal": causal, "scale": float(scale),
                                              "enable_gqa": k.type.shape[1] != q.type.shape[1]})
    if folded:
        b, h, s, d = y.type.shape
        y = call.emit(RESHAPE, [call.emit(PERMUTE, [y], {"perm": (0, 2, 1, 3)})], {"shape": (b, s, h * d)})
    return [y, k, v]
