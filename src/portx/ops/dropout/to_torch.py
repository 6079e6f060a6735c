"""torch-xla emit rule for dropout: ``nn.Dropout``, ``nn.Dropout1d/2d/3d`` for a mask shared along
every axis after the channels, else ``F.dropout`` of a ones tensor of the mask's shape, in training only
(``x * F.dropout(...) if self.training else x``: at inference x itself, as ``nn.Dropout`` returns it).

Example generated code:
    self.drop = nn.Dropout(0.1)
    drop = self.drop(fc)
"""
from __future__ import annotations

from ..dropout import DROPOUT

__all__ = []


@DROPOUT.emits("torch-xla")
def _dropout_to_torch(node, t):
    x = node.inputs[0]
    rank, rate = x.type.rank, float(node.attrs["rate"])
    axes = tuple(sorted(a % rank for a in node.attrs["axes"]))
    if not axes:
        t.layer(node, "Dropout", (rate,), {}, None, [x])
    elif axes == tuple(range(2, rank)) and 3 <= rank <= 5:
        t.layer(node, f"Dropout{rank - 2}d", (rate,), {}, None, [x])
    else:  # a mask shared along other axes: drop a ones tensor of that shape and scale x by it
        ref = t.ref(x)
        shape = ", ".join("1" if i in axes else f"{ref}.shape[{i}]" for i in range(rank))
        mask = f"F.dropout({ref}.new_ones(({shape},)), {t.lit(rate)}, self.training)"
        t.assign(node, f"{ref} * {mask} if self.training else {ref}")  # no pass over x at inference
