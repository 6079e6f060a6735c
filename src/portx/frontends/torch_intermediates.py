"""A torch source's own intermediate values, keyed by the IR value each fx node became.

Verification compares every emitted intermediate with the IR's NumPy reference and, where the source
computes the same value one-to-one, with the source's own number (``portx verify --trace``).

Example:
    >>> found = source_intermediates(load_torch_source("model.pt2"), arrays)
    >>> found["conv2d"].shape
    (1, 16, 16, 16)
"""
from __future__ import annotations

import torch

from .torch import state_of, walk_program
from .torch_arrays import array_of

__all__ = ["source_intermediates"]


def source_intermediates(src, arrays) -> dict:
    """IR value name -> the source's own intermediate (torch), for the values torch computes one-to-one.

    Lowers the program again to learn which IR value each fx node became, then runs the same fx
    graph with torch.fx.Interpreter, recording every node's output.
    Example: ``source_intermediates(src, arrays)["conv2d"].shape``.
    """
    ep, low = walk_program(src.program)
    state, users = state_of(ep), set(ep.graph_signature.user_inputs)
    feed = iter(src.torch_inputs(arrays))
    args = [next(feed) if node.name in users else state[node.name][1]
            for node in ep.graph.nodes if node.op == "placeholder"]
    seen = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            seen[n.name] = result = super().run_node(n)
            return result

    with torch.no_grad():
        Recorder(ep.graph_module).run(*args)
    found = {}
    for fx, value in low.env.items():
        out = seen.get(fx.name)
        if hasattr(value, "type") and isinstance(out, torch.Tensor):
            found.setdefault(value.name, array_of(out, keep_bfloat16=True))
    return found
