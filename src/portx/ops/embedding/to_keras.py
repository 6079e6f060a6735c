"""Keras emit rule for embedding: an ``Embedding`` layer for a stored table, ``ops.take`` otherwise.

A table shared with ``F.linear`` (tied GPT weights) is simply written into both layers. A table
that is not float32 keeps its dtype on the layer instead of Keras's float32 default.

Example generated code:
    wte = layers.Embedding(50257, 768, name='wte')(ids)
"""
from __future__ import annotations

from ..embedding import EMBEDDING

__all__ = []


@EMBEDDING.emits("keras-jax")
def _embedding_to_keras(node, k):
    table, indices = node.inputs
    if not k.ownable(table) or indices not in k.live:  # constant indices (positions): a layer would run eagerly
        k.assign(node, f"ops.take({k.ref(table)}, {k.ref(indices)}, axis=0)")
        return
    rows, dim = table.type.shape
    kwargs = {"input_dim": int(rows), "output_dim": int(dim)}
    if table.type.dtype != "float32":
        kwargs["dtype"] = table.type.dtype  # keep the table's precision instead of the float32 default
    k.layer(node, "Embedding", kwargs, [indices], [k.param(table)])
