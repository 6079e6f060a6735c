"""Which converted weight is which source weight, for the gradient check: paired by identity, never by name.

Note [gradient pairing]: a converted weight and a source weight are the same parameter when both come from the
same IR parameter. The source side is recorded by the frontend: ``graph.meta["param_sources"]`` maps an IR
parameter to the source's own name of the weight it holds (a Keras variable path, ``conv_1/kernel``); without an
entry the IR name is the source's name (a torch ``state_dict`` key). The converted side is recorded by the
emitter: ``origins`` maps each layer (Keras) or state key (torch) it writes to the trainable IR parameters its
weights came from; within one layer, a variable holding exactly the numbers of one of them (re-arranged: a
kernel is a weight transposed) is that one, else the one of its size. A pass's copy of a parameter
(``w.t0231``) is the parameter (``Graph.trainable_root``).

Names were compared before (``conv.weight``, ``conv/kernel`` and ``conv_1`` sanitised to one key): layers whose
names differ only after sanitising (``Conv`` and ``conv``, ``c-o-n-v`` and ``c_o_n_v``, NUL, U+2028) paired the
wrong tensors, and the check failed a model whose weights were all in their right layers.

Example:
    >>> pairs = parameter_pairs(graph, emitted["origins"], converted_weights(Differentiable(model, target.framework)))
    >>> pairs["conv_1/kernel"]      # converted name -> the source's
    'conv/kernel'
"""
from __future__ import annotations

import re

import numpy as np

from ..frontends.base import KERAS, Differentiable

__all__ = ["parameter_pairs", "converted_weights"]


def converted_weights(converted: Differentiable) -> dict:
    """{name: array-like} of the trainable weights of a converted Keras model (variable paths) or torch module
    (``named_parameters``), the names the gradient check reports."""
    if converted.framework == KERAS:
        return {v.path: v.value for v in converted.model.trainable_variables}  # no copy: read only where sizes tie
    return {name: p.detach() for name, p in converted.model.named_parameters() if p.requires_grad}


def _owners(name: str) -> list:
    """The layer or state keys a converted weight ``name`` may belong to, the most specific first:
    ``"block/conv/kernel"`` -> the full name, ``block/conv``, ``block``, then ``conv`` (a nested model's layer)."""
    parts = re.split(r"[/.]", name)
    keys = [name] + ["/".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]
    keys += [".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]
    return keys + parts[-2::-1]


def _numbers(array) -> np.ndarray:
    """The sorted values of a NumPy, JAX or torch array as float64 (bfloat16 included)."""
    if hasattr(array, "detach"):  # torch: NumPy has no bfloat16
        array = array.float().cpu().numpy()
    return np.sort(np.asarray(array, dtype=np.float64), axis=None)


def _origin(graph, candidates, array, taken):
    """The IR parameter among ``candidates`` that the converted ``array`` holds (see the Note), or None."""
    free = [c for c in candidates if c not in taken and c in graph.params]
    size = int(np.prod(tuple(array.shape)))
    same = [c for c in free if graph.params[c].size == size]
    if len(same) > 1:
        numbers = _numbers(array)
        exact = [c for c in same if np.array_equal(_numbers(graph.params[c]), numbers)]
        same = exact + [c for c in same if c not in exact]
    return same[0] if same else None


def parameter_pairs(graph, origins, weights) -> dict:
    """{converted weight name: source weight name} for each converted trainable weight whose origin is known
    (Note [gradient pairing]); ``weights`` is ``converted_weights(model)``, ``origins`` the emitter's."""
    sources = graph.meta.get("param_sources", {})
    taken, pairs = {}, {}
    for name, array in weights.items():
        owner = next((key for key in _owners(name) if key in origins), None)
        if owner is None:
            continue
        used = taken.setdefault(owner, set())
        origin = _origin(graph, origins[owner], array, used)
        root = graph.trainable_root(origin) if origin is not None else None
        if root is not None:
            used.add(origin)
            pairs[name] = sources.get(root, root)
    return pairs
