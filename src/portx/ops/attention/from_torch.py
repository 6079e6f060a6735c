"""ATen import rule for attention: ``aten::scaled_dot_product_attention`` with its options as attributes.

The IR op has SDPA's meaning, so the rule only settles the defaults: ``scale`` None becomes
``1 / sqrt(E)``. ``dropout_p`` is kept as the op's training-only dropout (a program exported in eval mode
has 0 there: modules pass ``dropout_p`` only while training).

Example:
    F.scaled_dot_product_attention(q, k, v, is_causal=True) -> attention(%q, %k, %v, _) {is_causal=True, scale=0.125}
"""
from __future__ import annotations

import math

from ..attention import ATTENTION

__all__ = []


@ATTENTION.imports("torch", "aten::scaled_dot_product_attention")
def _attention_from_aten(call):
    q, mask = call.arg("query"), call.arg("attn_mask")
    if mask is not None and call.arg("is_causal", False):
        call.unsupported("attn_mask together with is_causal=True (torch rejects it too)")
    scale = call.arg("scale")
    attrs = {"is_causal": bool(call.arg("is_causal", False)), "enable_gqa": bool(call.arg("enable_gqa", False)),
             "dropout_p": float(call.arg("dropout_p", 0.0) or 0.0),
             "scale": float(scale) if scale is not None else 1.0 / math.sqrt(q.type.shape[-1])}
    return call.emit(ATTENTION, [q, call.arg("key"), call.arg("value"), mask], attrs)
