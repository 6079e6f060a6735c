"""Whether a program's recorded types are its own: torch recomputes a node from its inputs' records.

Note [recorded types]: the torch frontend checks each import rule's output type against the type torch recorded
for the node (``node.meta["val"]``); a difference is a portx bug (IRError, exit 70). A ``.pt2`` archive stores
those records as JSON (model.json's ``tensor_values``), so an edited or damaged archive can record a type that its
own program does not compute (``add`` recorded as (2454, 3) where its inputs are (2, 3)). Before calling a
difference a bug, the frontend asks torch to compute the node again, on meta tensors of its inputs' recorded types:
where torch disagrees with the record of that node or of one before it (``first_stale``: a rule may take its
output type from the record, so the first wrong record can sit upstream), the archive is at fault (BadInput).

Example:
    >>> recomputed(node)        # torch's output types now, or None when it cannot say
    [((2, 3), torch.float32)]
"""
from __future__ import annotations

import torch

__all__ = ["recomputed", "recorded", "describe", "first_stale"]


def _meta(arg):
    """A meta tensor of an fx node's recorded type (shapes must be concrete); other arguments as they are."""
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        if isinstance(val, torch.Tensor):
            return torch.empty(tuple(int(d) for d in val.shape), dtype=val.dtype, device="meta")
        return val
    return arg


def _types(result) -> list:
    outs = result if isinstance(result, (list, tuple)) else [result]
    return [(tuple(int(d) for d in o.shape), o.dtype) if isinstance(o, torch.Tensor) else None for o in outs]


def recorded(node) -> list:
    """The (shape, dtype) torch recorded for each output of ``node`` (None for a non-tensor)."""
    return _types(node.meta.get("val"))


def recomputed(node):
    """The (shape, dtype) of each output torch computes now for ``node`` from its inputs' recorded types, or None
    when it cannot (a symbolic size, an op that refuses meta tensors, a higher-order op)."""
    try:
        args = torch.fx.node.map_aggregate(node.args, _meta)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, _meta)
        return _types(node.target(*args, **kwargs))
    except Exception:  # noqa: BLE001 - torch cannot say: the difference stays portx's (IRError)
        return None


def describe(types) -> str:
    """``float32 (2, 3)`` for each output, comma-separated (``-`` for a non-tensor)."""
    return ", ".join(f"{str(t[1]).replace('torch.', '')} {t[0]}" if t else "-" for t in types)


def first_stale(node):
    """(fx node, its record, torch's types now) for the first call up to ``node`` whose record torch disagrees
    with, or None when every record there is torch's own."""
    for earlier in node.graph.nodes:
        if earlier.op == "call_function":
            again = recomputed(earlier)
            if again is not None and again != recorded(earlier):
                return earlier, recorded(earlier), again
        if earlier is node:
            return None
    return None
