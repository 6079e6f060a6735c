"""Where each weight an emitter writes came from: the trainable IR parameters of the node whose rule wrote it.

The gradient check pairs a converted weight with the source's through them (Note [gradient pairing] in
verification/grad_pairs.py). An emitter keeps what it writes in a dict named by its ``HELD`` attribute (Keras:
``weights``, layer name -> arrays; torch: ``state``, state_dict key -> array); the keys a node's rule added are
that node's, so every rule is covered without recording anything itself.

Example:
    >>> held = len(emitter.weights)
    >>> rule(node, emitter)
    >>> record_origins(emitter, node, held)       # emitter.origins["conv_1"] == ["conv.weight", "conv.bias"]
"""
from __future__ import annotations

import itertools

__all__ = ["trained_params", "record_origins"]


def trained_params(graph, node) -> list:
    """The names of the trainable params ``node`` reads (a pass's copy of one included)."""
    return [v.name for v in node.inputs if graph.is_param(v) and graph.is_trainable(v.name)]


def record_origins(emitter, node, held: int) -> None:
    """``emitter.origins[key]`` for each key its ``HELD`` dict gained past its first ``held`` entries (the ones
    ``node``'s rule wrote); dicts keep insertion order, so only the new keys are visited."""
    store = getattr(emitter, emitter.HELD)
    for key in itertools.islice(reversed(store), len(store) - held):
        emitter.origins[key] = trained_params(emitter.graph, node)
