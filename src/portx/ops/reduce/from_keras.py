"""Keras import rule for the Softmax layer.

One axis is the IR ``softmax``; several axes are ``exp(x - logsumexp(x, axes))``, as
keras.activations computes them. With a mask, masked scores become -1e9 first and masked outputs 0 after
(a fully masked row gives zeros), as Keras does.

Example:
    Softmax(axis=-1) on (1, 4, 10) -> softmax {axis=2};  Softmax(axis=(1, 2)) -> exp(sub(%x, logsumexp(%x)))
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY, WHERE
from ..elementwise.unary import UNARY
from ..reduce import REDUCE, SOFTMAX

__all__ = []


@SOFTMAX.imports("keras", "Softmax")
def _softmax_from_keras(call):
    """Softmax(axis); several axes as exp(x - logsumexp(x, axes))."""
    x, mask = call.arg("inputs"), call.arg("mask")
    if mask is not None:
        if mask.type.dtype != "bool":
            mask = call.emit(BINARY["gt"], [mask, call.param(np.asarray(0.5, mask.type.dtype), "half")])
        low = -3e4 if x.type.dtype == "float16" else -1e9  # keras.layers.Softmax's _large_negative_number
        x = call.emit(WHERE, [mask, x, call.param(np.asarray(low, x.type.dtype), "masked")])
    axes = call.layer.axis if isinstance(call.layer.axis, (list, tuple)) else [call.layer.axis]
    axes = tuple(sorted(int(a) % x.type.rank for a in axes))
    if len(axes) == 1:
        y = call.emit(SOFTMAX, [x], {"axis": axes[0]})
    else:
        total = call.emit(REDUCE["logsumexp"], [x], {"axes": axes, "keepdims": True})
        y = call.emit(UNARY["exp"], [call.emit(BINARY["sub"], [x, total])])
    return y if mask is None else call.emit(WHERE, [mask, y, call.param(np.zeros((), y.type.dtype), "zero")])
