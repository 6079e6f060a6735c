"""Keras Embedding -> IR ``embedding`` (``ops.take(embeddings, ids, axis=0)``; float ids are cast to int32 first).

``mask_zero=True`` makes Keras attach a mask to the output that later layers (attention, pooling,
RNNs) read implicitly; portx does not carry such masks, so that variant is refused with a hint.
A quantized Embedding (``layer.quantize("int8")``) is traced through Keras' own ``quantized_call``.

Example:
    >>> keras.layers.Embedding(100, 16)(ids)    # -> embedding(%embedding.embeddings, %ids)
"""
from __future__ import annotations

import numpy as np

from .._util import kind
from ..elementwise import CAST
from ..embedding import EMBEDDING

__all__ = []


@EMBEDDING.imports("keras", "Embedding")
def _embedding_from_keras(call):
    if call.layer.mask_zero:
        call.unsupported("Embedding(mask_zero=True) propagates a Keras mask that portx does not convert; "
                         "use mask_zero=False and pass explicit masks (e.g. attention_mask)")
    if getattr(call.layer, "quantization_mode", None):  # Keras' own dequantizing forward, traced
        return call.traced(call.layer.quantized_call, call.inputs[0])
    ids = call.inputs[0]
    if kind(ids.type.dtype) != 1 or ids.type.dtype not in ("int32", "int64"):
        ids = call.emit(CAST, [ids], {"dtype": "int32"})
    if not getattr(call.layer, "lora_enabled", False):
        call.weight("embeddings")  # recorded as read, so that the table counts as trainable when the variable is
    table = call.param(np.asarray(call.layer.embeddings), "embeddings")  # the property merges LoRA
    return call.emit(EMBEDDING, [table, ids])
