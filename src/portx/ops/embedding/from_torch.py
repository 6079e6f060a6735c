"""Torch import rule for aten::embedding: the table and the indices pass through unchanged.

``padding_idx``, ``scale_grad_by_freq`` and ``sparse`` only affect gradients, so they are not read.

Example:
    aten::embedding(wte.weight, ids) -> embedding(%wte.weight, %ids)
"""
from __future__ import annotations

from ..embedding import EMBEDDING

__all__ = []


@EMBEDDING.imports("torch", "aten::embedding")
def _embedding_from_aten(call):
    return call.emit(EMBEDDING, [call.arg("weight"), call.arg("indices")])
