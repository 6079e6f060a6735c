"""ONNX import rule for Pad (constant, reflect, edge, wrap; negative pads crop).

The ``pads`` input lists all begins then all ends, over every axis or over ``axes`` (opset 18+).

Example:
    Pad(%x, pads=[0, 0, 1, 1, 0, 0, 1, 1]) {mode="reflect"} -> pad(%x) {pads=((0, 0), (0, 0), (1, 1), (1, 1)), ...}
"""
from __future__ import annotations

import numpy as np

from .._util import norm_axes
from ..pad import PAD

__all__ = []


@PAD.imports("onnx", "Pad")
def _pad_from_onnx(call):
    x = call.input(0)
    flat = call.ints(1, "pads")
    rank = x.type.rank
    axes = norm_axes(call.ints(3, "axes"), rank) if call.has_input(3) else tuple(range(rank))
    if len(flat) != 2 * len(axes):
        call.unsupported(f"pads {flat} do not give a (begin, end) pair for each of axes {axes}")
    pairs = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        pairs[axis] = (flat[i], flat[i + len(axes)])
    if all(p == (0, 0) for p in pairs):
        return x
    value = call.constant(2) if call.has_input(2) else None
    if call.has_input(2) and value is None:
        call.unsupported("a constant_value computed from data")
    value = 0.0 if value is None or np.asarray(value).size == 0 else np.asarray(value).reshape(-1)[0].item()
    mode = call.attr("mode", "constant")
    return call.emit(PAD, [x], {"pads": tuple(pairs), "mode": mode, "value": value})
