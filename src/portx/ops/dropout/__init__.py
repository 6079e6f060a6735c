"""Dropout: random zeroing while training, the identity at inference (what verification compares).

Kept in the graph by default so that the converted model trains like the source
(``layers.Dropout`` / ``nn.Dropout``); ``--inference`` removes it (``passes/fold.drop_dropout``).
``axes`` lists the axes along which one mask value is shared: ``()`` drops elements, a feature
dropout of an NCHW tensor (``nn.Dropout2d``, ``SpatialDropout2D``) shares it along ``(2, 3)``.

Example IR:
    %y: float32[8x64] = dropout(%x) {rate=0.1, axes=()}
"""
from __future__ import annotations

from ...ir import REQUIRED, OpDef

__all__ = ["DROPOUT"]

DROPOUT = OpDef("dropout", ("x",), {"rate": REQUIRED, "axes": ()}, family="dropout", layout="axes",
                doc="training-time dropout with rate ``rate`` (mask shared along ``axes``); the identity at inference")


@DROPOUT.infer
def _dropout_type(x, *, rate, axes):
    if not 0.0 <= float(rate) <= 1.0:  # 1 is valid in both frameworks: all zeros while training
        raise ValueError(f"dropout rate {rate} is outside [0, 1]")
    if any(not -x.rank <= a < x.rank for a in axes):
        raise ValueError(f"dropout axes {axes} out of range for rank {x.rank}")
    return x


@DROPOUT.reference
def _dropout_numpy(x, *, rate, axes):
    return x
