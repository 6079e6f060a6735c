"""torch-xla emit rule for ``scatter_reduce``: ``Tensor.scatter_reduce`` on x's indexed axes flattened.

The rows' coordinates become one linear index into the flattened indexed axes (folded in NumPy
when the indices are stored), expanded over the row's trailing axes, and torch's own
``scatter_reduce(0, index, updates, reduce, include_self=True)`` combines them with x.

Example generated code:
    y = x.reshape(4, 5).scatter_reduce(0, rows.view(3, 1).expand(3, 5), updates, 'amax').reshape(4, 5)
"""
from __future__ import annotations

import math

import numpy as np

from ..scatter import REDUCTIONS, SCATTER_REDUCE

__all__ = []


def linear_rows(node, t, indices, shape) -> str:
    """Code for the (N,) int64 linear index of each row of ``indices`` into axes of ``shape``."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    if t.is_param(indices):
        rows = np.asarray(t.param(indices)).astype(np.int64) @ np.array(strides, dtype=np.int64)
        return t.const(node, rows, "rows")
    idx = f"{t.ref(indices)}.long()"
    if len(shape) == 1:
        return f"{idx}[:, 0]"
    return f"({idx} * torch.tensor({t.lit(strides)}, device={idx}.device)).sum(1)"


@SCATTER_REDUCE.emits("torch-xla")
def _scatter_reduce_to_torch(node, t):
    x, indices, updates = node.inputs
    depth, n = indices.type.shape[-1], indices.type.shape[0]
    shape = x.type.shape
    rest = tuple(shape[depth:])
    rows = linear_rows(node, t, indices, shape[:depth])
    index = f"{rows}.long().view({t.lit((n,) + (1,) * len(rest))[1:-1].rstrip(',')})"
    if rest:
        index = f"{index}.expand({t.lit((n,) + rest)[1:-1].rstrip(',')})"
    flat = f"{t.ref(x)}.reshape({t.lit((math.prod(shape[:depth]),) + rest)[1:-1].rstrip(',')})"
    reduce = REDUCTIONS[node.attrs["reduce"]][1]
    t.assign(node, f"{flat}.scatter_reduce(0, {index}, {t.ref(updates)}, {reduce!r}).reshape({t.lit(shape)})")
