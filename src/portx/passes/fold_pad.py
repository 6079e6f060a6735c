"""A zero pad read only by a convolution becomes the convolution's own padding (the torch-xla pipeline).

Note [a pad folded into its convolution]: a torch convolution with ``padding=1`` and ``stride=2`` comes back from
Keras as ``ZeroPadding2D(1)`` and a ``"valid"`` ``Conv2D`` (Keras' ``"same"`` pads a stride-2 convolution
unevenly), so the torch code written from that Keras model read ``F.pad(x, (1, 1, 1, 1))`` and
``nn.Conv2d(..., stride=2)`` where the source had ``nn.Conv2d(..., stride=2, padding=1)``; a ResNet stage's first
block then differed from the others by that statement and could not share their class (Note [optional submodules]
in targets/torch_xla/optional.py). Zeros padded before a convolution are the same numbers as the convolution's
own zero padding, so the pad joins the convolution's ``pads`` where only the convolution reads it, it pads only
spatial axes, by whole non-negative widths, and the sum is even on each axis (``nn.Conv2d(padding=p)``; an
uneven one the emitter writes as a pad again).

Before / after::

    %p: float32[1x16x10x10] = pad(%x) {pads=((0, 0), (0, 0), (1, 1), (1, 1))}
    %y = conv(%p, %w) {stride=(2, 2), pads=((0, 0), (0, 0))}
                ->
    %y = conv(%x, %w) {stride=(2, 2), pads=((1, 1), (1, 1))}
"""
from __future__ import annotations

from ..ir import Graph
from ..ops.conv import CONV
from ..ops.pad import PAD

__all__ = ["fold_pad_into_conv"]


def fold_pad_into_conv(graph: Graph) -> Graph:
    """Each zero pad only a convolution reads, folded into its padding (Note [a pad folded into its convolution]).

    Example: ``fold_pad_into_conv(graph)``: ``conv(pad(x))`` -> ``conv(x)`` with the pad's widths in ``pads``."""
    users = graph.users()
    producer = {v: node for node in graph.nodes for v in node.outputs}
    replaced, dropped = {}, set()
    for node in graph.nodes:
        pad = producer.get(node.inputs[0]) if node.op is CONV else None
        pads = _spatial(pad, node) if pad is not None and pad.op is PAD else None
        if pads is None or len(users.get(pad.outputs[0], [])) != 1 or pad.outputs[0] in graph.outputs:
            continue
        joined = tuple((lo + a, hi + b) for (lo, hi), (a, b) in zip(node.attrs["pads"], pads))
        if any(lo != hi for lo, hi in joined):
            continue
        replaced[node] = node.replace(inputs=(pad.inputs[0],) + tuple(node.inputs[1:]),
                                      attrs={**node.attrs, "pads": joined})
        dropped.add(pad)
    if not replaced:
        return graph
    return graph.replace(nodes=tuple(replaced.get(n, n) for n in graph.nodes if n not in dropped))


def _spatial(pad, conv):
    """The (begin, end) widths ``pad`` adds on ``conv``'s spatial axes, where it pads zeros there only; else None."""
    attrs, rank = pad.attrs, len(pad.attrs["pads"])
    if attrs["mode"] != "constant" or attrs["value"] != 0 or rank != len(conv.attrs["pads"]) + 2:
        return None
    spatial = range(1, rank - 1) if conv.attrs.get("channels_last", False) else range(2, rank)
    widths = attrs["pads"]
    if any(not isinstance(w, int) or isinstance(w, bool) or w < 0 for pair in widths for w in pair):
        return None
    if any(widths[i] != (0, 0) for i in range(rank) if i not in spatial):
        return None
    return tuple(tuple(widths[i]) for i in spatial)
