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

from . import state_of
from .arrays import array_of

__all__ = ["source_intermediates"]


def source_intermediates(src, arrays, keep=None, release=None) -> dict:
    """IR value name -> the source's own intermediate (torch), for the values torch computes one-to-one.

    Takes the program's lowering to learn which IR value each fx node became, then runs the same fx
    graph with torch.fx.Interpreter, recording every node's output (only the IR names in ``keep``, when given:
    the rest is freed as the run goes). ``release(state_dict key, tensor)`` is called after a weight's last use.
    Example: ``source_intermediates(src, arrays)["conv2d"].shape``.
    """
    ep, low = src.walk(src.program)  # the walk ``lower`` made (Note [one walk per program])
    state, users = state_of(ep), set(ep.graph_signature.user_inputs)
    feed = iter(src.torch_inputs(arrays))
    args = [next(feed) if node.name in users else state[node.name][1]
            for node in ep.graph.nodes if node.op == "placeholder"]
    names = {fx.name: value.name for fx, value in low.env.items() if hasattr(value, "type")}
    wanted = {fx for fx, name in names.items() if keep is None or name in keep}
    done = _last_uses(ep, state) if release is not None else {}
    seen = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if n.name in wanted:
                seen[n.name] = result
            for key, tensor in done.get(n.name, ()):
                release(key, tensor)
            return result

    with torch.no_grad():
        Recorder(ep.graph_module).run(*args)
    found = {}
    for fx, out in seen.items():
        if isinstance(out, torch.Tensor):
            found.setdefault(names[fx], array_of(out, keep_bfloat16=True))
    return found


def _last_uses(ep, state) -> dict:
    """{fx node name: [(state_dict key, tensor) of the weights whose last reader it is]}."""
    last = {}
    for node in ep.graph.nodes:
        for arg in node.all_input_nodes:
            if arg.op == "placeholder" and arg.name in state:
                last[arg.name] = node.name
    result = {}
    for placeholder, node in last.items():
        result.setdefault(node, []).append(state[placeholder])
    return result
