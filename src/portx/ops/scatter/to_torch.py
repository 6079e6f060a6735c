"""torch-xla emit rule for ``scatter_reduce``: ``Tensor.scatter_reduce`` along x's first axis.

Each row's coordinate indexes x's first axis (rows into more than one axis were flattened into one by
``passes/legalize/decompose.py``, ``scatter_rows_into_one_axis``), expanded over the row's trailing axes, and
torch's own ``scatter_reduce(0, index, updates, reduce, include_self=True)`` combines them with x.

Example generated code:
    y = x.scatter_reduce(0, rows.view(3, 1).expand(3, 5), updates, 'amax')
"""
from __future__ import annotations

import numpy as np

from ..scatter import REDUCTIONS, SCATTER_REDUCE, one_axis_rows

__all__ = []


def _rows(node, t, indices) -> str:
    """Code for the (N,) int64 row of each coordinate of ``indices`` (N, 1): stored ones folded into a table."""
    if t.is_param(indices):
        return t.const(node, np.asarray(t.param(indices))[:, 0].astype(np.int64), "rows")
    return f"{t.ref(indices)}.long()[:, 0]"


@SCATTER_REDUCE.emits("torch-xla")
def _scatter_reduce_to_torch(node, t):
    x, indices, updates = node.inputs
    n, rest = one_axis_rows(node), tuple(x.type.shape[1:])
    index = f"{_rows(node, t, indices)}.view({t.lit((n,) + (1,) * len(rest))[1:-1].rstrip(',')})"
    if rest:
        index = f"{index}.expand({t.lit((n,) + rest)[1:-1].rstrip(',')})"
    reduce = REDUCTIONS[node.attrs["reduce"]][1]
    t.assign(node, f"{t.ref(x)}.scatter_reduce(0, {index}, {t.ref(updates)}, {reduce!r})")
