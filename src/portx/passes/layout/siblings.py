"""Sibling blocks kept alike by the permute sinking (Note [sibling blocks in one layout]).

Note [sibling blocks in one layout]: the zoo's ConvNeXt runs ``x + y.permute(0, 3, 1, 2)`` at the end of each of its
two ``ConvNeXtBlock`` stages (Note [sibling blocks] in passes/blocks_siblings.py). Sinking permutes (Note [physical
layouts] in sink.py) for torch-xla ran stage1's add in NHWC (its input ``x`` was the stem's LayerNorm2d output,
stored NHWC, and the permute back cancelled against the downsampling LayerNorm2d's) and stage2's in NCHW (its input
a convolution's): two permutes fewer, and two blocks of one source class that no longer share a class. Where the
sinking leaves sibling blocks that were alike before it unlike, it is run again with the nodes that make their
outputs in logical order (``Sinker``'s ``keep``), so that each block hands on its value as the source does; that
result is kept when the blocks are then alike and it has no more permutes than the graph before sinking, the
guarantee of ``sink_permutes``. A graph with no sibling blocks, or whose sibling blocks stay alike, is unchanged.
"""
from __future__ import annotations

from ..blocks import block_of, record_blocks
from ..blocks_siblings import sibling_keys
from .sink import count_permutes

__all__ = ["alike_siblings"]


def _kinds(graph) -> tuple:
    """(graph as ``record_blocks`` orders it, {sibling block key: (kind, start, stop)})."""
    recorded = record_blocks(graph)
    return recorded, {b["key"]: (b["kind"], b["start"], b["stop"]) for b in recorded.meta["blocks"]
                      if b.get("sibling")}


def _unlike(before, after) -> list:
    """The keys of sibling blocks of one kind in ``before`` whose kinds differ in ``after``."""
    kinds = {}
    for key, (kind, _, _) in before.items():
        kinds.setdefault(kind, []).append(key)
    return [key for keys in kinds.values() if len(keys) > 1 and len({after.get(k, (k,))[0] for k in keys}) > 1
            for key in keys]


def alike_siblings(graph, best, keep, sunk, limit) -> tuple:
    """(best, keep): ``sink_permutes``' result, or one with the outputs of unlike sibling blocks kept in logical
    order (Note [sibling blocks in one layout]). ``sunk(graph, keep)``: the sinking; ``limit``: the permutes the
    graph had before it."""
    if not sibling_keys(graph, block_of):  # a cheap first look: no candidate, no sibling block
        return best, keep
    recorded, before = _kinds(graph)
    unlike = _unlike(before, _kinds(best)[1])
    if not unlike:
        return best, keep
    users = recorded.users()
    ends = set()
    for key in unlike:
        _, start, stop = before[key]
        inside = set(recorded.nodes[start:stop])
        ends |= {n for n in inside if any(u not in inside for v in n.outputs for u in users.get(v, []))}
    trial = sunk(graph, keep | frozenset(ends))
    if count_permutes(trial) <= limit and not _unlike(before, _kinds(trial)[1]):
        return trial, keep | frozenset(ends)
    return best, keep
