"""torch-xla emit rule for pad: ``F.pad`` in every mode torch can express, index gathers elsewhere.

Negative pads crop first (a slice), as in the IR (pad/__init__.py); ``F.pad`` takes its pads last
axis first (Note [torch pad order] in from_torch.py). Torch's reflect / replicate / circular modes
pad the last 1-3 axes of a tensor with one or two leading axes; any other layout of a non-constant
pad is one ``index_select`` per padded axis with a constant index table (``numpy.pad`` of
``arange``), which is exact and static.

Example generated code:
    pad = F.pad(x, (1, 1, 2, 2), mode="reflect")
"""
from __future__ import annotations

import numpy as np

from ..pad import PAD, crop_and_pad
from ..shape.to_torch import subscript

__all__ = []

_TORCH_MODES = {"reflect": "reflect", "edge": "replicate", "wrap": "circular"}


def _torch_axes(rank, grow):
    """How many trailing axes F.pad must be given for a non-constant mode, or None when it cannot pad these."""
    padded = [i for i, g in enumerate(grow) if any(g)]
    for count in (rank - 2, rank - 1):  # torch pads the last n axes of an (n+1)- or (n+2)-d tensor
        if 1 <= count <= 3 and rank - count <= padded[0]:
            return count
    return None


@PAD.emits("torch-xla")
def _pad_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    crop, grow = crop_and_pad(a["pads"])
    src = t.ref(x)
    if any(c0 or c1 for c0, c1 in crop):
        items = [f"{c0 or ''}:{x.type.shape[i] - c1 if c1 else ''}" if c0 or c1 else ":"
                 for i, (c0, c1) in enumerate(crop)]
        src = t.temp(node, src + subscript(items), "cropped")
    if not any(g0 or g1 for g0, g1 in grow):
        t.assign(node, src)
        return
    if a["mode"] == "constant":
        value = f", value={t.lit(float(a['value']))}" if a["value"] else ""
        t.assign(node, f"F.pad({src}, {t.lit(t.torch_pads(grow))}{value})")
        return
    count = _torch_axes(len(grow), grow)
    if count is not None and (x.type.dtype != "bool" or a["mode"] == "wrap"):  # no bool reflect/replicate
        flat = tuple(int(p) for pair in reversed(grow[len(grow) - count:]) for p in pair)
        t.assign(node, f"F.pad({src}, {t.lit(flat)}, mode={t.lit(_TORCH_MODES[a['mode']])})")
        return
    shape = [size - c0 - c1 for size, (c0, c1) in zip(x.type.shape, crop)]
    for axis, (g0, g1) in enumerate(grow):
        if g0 or g1:
            table = np.pad(np.arange(shape[axis]), (g0, g1), mode=a["mode"]).astype(np.int32)
            src = f"{src}.index_select({axis}, {t.const(node, table, f'pad_axis{axis}')})"
    t.assign(node, src)
