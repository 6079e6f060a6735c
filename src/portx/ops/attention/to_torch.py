"""torch-xla emit rule for attention: ``F.scaled_dot_product_attention`` with the IR's options.

The IR op has SDPA's exact meaning (including Note [fully masked rows], which torch's math path
implements with its safe softmax), so the call carries only what differs from SDPA's defaults.

Example generated code:
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    attn = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0)
"""
from __future__ import annotations

import math

from ..attention import ATTENTION, inverse_perm

__all__ = []


@ATTENTION.emits("torch-xla")
def _attention_to_torch(node, t):
    q, k, v, mask = (list(node.inputs) + [None])[:4]
    a = node.attrs
    layout = a.get("layout")  # Note [attention layout] in __init__.py
    into = "" if layout is None else f".permute{inverse_perm(layout)}"
    args = [f"{t.ref(v)}{into}" for v in (q, k, v)]
    if mask is not None:
        args.append(f"attn_mask={t.ref(mask)}")
    if a["is_causal"]:
        args.append("is_causal=True")
    if float(a["scale"]) != 1.0 / math.sqrt(q.type.shape[-1]):
        args.append(f"scale={t.lit(float(a['scale']))}")
    if a.get("dropout_p"):  # training only, as nn.MultiheadAttention does
        args.append(f"dropout_p={t.lit(float(a['dropout_p']))} if self.training else 0.0")
    heads = -3 if layout is None else layout.index(1)  # the stored axis of the logical heads (B, H, L, E)
    if a["enable_gqa"] and q.type.rank > 2 and q.type.shape[heads] != k.type.shape[heads]:
        args.append("enable_gqa=True")
    out = f"F.scaled_dot_product_attention({', '.join(args)})"
    t.assign(node, out if layout is None else f"{out}.permute{tuple(layout)}")
