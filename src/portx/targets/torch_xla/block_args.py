"""What a block class's ``forward`` takes: the hidden state first, as ``x``, and no constant of the block's own.

Note [a block's own constants]: a constant a block alone reads (a keras-hub layer's ``1.0`` that its positions
count from, one per block) is registered by the emitter as a buffer of ``Model`` named after the value
(``self.scalar_2``, ``self.scalar_9``), so the class for the block read it as a ``forward`` argument, one buffer per
block, and the blocks differed in what they passed. ``own_constants`` names such a buffer (written inline, so it
holds no weights: ``state_dict()`` is unchanged) after the block (``transformer_layer_0_scalar``): the class then
registers it itself, as a person keeps a constant inside the module that uses it. A buffer that a line outside
the block reads too (rotary tables every layer shares) stays the model's.

Note [forward's arguments]: the argument the blocks of a class differ in is what flows from block to block (the
previous block's output); it is named ``x`` and comes first, as a person writes ``forward(self, x, padding_mask)``
(as keras-jax's block functions take it: ``_input_order`` in keras_jax/blocks.py). A class of one block
has nothing to compare: its one input that is neither a model input nor the model's attribute is ``x``. Without
exactly one such argument, ``x`` is the input made last before the block (``hidden``, Note [a cell's two inputs] in
targets/cell_inputs.py; NASNet's cells read two), else the first read. The others keep the names of what every
block reads (a model input, a mask built once), in the order the block first reads them. The emitter keeps, per block, the IR values
it wrote ``forward``'s arguments for, in order (``TorchEmitter.block_inputs``, ``forward_values``), and the
block-rows cutter calls the class with those (targets/forward_cut.py, ``_module_cut``): it reads the emitter's
decision, it does not make it again (a segment's inputs are in graph order, not the order the code reads them:
the model input read for a size can come before the hidden state).

Example:
    >>> own_constants(emitter)                       # self.scalar_2 -> self.transformer_layer_0_scalar
    >>> forward_order([body0, body1], {"token_ids"}) # inputs [padding_mask, hidden]: forward(self, x, padding_mask)
    [1, 0]
"""
from __future__ import annotations

import re

from ..structure import block_lines, ident

__all__ = ["own_constants", "is_own_buffer", "named_child", "forward_order", "forward_values"]

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
    passes/blocks.py Note [outermost block]): held by name, never by number (Note [named block containers] in
    containers.py)."""
    head, _, last = key.rpartition(".")
    return bool(head) and not last.isdigit()


def forward_order(bodies, model_inputs=frozenset(), hidden=None) -> list:
    """The positions (in first-use order) of the inputs a class's ``forward`` takes, in turn: the hidden state
    first (Note [forward's arguments]). ``model_inputs``: the variables of the model's inputs. Example: inputs
    [mask, h0] and [mask, h1] -> [1, 0]."""
    count = len(bodies[0].inputs)
    varying = [p for p in range(count) if len({body.inputs[p] for body in bodies}) > 1]
    if len(bodies) == 1:
        varying = [p for p, v in enumerate(bodies[0].inputs) if v not in model_inputs and not v.startswith("self.")]
    hidden = varying[0] if len(varying) == 1 else hidden if hidden is not None else 0
    return [hidden] + [p for p in range(count) if p != hidden]


def forward_values(emitter, body, order) -> list | None:
    """The IR values block ``body`` (an Instance) passes its class's ``forward`` in turn (Note [forward's
    arguments]): each input variable, in ``order``, as the value of that name the block's nodes read or a graph
    input; None where one has no such value (a model attribute, ``self.cos``)."""
    block = next(b for b in emitter.graph.meta["blocks"] if b["key"] == body.key)
    nodes = emitter.graph.nodes[block["start"]:block["stop"]]
    made = {v for node in nodes for v in node.outputs}
    found = {}
    for value in [v for node in nodes for v in node.inputs if v is not None and v not in made] + \
            list(emitter.graph.inputs):
        found.setdefault(emitter.names.get(value), value)
    values = [found.get(body.inputs[i]) for i in order]
    return None if None in values else values
