"""Source modules whose parameters no plain ``nn.Linear`` holds under the source's keys: ``nn.MultiheadAttention``
keeps its packed input projection as ``attn.in_proj_weight`` / ``attn.in_proj_bias`` beside ``attn.out_proj``.

Note [held parameters]: the emitter writes one ``nn.Linear`` per projection, named after its weight's module
(``attn`` for ``attn.in_proj_weight``), so a converted ViT's keys were ``attn.weight`` and ``attn_out_proj.weight``
where the source's are ``attn.in_proj_weight`` and ``attn.out_proj.weight``, and the source's ``state_dict()`` did
not load into it. Where the source module is an ``nn.MultiheadAttention`` (``graph.meta["module_classes"]``) and the
graph holds exactly its parameters (packed ``in_proj_weight`` or, with ``kdim``/``vdim``, ``q_proj_weight``,
``k_proj_weight``, ``v_proj_weight``; the biases, ``bias_k``/``bias_v`` with ``add_bias_kv``, ``out_proj``; nothing
a pass derived from them), the emitter declares that module itself, with the source's constructor arguments, as a
person would, and ``forward`` reads its parameters wherever the graph does: ``F.linear(h, self.attn.in_proj_weight,
self.attn.in_proj_bias)``, ``torch.split(self.attn.in_proj_weight, [8, 16])`` (cross-attention's query and key-value
slices), ``self.attn.bias_k``, and ``self.attn.out_proj(o)``. ``forward`` still writes the attention out (the head
split, SDPA, the merge) rather than calling ``self.attn(q, k, v)``: the layout pass may have moved the head split's
permutes across the module's boundary, so its own call would not fit the code around it; the layout pass leaves the
output projection a ``linear`` (passes/layout/rules.py, ``_in_attention_module``), so that ``out_proj`` holds its
weights as they are. A module whose parameters a pass copied or folded keeps the plain ``nn.Linear`` and
``nn.Parameter`` at the source's paths.

Example:
    >>> held = mha_holders(graph)
    >>> held["blocks.0.attn.in_proj_weight"]
    HeldWeight(path='blocks.0.attn', key='in_proj_weight', arguments='16, 2')
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ops.attention import ATTENTION

__all__ = ["HeldWeight", "mha_holders", "held_layer", "held_param"]

#: nn.MultiheadAttention's own parameters: packed or (kdim/vdim) separate projections, then the rest
_PACKED = ("in_proj_weight",)
_SEPARATE = ("q_proj_weight", "k_proj_weight", "v_proj_weight")
_REST = ("in_proj_bias", "bias_k", "bias_v", "out_proj.weight", "out_proj.bias")


@dataclass(frozen=True)
class HeldWeight:
    """A parameter of the ``nn.MultiheadAttention`` at ``path``: its key there, and the module's constructor
    arguments (``"8, 2, kdim=6, vdim=4"``)."""

    path: str
    key: str
    arguments: str


def _heads(graph, path, embed_dim) -> int:
    """The number of heads of the attention inside ``path`` (the model width over q's depth), or 0."""
    depths = {node.inputs[0].type.shape[-1] for node in graph.nodes
              if node.op is ATTENTION and (node.scope == path or node.scope.startswith(path + "."))}
    depth = depths.pop() if len(depths) == 1 else 0
    return embed_dim // depth if depth and embed_dim % depth == 0 else 0


def _arguments(graph, path, own) -> str:
    """``nn.MultiheadAttention``'s constructor arguments for the parameters ``own`` (their keys under ``path``), or
    "" where they are not exactly one configuration's."""
    params = graph.params
    out = params.get(f"{path}.out_proj.weight")
    embed = out.shape[0] if out is not None and out.ndim == 2 and out.shape[0] == out.shape[1] else 0
    packed = "in_proj_weight" in own
    heads = _heads(graph, path, embed)
    if not heads:
        return ""
    bias, bias_kv = "in_proj_bias" in own, "bias_k" in own
    want = (_PACKED if packed else _SEPARATE) + tuple(k for k in _REST if (k != "in_proj_bias" or bias)
                                                       and (k != "out_proj.bias" or bias)
                                                       and (k not in ("bias_k", "bias_v") or bias_kv))
    if set(own) != set(want):
        return ""
    if packed and params[f"{path}.in_proj_weight"].shape != (3 * embed, embed):
        return ""
    dims = {} if packed else {k[0] + "dim": params[f"{path}.{k}"].shape[1] for k in _SEPARATE[1:]}
    if not packed and (params[f"{path}.q_proj_weight"].shape != (embed, embed) or dims == {"kdim": embed,
                                                                                          "vdim": embed}):
        return ""  # equal dims make torch pack the projections: not a configuration a source has
    dtype = str(out.dtype)
    extra = {"bias": False} if not bias else {}
    extra.update({"add_bias_kv": True} if bias_kv else {}, **dims)
    text = f"{embed}, {heads}" + "".join(f", {k}={v}" for k, v in extra.items())
    return text + ("" if dtype == "float32" else f", dtype=torch.{dtype}")


def mha_holders(graph) -> dict:
    """{param name: HeldWeight} for each ``nn.MultiheadAttention`` whose parameters the emitted module declares
    itself (Note [held parameters])."""
    found = {}
    for path, cls in (graph.meta.get("module_classes") or {}).items():
        if cls != "MultiheadAttention":
            continue
        own = [name[len(path) + 1:] for name in graph.params if name.startswith(path + ".")]
        arguments = _arguments(graph, path, own) if set(own) <= set(_PACKED + _SEPARATE + _REST) else ""
        for key in own if arguments else ():
            found[f"{path}.{key}"] = HeldWeight(path, key, arguments)
    return found


def _holder(t, held) -> str:
    """The attribute of the ``nn.MultiheadAttention`` declared for ``held.path``; declared the first time."""
    attr = t.holders.get(held.path)
    if attr is None:
        attr = t.holders[held.path] = t.attrs.name(held.path, "attn")
        t.paths[attr] = held.path
        t.init.line(f"self.{attr} = nn.MultiheadAttention({held.arguments})",
                    "its weights; forward() writes its computation out")
    return attr


def held_param(t, name) -> str | None:
    """``self.attn.in_proj_weight`` for a parameter an ``nn.MultiheadAttention`` holds (``t.held``), its array put in
    the state under that key; None for any other."""
    held = t.held.get(name)
    if held is None:
        return None
    attr = _holder(t, held)
    t.state[f"{attr}.{held.key}"] = np.asarray(t.graph.params[name])
    return f"self.{attr}.{held.key}"


def held_layer(t, node, weights, inputs) -> tuple | None:
    """For a linear whose weight an ``nn.MultiheadAttention`` holds (``t.held``): (the call's expression on that
    module's parameters, a variable hint, the module's attribute, the submodule it calls or None); None for any
    other layer. The output projection with its own bias is a call of ``out_proj``; any other an ``F.linear``."""
    weight, bias = (weights or {}).get("weight"), (weights or {}).get("bias")
    held = t.held.get(weight.name) if hasattr(weight, "type") and len(inputs) == 1 else None
    if held is None:
        return None
    attr, x = _holder(t, held), t.ref(inputs[0])
    expr = t.ref(weight) + (f", {t.ref(bias)}" if bias is not None else "")  # the arrays stored (held_param)
    if held.key == "out_proj.weight" and _own_bias(t, held, bias):
        return f"self.{attr}.out_proj({x})", f"{attr}_out_proj", attr, f"{attr}.out_proj"
    name = held.key[:-len("_weight")] if held.key.endswith("_weight") else held.key
    return f"F.linear({x}, {expr})", f"{attr}_{name}", attr, None


def _own_bias(t, held, bias) -> bool:
    """True when ``bias`` is ``out_proj``'s own (or it has none and the module none)."""
    key = f"{held.path}.out_proj.bias"
    return (bias is None and key not in t.graph.params) or (bias is not None and bias.name == key)
