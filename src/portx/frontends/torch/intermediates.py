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
from ...weights.tensors import array_of

__all__ = ["source_intermediates", "stream_intermediates"]


def source_intermediates(src, arrays, keep=None, release=None) -> dict:
    """IR value name -> the source's own intermediate (torch), for the values torch computes one-to-one.

    Takes the program's lowering to learn which IR value each fx node became, then runs the same fx
    graph with torch.fx.Interpreter, recording every node's output (only the IR names in ``keep``, when given:
    the rest is freed as the run goes). ``release(state_dict key, tensor)`` is called after a weight's last use.
    Example: ``source_intermediates(src, arrays)["conv2d"].shape``.
    """
    found = {}
    for name, array in stream_intermediates(src, arrays, keep, release)[1]:
        found.setdefault(name, array)
    return found


def stream_intermediates(src, arrays, keep=None, release=None) -> tuple:
    """(the IR value names the source makes, an iterator of (name, value) in the order the run makes them): the
    run of ``source_intermediates`` one node at a time, going on only as far as it is asked (Note [one read per
    block] in verification/streaming.py). Example: ``names, run = stream_intermediates(src, arrays)``."""
    ep, low = src.walk(src.program)  # the walk ``lower`` made (Note [one walk per program])
    names = {fx.name: value.name for fx, value in low.env.items() if hasattr(value, "type")}
    wanted = {fx for fx, name in names.items() if keep is None or name in keep}
    return {names[fx] for fx in wanted}, _run(src, ep, arrays, {fx: names[fx] for fx in wanted}, release)


def _run(src, ep, arrays, wanted, release):
    """Yield (IR name, value) of the ``wanted`` fx nodes as torch.fx.Interpreter's loop (``Interpreter.run``,
    one node at a time) makes them; each weight is released after its last reader."""
    state, users = state_of(ep), set(ep.graph_signature.user_inputs)
    feed = iter(src.torch_inputs(arrays))
    args = [next(feed) if node.name in users else state[node.name][1]
            for node in ep.graph.nodes if node.op == "placeholder"]
    done = _last_uses(ep, state) if release is not None else {}
    run = torch.fx.Interpreter(ep.graph_module)
    run.env, run.args_iter = {}, iter(args)
    for node in ep.graph.nodes:
        with torch.no_grad():  # not around the yield: the caller runs with its own grad mode
            result = run.env[node] = run.run_node(node)
        for dead in run.user_to_last_uses.get(node, ()) if run.garbage_collect_values else ():
            del run.env[dead]
        for key, tensor in done.get(node.name, ()):
            release(key, tensor)
        if node.name in wanted and isinstance(result, torch.Tensor):
            yield wanted[node.name], array_of(result)


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
