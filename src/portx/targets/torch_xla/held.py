"""Source modules whose parameters no plain ``nn.Linear`` holds under the source's keys: ``nn.MultiheadAttention``
keeps its packed input projection as ``attn.in_proj_weight`` / ``attn.in_proj_bias`` beside ``attn.out_proj``.

Note [held parameters]: the emitter writes one ``nn.Linear`` per projection, named after its weight's module
(``attn`` for ``attn.in_proj_weight``), so a converted ViT's keys were ``attn.weight`` and ``attn_out_proj.weight``
where the source's are ``attn.in_proj_weight`` and ``attn.out_proj.weight``, and the source's ``state_dict()`` did
not load into it. Where the source module is an ``nn.MultiheadAttention`` (``graph.meta["module_classes"]``) whose
two projections the graph reads whole, each by ``linear`` nodes only (self-attention: the packed ``in_proj_weight``;
no ``bias_k``, no separate ``q_proj_weight``), the emitter declares that module itself, as a person would, and
``forward`` reads its parameters: ``F.linear(h, self.attn.in_proj_weight, self.attn.in_proj_bias)`` and
``self.attn.out_proj(o)``. ``forward`` still writes the attention out (the head split, SDPA, the merge) rather
than calling ``self.attn(h, h, h)``: the layout pass may have moved the head split's permutes across the module's
boundary, so its own call would not fit the code around it. Anything else (cross-attention's sliced weights, a
projection a pass folded) keeps the plain ``nn.Linear``.

Example:
    >>> held = mha_holders(graph)
    >>> held["blocks.0.attn.in_proj_weight"]
    HeldWeight(path='blocks.0.attn', role='in', embed_dim=16, num_heads=2, bias=True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ops.attention import ATTENTION
from ...ops.linear import LINEAR

__all__ = ["HeldWeight", "mha_holders", "held_layer", "MHA_KEYS"]

#: nn.MultiheadAttention's parameters (bias=True) in the order its state_dict lists them
MHA_KEYS = ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")


@dataclass(frozen=True)
class HeldWeight:
    """A linear weight an ``nn.MultiheadAttention`` at ``path`` holds: its input (``in``) or output (``out``)
    projection."""

    path: str
    role: str
    embed_dim: int
    num_heads: int
    bias: bool


def _readers(graph) -> dict:
    """{param name: [(node, input slot)]}."""
    found = {}
    for node in graph.nodes:
        for slot, value in enumerate(node.inputs):
            if graph.is_param(value):
                found.setdefault(value.name, []).append((node, slot))
    return found


def _heads(graph, path, embed_dim) -> int:
    """The number of heads of the attention inside ``path`` (the model width over q's depth), or 0."""
    depths = {node.inputs[0].type.shape[-1] for node in graph.nodes
              if node.op is ATTENTION and (node.scope == path or node.scope.startswith(path + "."))}
    depth = depths.pop() if len(depths) == 1 else 0
    return embed_dim // depth if depth and embed_dim % depth == 0 else 0


def _read_as_linear(readers, weight, bias) -> bool:
    """True when every reader of ``weight`` (and ``bias``) is a linear node reading the pair in its weight and bias
    slots, and there is one at least."""
    uses = readers.get(weight, [])
    if not uses or any(node.op is not LINEAR or slot != 1 for node, slot in uses):
        return False
    for node, _ in uses:
        read = node.inputs[2] if len(node.inputs) > 2 else None
        if (read.name if read is not None else None) != bias:
            return False
    return bias is None or all(node.op is LINEAR and slot == 2 for node, slot in readers.get(bias, []))


def mha_holders(graph) -> dict:
    """{param name: HeldWeight} for each ``nn.MultiheadAttention`` whose parameters the emitted module declares
    itself (Note [held parameters])."""
    readers, found = _readers(graph), {}
    for path, cls in (graph.meta.get("module_classes") or {}).items():
        if cls != "MultiheadAttention":
            continue
        keys = [f"{path}.{key}" for key in MHA_KEYS]
        bias = keys[1] in graph.params
        if keys[0] not in graph.params or keys[2] not in graph.params or bias != (keys[3] in graph.params):
            continue
        own = {name for name in graph.params if name.startswith(path + ".")}
        if own != set(keys if bias else keys[::2]):  # bias_k / bias_v, q_proj_weight, a pass's copy
            continue
        weight = graph.params[keys[0]]
        embed_dim = weight.shape[1] if weight.ndim == 2 and weight.shape[0] == 3 * weight.shape[1] else 0
        heads = _heads(graph, path, embed_dim)
        if not (heads and _read_as_linear(readers, keys[0], keys[1] if bias else None)
                and _read_as_linear(readers, keys[2], keys[3] if bias else None)):
            continue
        for key, role in zip(keys, ("in", "in", "out", "out")):
            if key in graph.params:
                found[key] = HeldWeight(path, role, int(embed_dim), heads, bias)
    return found


def held_layer(t, node, weights, inputs) -> tuple | None:
    """For a linear whose weight an ``nn.MultiheadAttention`` holds (``t.held``): (the call's expression on that
    module's parameters, a variable hint, the module's attribute, the submodule it calls or None), declaring the module the first time and
    storing the weights; None for any other layer."""
    weight = (weights or {}).get("weight")
    held = t.held.get(weight.name) if hasattr(weight, "type") and len(inputs) == 1 else None
    if held is None:
        return None
    attr = t.holders.get(held.path)
    if attr is None:
        attr = t.holders[held.path] = t.attrs.name(held.path, "attn")
        t.paths[attr] = held.path
        dtype = str(t.param(weight).dtype)
        extra = ("" if held.bias else ", bias=False") + ("" if dtype == "float32" else f", dtype={t.dtype(dtype)}")
        t.init.line(f"self.{attr} = nn.MultiheadAttention({held.embed_dim}, {held.num_heads}{extra})",
                    "its weights; forward() writes its computation out")
    keys = MHA_KEYS[:2] if held.role == "in" else MHA_KEYS[2:]
    for key in keys[: 2 if held.bias else 1]:
        t.state[f"{attr}.{key}"] = np.asarray(t.graph.params[f"{held.path}.{key}"])
    x = t.ref(inputs[0])
    if held.role == "in":
        bias = f", self.{attr}.in_proj_bias" if held.bias else ""
        return f"F.linear({x}, self.{attr}.in_proj_weight{bias})", f"{attr}_in_proj", attr, None
    return f"self.{attr}.out_proj({x})", f"{attr}_out_proj", attr, f"{attr}.out_proj"
