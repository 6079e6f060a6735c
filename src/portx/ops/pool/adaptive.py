"""Adaptive pooling on NC... tensors: any output size, with torch's bins.

Bin ``i`` of an axis covers ``[floor(i * in / out), ceil((i + 1) * in / out))``; bins may differ in
length and overlap. Global and evenly divided cases are plain pooling layers in both targets
(``to_keras.py``, ``to_torch.py``). Uneven bins are rewritten before emitting
(``passes/legalize/pool.py``), with the tables built here: average bins are a constant matrix per
axis (``bin_mean_matrix``; Note [resize as matrices] in ``resize/__init__.py``), and max bins a
gather of each bin, padded to the longest one (``padded_bin_table``), followed by a max.

Example IR:
    %y: float32[1x8x3x3] = adaptive_avg_pool(%x) {size=(3, 3)}  # pool
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last

__all__ = ["ADAPTIVE_AVG_POOL", "ADAPTIVE_MAX_POOL", "adaptive_bins", "bin_mean_matrix", "padded_bin_table"]

ADAPTIVE_AVG_POOL = OpDef("adaptive_avg_pool", ("x",), {"size": REQUIRED, "channels_last": False}, family="pool",
                          doc="Mean over torch's adaptive bins of the trailing len(size) axes.")
ADAPTIVE_MAX_POOL = OpDef("adaptive_max_pool", ("x",), {"size": REQUIRED, "channels_last": False}, family="pool",
                          doc="Max over torch's adaptive bins (values only, no indices).")


def adaptive_bins(n_in, n_out):
    """torch's bin edges: ``adaptive_bins(5, 3)`` -> ``([0, 1, 3], [2, 4, 5])``."""
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def padded_bin_table(n_in, n_out):
    """(n_out, width) input indices of each torch bin, short bins padded by repeating their last index
    (a repeat leaves a max unchanged): ``padded_bin_table(5, 3)`` -> ``[[0, 1, 1], [1, 2, 3], [3, 4, 4]]``."""
    starts, ends = adaptive_bins(n_in, n_out)
    width = int(max(ends - starts))
    return np.minimum(starts[:, None] + np.arange(width), ends[:, None] - 1)


def bin_mean_matrix(n_in, n_out):
    """(n_out, n_in) matrix whose row i averages bin i: ``bin_mean_matrix(3, 2)`` -> ``[[.5, .5, 0], [0, .5, .5]]``."""
    matrix = np.zeros((n_out, n_in))
    for row, (start, end) in enumerate(zip(*adaptive_bins(n_in, n_out))):
        matrix[row, start:end] = 1.0 / (end - start)
    return matrix


def _adaptive_type(x, *, size):
    if not 1 <= len(size) <= x.rank - 1 or min(size) <= 0:
        raise ValueError(f"adaptive pool: output size {size} does not fit input {x.shape}")
    return x.with_shape(x.shape[:x.rank - len(size)] + tuple(size))


ADAPTIVE_AVG_POOL.infer(honors_channels_last(_adaptive_type))
ADAPTIVE_MAX_POOL.infer(honors_channels_last(_adaptive_type))


def _bin_reduce(x, size, reduce):
    """Reduce every bin, one trailing axis at a time (a bin is a product of per-axis ranges)."""
    y = x.astype(np.float64)
    for i, n_out in enumerate(size):
        axis = x.ndim - len(size) + i
        edges = zip(*adaptive_bins(y.shape[axis], n_out))
        y = np.concatenate([reduce(np.take(y, range(s, e), axis=axis), axis=axis, keepdims=True)
                            for s, e in edges], axis=axis)
    return y.astype(x.dtype)


@ADAPTIVE_AVG_POOL.reference
@honors_channels_last
def _adaptive_avg_pool_numpy(x, *, size):
    return _bin_reduce(x, size, np.mean)


@ADAPTIVE_MAX_POOL.reference
@honors_channels_last
def _adaptive_max_pool_numpy(x, *, size):
    return _bin_reduce(x, size, np.max)
