"""Keras-JAX emit rule for ``scatter_reduce``: segment reductions over x's first axis.

Each row's coordinate is its segment id (rows into more than one axis were flattened into one by
``passes/legalize/decompose.py``, ``scatter_rows_into_one_axis``); ``ops.segment_max`` combines the rows of a
segment (JAX fills an empty one with the dtype's lowest value, so ``maximum`` with x keeps x there), ``amin`` is
the same on negated values, and ``prod`` multiplies the rows a one-hot mask selects per segment (``ops`` has no
segment product; the mask is N x M, fine for the index tables models carry).

Example generated code:
    seg = ops.segment_max(updates, np.array([2, 0]), num_segments=4)
    y = ops.maximum(x, seg)
"""
from __future__ import annotations

import numpy as np

from ..scatter import SCATTER_REDUCE, one_axis_rows

__all__ = []


def _segment_ids(node, k, indices) -> str:
    """Code for the (N,) segment id of each row of ``indices`` (N, 1): stored ones folded into a table."""
    if k.is_param(indices):
        return k.const(node, np.asarray(k.param(indices))[:, 0].astype(np.int32), "rows")
    return f"ops.cast({k.ref(indices)}, 'int32')[:, 0]"


@SCATTER_REDUCE.emits("keras-jax")
def _scatter_reduce_to_keras(node, k):
    x, indices, updates = node.inputs
    n, m = one_axis_rows(node), x.type.shape[0]
    rows = _segment_ids(node, k, indices)
    ups, reduce = k.ref(updates), node.attrs["reduce"]
    if reduce == "prod":
        hit = f"ops.equal(ops.expand_dims({rows}, 1), ops.arange({m}, dtype='int32'))"
        hit = f"ops.reshape({hit}, {k.lit((n, m) + (1,) * (x.type.rank - 1))})"
        combined = f"ops.prod(ops.where({hit}, ops.expand_dims({ups}, 1), 1), axis=0)"
    elif reduce == "amax":
        combined = f"ops.segment_max({ups}, {rows}, num_segments={m})"
    else:
        combined = f"ops.negative(ops.segment_max(ops.negative({ups}), {rows}, num_segments={m}))"
    seg = k.temp(node, combined, "seg")  # x's shape: one row per segment, updates' trailing axes
    fn = {"prod": "ops.multiply", "amax": "ops.maximum", "amin": "ops.minimum"}[reduce]
    k.assign(node, f"{fn}({k.ref(x)}, {seg})")
