"""Where a node of a repeated block reads a free dim: from a value the block already has, not the model's input.

Note [a block reads its own batch]: a free dim is read at run time from the model input where it was found
(``EmitterBase.site``: ``x.shape[0]``). Inside a repeated block that made the model input an argument of every
block's ``forward`` (torchvision's ViT encoder layer reshaped its attention with ``x_1.shape[0]``, ``x_1`` the
image, EfficientNet's squeeze-excite likewise), which a person would read from the block's own input. A node of a
block (the innermost of ``graph.meta["blocks"]`` that holds it; a block of a kind of its own too: it may join
another kind by its optional parts, EfficientNet's ``block1a`` without an expand conv, Note [optional parts] in
optional_parts.py) reads the dim from the first value the block reads from before it (its hidden state first, in the
order its nodes read them) that has the dim itself at an axis (scale 1, no offset, undivided); only where none has
it, from the model input. Both values hold the same size at run time (the free-dims pass gave them the same symbol),
so the code computes the same.

Example:
    >>> block_site(emitter, "batch")   # emitting a node of encoder_layer_0: (its input x, 0)
"""
from __future__ import annotations

from ..ir import SymDim

__all__ = ["block_site"]


def block_site(emitter, symbol):
    """(Value, axis) where the node being written (``emitter.at``, its index) reads ``symbol`` inside its
    block (Note [a block reads its own batch]); None outside blocks or where no value of the block has it."""
    at, blocks = getattr(emitter, "at", None), emitter.graph.meta.get("blocks") or []
    inside = [b for b in blocks if at is not None and b["start"] <= at < b["stop"]]
    if not inside:
        return None
    block = min(inside, key=lambda b: b["stop"] - b["start"])
    nodes = emitter.graph.nodes[block["start"]:at + 1]
    made = {v for node in emitter.graph.nodes[block["start"]:block["stop"]] for v in node.outputs}
    for value in (v for node in nodes for v in node.inputs):
        if value is None or value in made or value not in emitter.names or emitter.graph.is_param(value):
            continue
        for axis, dim in enumerate(emitter.graph.free_shape(value)):
            if isinstance(dim, SymDim) and dim.symbol == symbol and (dim.scale, dim.offset, dim.div) == (1, 0, 1):
                return value, axis
    return None
