"""Keras import rule for the Softmax layer.

One axis is the IR ``softmax``; several axes are ``exp(x - logsumexp(x, axes))``, as
keras.activations computes them. A Softmax called with a mask is refused.

Example:
    Softmax(axis=-1) on (1, 4, 10) -> softmax {axis=2};  Softmax(axis=(1, 2)) -> exp(sub(%x, logsumexp(%x)))
"""
from __future__ import annotations

from ..elementwise import BINARY
from ..elementwise.unary import UNARY
from ..reduce import REDUCE, SOFTMAX

__all__ = []


@SOFTMAX.imports("keras", "Softmax")
def _softmax_from_keras(call):
    """Softmax(axis); several axes as exp(x - logsumexp(x, axes))."""
    if call.kwargs.get("mask") is not None:
        call.unsupported("Softmax with a mask")
    x = call.inputs[0]
    axes = call.layer.axis if isinstance(call.layer.axis, (list, tuple)) else [call.layer.axis]
    axes = tuple(sorted(int(a) % x.type.rank for a in axes))
    if len(axes) == 1:
        return call.emit(SOFTMAX, [x], {"axis": axes[0]})
    total = call.emit(REDUCE["logsumexp"], [x], {"axes": axes, "keepdims": True})
    return call.emit(UNARY["exp"], [call.emit(BINARY["sub"], [x, total])])
