"""torch-xla emit rule for embedding: ``nn.Embedding`` for a stored table, ``F.embedding`` otherwise.

Indices keep the graph's integer dtype (int32 after the TPU passes; nn.Embedding takes both).

Example generated code:
    self.wte = nn.Embedding(50257, 768)
    wte = self.wte(ids)
"""
from __future__ import annotations

from ..embedding import EMBEDDING

__all__ = []


@EMBEDDING.emits("torch-xla")
def _embedding_to_torch(node, t):
    table, indices = node.inputs
    if not t.ownable(table):
        t.assign(node, f"F.embedding({t.ref(indices)}, {t.ref(table)})")
        return
    rows, dim = table.type.shape
    t.layer(node, "Embedding", (rows, dim), {}, {"weight": table}, [indices])
