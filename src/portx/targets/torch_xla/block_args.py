"""What a block class's ``forward`` takes: the hidden state as ``x``, and no constant of the block's own.

Note [a block's own constants]: a constant a block alone reads (a keras-hub layer's ``1.0`` that its positions
count from, one per block) is registered by the emitter as a buffer of ``Model`` named after the value
(``self.scalar_2``, ``self.scalar_9``), so the class for the block read it as a ``forward`` argument, one buffer per
block, and the blocks differed in what they passed. ``own_constants`` names such a buffer (written inline, so it
holds no weights: ``state_dict()`` is unchanged) after the block (``transformer_layer_0_scalar``): the class then
registers it itself, as a person keeps a constant inside the module that uses it. A buffer that a line outside
the block reads too (rotary tables every layer shares) stays the model's.

Note [forward's arguments]: the argument the blocks of a class differ in is what flows from block to block (the
previous block's output); it is named ``x``, as in ``forward(self, padding_mask, x)``. The other arguments keep the
names of what every block reads (a model input, a mask built once). Without exactly one such argument, the first
is ``x``. The arguments stay in the order the block first reads them: verification calls a block's module with
its segment's inputs in that order (targets/forward_cut.py, ``_module_cut``).

Example:
    >>> own_constants(emitter)           # self.scalar_2 -> self.transformer_layer_0_scalar, inside block 0
    >>> hidden_input([body0, body1])     # inputs [padding_mask, hidden]: the second is x
    1
"""
from __future__ import annotations

import re

from ..structure import block_lines, ident

__all__ = ["own_constants", "is_own_buffer", "named_child", "hidden_input"]

_NUMBERED = re.compile(r"_\d+$")  # scalar_2 -> scalar
_INLINE_BUFFER = re.compile(r"^self\.register_buffer\('(\w+)', torch\.tensor\(.*\), persistent=False\)$")


def own_constants(emitter) -> None:
    """Rename each inline buffer that one block alone reads to the block's name (Note [a block's own constants]);
    rewrites ``emitter.init`` and ``emitter.body`` rows in place."""
    init, body = emitter.init.rows, emitter.body.rows
    for block in emitter.graph.meta.get("blocks") or []:
        if any(emitter.spans.get(i) is None for i in range(block["start"], block["stop"])):
            continue
        prefix, (i0, i1), (b0, b1) = ident(block["key"]), block_lines(emitter.spans, block, 1), \
            block_lines(emitter.spans, block, 0)
        for line in range(i0, i1):
            found = _INLINE_BUFFER.match(init[line][1])
            if not found or found.group(1).startswith(prefix + "_"):
                continue
            old = re.compile(rf"\bself\.{found.group(1)}\b")
            if any(old.search(text) for j, (_, text, _) in enumerate(body) if not b0 <= j < b1) or \
                    any(old.search(text) for _, text, _ in init):
                continue
            new = emitter.attrs.name(f"{prefix}_{_NUMBERED.sub('', found.group(1))}", "buffer")
            indent, text, comment = init[line]
            init[line] = (indent, text.replace(repr(found.group(1)), repr(new), 1), comment)
            for j in range(b0, b1):
                body[j] = (body[j][0], old.sub(f"self.{new}", body[j][1]), body[j][2])


def is_own_buffer(parts) -> bool:
    """True for a block's statement (its ``pieces``) that registers a buffer under the block's own name: a constant
    ``own_constants`` renamed, or a weight held in model.safetensors (a Keras ``LayerScale``'s gamma); the class
    registers it, and its state_dict key follows (``stage.0.layer_scale_gamma``)."""
    return len(parts) > 1 and parts[0] == ("t", "self.register_buffer(") and parts[1][0] == "s"


def named_child(key) -> bool:
    """True for a block that is a named child of a module (torchvision's ViT: ``encoder.layers.encoder_layer_0``,
    passes/blocks.py Note [outermost block]). Such blocks stay flat on torch-xla: a numbered container would move
    their state_dict keys off the source's (``layers.encoder.0`` for ``layers.encoder_layer_0``); a named one
    (``nn.Sequential(OrderedDict(...))``) is not written yet."""
    head, _, last = key.rpartition(".")
    return bool(head) and not last.isdigit()


def hidden_input(bodies) -> int:
    """The position of the input the blocks differ in, named ``x`` (Note [forward's arguments]); 0 without exactly
    one. Example: inputs [mask, h0] and [mask, h1] -> 1."""
    count = len(bodies[0].inputs)
    varying = [p for p in range(count) if len({body.inputs[p] for body in bodies}) > 1]
    return varying[0] if len(varying) == 1 else 0
