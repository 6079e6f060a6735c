"""Keras-JAX emit rule for ``scatter_reduce``: segment reductions over the flattened indexed axes.

Each row's coordinates become one segment id (``indices @ strides``, folded in NumPy when the
indices are stored); ``ops.segment_max`` combines the rows of a segment (JAX fills an empty one
with the dtype's lowest value, so ``maximum`` with x keeps x there), ``amin`` is the same on
negated values, and ``prod`` multiplies the rows a one-hot mask selects per segment (``ops`` has no
segment product; the mask is N x M, fine for the index tables models carry).

Example generated code:
    seg = ops.segment_max(updates, np.array([2, 0]), num_segments=4)
    y = ops.maximum(x, ops.reshape(seg, (4, 5)))
"""
from __future__ import annotations

import math

import numpy as np

from ..scatter import SCATTER_REDUCE

__all__ = []


def segment_ids(node, k, indices, shape) -> str:
    """Code for the (N,) segment id of each row of ``indices`` (N, len(shape)) into axes of ``shape``."""
    strides = np.array([math.prod(shape[i + 1:]) for i in range(len(shape))], dtype=np.int32)
    if k.is_param(indices):
        return k.const(node, (np.asarray(k.param(indices)).astype(np.int64) @ strides).astype(np.int32), "rows")
    idx = f"ops.cast({k.ref(indices)}, 'int32')"
    if len(shape) == 1:
        return f"{idx}[:, 0]"
    return f"ops.sum(ops.multiply({idx}, {k.inline(strides)}), axis=1)"


@SCATTER_REDUCE.emits("keras-jax")
def _scatter_reduce_to_keras(node, k):
    x, indices, updates = node.inputs
    depth = indices.type.shape[-1]
    m = math.prod(x.type.shape[:depth])
    rows = segment_ids(node, k, indices, x.type.shape[:depth])
    ups, reduce = k.ref(updates), node.attrs["reduce"]
    if reduce == "prod":
        hit = f"ops.equal(ops.expand_dims({rows}, 1), ops.arange({m}, dtype='int32'))"
        hit = f"ops.reshape({hit}, {k.lit((indices.type.shape[0], m) + (1,) * (x.type.rank - depth))})"
        combined = f"ops.prod(ops.where({hit}, ops.expand_dims({ups}, 1), 1), axis=0)"
    elif reduce == "amax":
        combined = f"ops.segment_max({ups}, {rows}, num_segments={m})"
    else:
        combined = f"ops.negative(ops.segment_max(ops.negative({ups}), {rows}, num_segments={m}))"
    seg = k.temp(node, combined, "seg")
    whole = k.free_expr(node, "reshape", seg, k.graph.free_shape(x))
    fn = {"prod": "ops.multiply", "amax": "ops.maximum", "amin": "ops.minimum"}[reduce]
    k.assign(node, f"{fn}({k.ref(x)}, {whole})")
