"""Keras import rule for ``keras.ops.pad`` (constant, reflect, edge and wrap modes).

Example:
    ops.pad(x, ((0, 0), (1, 2)), mode="reflect") -> pad {pads=((0, 0), (1, 2)), mode=reflect}
"""
from __future__ import annotations

import numpy as np

from ..pad import PAD

__all__ = []


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@PAD.imports("keras", "ops.Pad")
def _pad_from_keras(call):
    x, mode = call.inputs[0], call.layer.mode
    if mode not in _PAD_MODES:
        call.unsupported(f"pad mode {mode!r} (supported: {', '.join(_PAD_MODES)})")
    pads = np.broadcast_to(np.asarray(call.layer.pad_width, dtype=np.int64), (x.type.rank, 2))
    value = call.arg("constant_values") or 0.0
    if hasattr(value, "type"):
        call.unsupported("pad with a tensor constant_values")
    return call.emit(PAD, [x], {"pads": tuple((int(a), int(b)) for a, b in pads), "mode": _PAD_MODES[mode],
                                "value": float(value)})
