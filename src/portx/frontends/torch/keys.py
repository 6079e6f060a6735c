"""The source's state_dict keys as ``graph.meta`` records them for the torch-xla target (Note [the source's keys] in
targets/torch_xla/key_order.py): every key in the source's order, the keys of one tied tensor, the buffers read.

Example:
    >>> source_keys(ep, graph_params)["source_keys"][:2]
    ['tok.weight', 'pos.weight']
"""
from __future__ import annotations

__all__ = ["source_keys"]


def source_keys(ep, params) -> dict:
    """``graph.meta``'s ``source_keys`` (the source's state_dict keys, in its order) and ``tied`` ({param: every key
    of that one tensor, in the source's order}, for a parameter the source holds under several keys) and
    ``source_buffers`` (the buffers the graph reads as they are; Note [the source's keys] in
    targets/torch_xla/key_order.py)."""
    kept = {s.target for s in ep.graph_signature.input_specs if s.kind.name == "BUFFER" and s.persistent}
    keys = _in_module_order([k for k in ep.state_dict if k not in kept], [k for k in ep.state_dict if k in kept])
    by_tensor = {}
    for key in keys:
        by_tensor.setdefault(id(ep.state_dict[key]), []).append(key)
    tied = {k: group for group in by_tensor.values() if len(group) > 1 for k in group if k in params}
    buffers = [s.target for s in ep.graph_signature.input_specs if s.kind.name == "BUFFER" and s.target in params]
    return {"source_keys": keys, **({"tied": tied} if tied else {}), **({"source_buffers": buffers} if buffers else {})}


def _in_module_order(keys, buffers) -> list:
    """``keys`` (parameters, as ``ep.state_dict`` lists them before every buffer) with each buffer where the source's
    ``state_dict()`` has it: after its module's own parameters, before its module's children."""
    for buffer in buffers:
        module = buffer.rpartition(".")[0]
        own = [i for i, k in enumerate(keys) if k.rpartition(".")[0] == module]
        inside = [i for i, k in enumerate(keys) if not module or k.startswith(module + ".")]
        keys.insert(own[-1] + 1 if own else inside[0] if inside else len(keys), buffer)
    return keys
