"""Keras Embedding -> IR ``embedding`` (``ops.take(embeddings, ids, axis=0)``; float ids are cast to int32 first).

``mask_zero=True`` makes Keras attach a mask to the output that later layers read implicitly: portx binds it as
the IR tensor ``ids != 0`` (``call.bind_mask``), which the recurrent layers read (Note [recurrent masks]); any
other layer reading it is refused by the frontend.
A quantized Embedding (``layer.quantize("int8")``) is traced through Keras' own ``quantized_call``.

Example:
    >>> keras.layers.Embedding(100, 16)(ids)    # -> embedding(%embedding.embeddings, %ids)
"""
from __future__ import annotations

import numpy as np

from .._util import kind
from ..elementwise import BINARY, CAST
from ..embedding import EMBEDDING

__all__ = []


@EMBEDDING.imports("keras", "Embedding")
def _embedding_from_keras(call):
    if call.layer.mask_zero:
        zero = call.const(np.asarray(0, dtype=call.inputs[0].type.dtype), "zero")
        call.bind_mask(call.emit(BINARY["ne"], [call.inputs[0], zero]))
    if getattr(call.layer, "quantization_mode", None):  # Keras' own dequantizing forward, traced
        return call.traced(call.layer.quantized_call, call.inputs[0])
    ids = call.inputs[0]
    if kind(ids.type.dtype) != 1 or ids.type.dtype not in ("int32", "int64"):
        ids = call.emit(CAST, [ids], {"dtype": "int32"})
    if not getattr(call.layer, "lora_enabled", False):
        call.weight("embeddings")  # recorded as read, so that the table counts as trainable when the variable is
    table = call.param(np.asarray(call.layer.embeddings), "embeddings")  # the property merges LoRA
    return call.emit(EMBEDDING, [table, ids])
