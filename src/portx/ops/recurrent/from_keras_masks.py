"""Keras masks as explicit IR tensors (Note [recurrent masks]): ``Masking`` and what ``Embedding(mask_zero=True)``
attaches, bound with ``call.bind_mask`` so that an LSTM / GRU / SimpleRNN / RNN after them reads the mask as its
``mask`` input. ``Masking(v)`` keeps a time step where any feature differs from ``v`` and zeroes the others:
``mask = any(x != v, -1)``, ``y = x * mask[..., None]``. (Embedding's ``ids != 0`` is in embedding/from_keras.py.)

Example:
    >>> keras.layers.Masking(0.0)(x)
    # -> %ne = ne(%x, %mask_value); %keep = any(%ne) {axes=(2,), keepdims=True}; %y = mul(%x, cast(%keep))
    #    mask: any(%ne) {axes=(2,), keepdims=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY, CAST
from ..reduce import REDUCE

__all__ = []


@imports("keras", "Masking")
def _masking_from_keras(call):
    x = call.inputs[0]
    value = call.const(np.asarray(call.layer.mask_value, dtype=x.type.dtype), "mask_value")
    differs = call.emit(BINARY["ne"], [x, value])
    keep = call.emit(REDUCE["any"], [differs], {"axes": (x.type.rank - 1,), "keepdims": True})
    y = call.emit(BINARY["mul"], [x, call.emit(CAST, [keep], {"dtype": x.type.dtype})])
    call.bind_mask(call.emit(REDUCE["any"], [differs], {"axes": (x.type.rank - 1,), "keepdims": False}))
    return y
