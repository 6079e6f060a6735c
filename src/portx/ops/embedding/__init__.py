"""Embedding lookup: rows of a (num_embeddings, dim) table picked by integer indices.

The table comes first, as in ATen, so ``verify.index_limit`` reads its row count and draws test
indices inside the table. ``padding_idx`` only affects gradients, so inference ignores it. A
stored table becomes a Keras ``Embedding`` layer; a table shared with ``F.linear`` (tied GPT
weights) is simply written into both layers.

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


@EMBEDDING.emits("keras-jax")
def _embedding_to_keras(node, k):
    table, indices = node.inputs
    if not k.is_param(table):
        k.assign(node, f"ops.take({k.ref(table)}, {k.ref(indices)}, axis=0)")
        return
    rows, dim = table.type.shape
    kwargs = {"input_dim": int(rows), "output_dim": int(dim)}
    if table.type.dtype != "float32":
        kwargs["dtype"] = table.type.dtype  # keep the table's precision instead of the float32 default
    k.layer(node, "Embedding", kwargs, [indices], [k.param(table)])


@EMBEDDING.imports("torch", "aten::embedding")
def _embedding_from_aten(call):
    return call.emit(EMBEDDING, [call.arg("weight"), call.arg("indices")])
