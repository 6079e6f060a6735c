"""Embedding lookup: rows of a (num_embeddings, dim) table picked by integer indices.

This module declares ``embedding`` with its shape rule and NumPy reference; the rules live beside
it in ``from_torch.py``, ``from_keras.py``, ``to_keras.py`` and ``to_torch.py``. The table comes
first, as in ATen, so ``verify.index_limit`` reads its row count and draws test indices inside
the table. ``padding_idx`` only affects gradients, so inference ignores it.

Example IR:
    %h: float32[1x8x32] = embedding(%wte.weight, %ids) {}  # wte
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef
from .._util import kind

__all__ = ["EMBEDDING"]

EMBEDDING = OpDef("embedding", ("table", "indices"), family="embedding",
                  doc="table[indices]: output shape indices.shape + table.shape[1:].")


@EMBEDDING.infer
def _embedding_type(table, indices):
    if table.rank != 2 or kind(indices.dtype) != 1:
        raise ValueError(f"embedding needs a 2-d table and integer indices, got {table} and {indices}")
    return table.with_shape(indices.shape + table.shape[1:])


@EMBEDDING.reference
def _embedding_numpy(table, indices):
    return np.take(table, indices.astype(np.int64), axis=0)
