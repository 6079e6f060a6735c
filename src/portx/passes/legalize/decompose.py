"""Decompositions both targets need, written once as IR rewrites (Note [decompositions]).

Note [decompositions]: an algorithm that each target would otherwise write in its own dialect (a reversed
running op as flip, scan, flip) is one node rule here, applied to every graph by both pipelines before the op
tables' rules, so the emitters see only the plain form and never write it twice. Unlike a table rule it does
not depend on the target: the decomposition is what the op means, not what a TPU accepts.

Example (before / after)::

    %y: float32[2x6] = cumsum(%x) {axis=1, reverse=True}
        ->
    %y_flip = flip(%x) {axes=(1,)}; %y_scan = cumsum(%y_flip) {axis=1}; %y = flip(%y_scan) {axes=(1,)}
"""
from __future__ import annotations

from ...ops.reduce import CUMSUM
from ...ops.shape.index import FLIP
from ...ops.sort import SCANS
__all__ = ["DECOMPOSITIONS", "decomposition", "reverse_scan_as_flips"]

#: op name -> the decompositions offered its nodes, in order
DECOMPOSITIONS: dict = {}


def decomposition(*ops):
    """Register a node rule (``rule(node, rw) -> bool``, as the table rules of ``rewriter.py``) for ``ops``."""
    def register(fn):
        fn.ops = ops
        for op in ops:
            DECOMPOSITIONS.setdefault(op.name, []).append(fn)
        return fn
    return register


@decomposition(CUMSUM, *SCANS.values())
def reverse_scan_as_flips(node, rw) -> bool:
    """A running op from the end of its axis: the same op on the flipped axis, flipped back.

    Before / after::

        %y: float32[2x6] = cummax(%x) {axis=1, reverse=True}
            ->
        %y_flip = flip(%x) {axes=(1,)}; %y_scan = cummax(%y_flip) {axis=1}; %y = flip(%y_scan) {axes=(1,)}
    """
    if not node.attrs["reverse"]:
        return False
    axes = (node.attrs["axis"],)
    flipped = rw.emit(FLIP, [node.inputs[0]], {"axes": axes}, hint="flip")
    scanned = rw.emit(node.op, [flipped], {**node.attrs, "reverse": False}, hint="scan")
    rw.result(rw.emit(FLIP, [scanned], {"axes": axes}, hint="back"))
    return True
