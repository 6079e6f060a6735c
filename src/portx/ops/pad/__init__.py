"""Padding: constant, reflect, edge (torch "replicate") and wrap (torch "circular"), with negative pads cropping.

This module declares ``pad`` with its shape rule and NumPy reference; the rules live beside it in
``from_torch.py`` (aten::pad and friends, Note [torch pad order]), ``from_keras.py`` (ZeroPadding*D,
Cropping*D), ``to_keras.py`` and ``to_torch.py``. The IR holds one (begin, end) pair per axis, in
axis order. A negative pad crops. Cropping happens before padding, which is what torch does in
every mode (it only matters for "wrap", where the wrapped values come from the cropped tensor).

Example IR:
    %y: float32[1x3x10x11] = pad(%x) {pads=((0, 0), (0, 0), (1, 1), (1, 2)), mode="reflect", value=0.0}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef, SymDim

__all__ = ["PAD", "MODES", "crop_and_pad"]

#: the IR's pad modes (numpy.pad / keras.ops.pad names)
MODES = ("constant", "reflect", "edge", "wrap")

PAD = OpDef("pad", ("x",), {"pads": REQUIRED, "mode": "constant", "value": 0.0}, family="pad",
            doc="numpy.pad with one (begin, end) pair per axis; negative pads crop first.")


def crop_and_pad(pads):
    """Split signed pads into the crop (begin, end) and the non-negative padding.

    Example: ``crop_and_pad(((1, -2),)) == (((0, 2),), ((1, 0),))``.
    """
    crop = tuple((_crop(lo), _crop(hi)) for lo, hi in pads)
    grow = tuple((lo if _grows(lo) else max(lo, 0), hi if _grows(hi) else max(hi, 0)) for lo, hi in pads)
    return crop, grow


def _grows(width) -> bool:
    """A free width (SymDim, ``x.shape[1]``) that is never negative at a size >= 1 pads; another free one raises
    TypeError in ``-width`` (the emitter pins its dim, Note [free dims])."""
    return isinstance(width, SymDim) and width.scale >= 0 and width.scale + width.offset >= 0


def _crop(width):
    return 0 if _grows(width) else max(-width, 0)


@PAD.infer
def _pad_type(x, *, pads, mode, value):
    if len(pads) != x.rank or mode not in MODES:
        raise ValueError(f"pad needs {x.rank} (begin, end) pairs and a mode in {sorted(MODES)}; "
                         f"got {pads!r}, mode {mode!r}")
    crop, grow = crop_and_pad(pads)
    shape = []
    for size, (c0, c1), (g0, g1) in zip(x.shape, crop, grow):
        kept = size - c0 - c1
        limit = {"constant": None, "reflect": kept - 1, "edge": None if kept else 0, "wrap": kept}[mode]
        if kept < 0 or (max(g0, g1) and limit is not None and max(g0, g1) > limit):
            raise ValueError(f"{mode} padding by {(g0, g1)} does not fit an axis of {kept} after cropping")
        shape.append(kept + g0 + g1)
    return x.with_shape(tuple(shape))


@PAD.reference
def _pad_numpy(x, *, pads, mode, value):
    crop, grow = crop_and_pad(pads)
    x = x[tuple(slice(c0, x.shape[i] - c1) for i, (c0, c1) in enumerate(crop))]
    if mode == "constant":
        return np.pad(x, grow, mode="constant", constant_values=np.asarray(value, dtype=x.dtype))
    return np.pad(x, grow, mode=mode)
