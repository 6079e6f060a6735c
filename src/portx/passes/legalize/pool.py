"""Adaptive pooling rewrites: uneven torch bins as static IR ops.

When every input size is a multiple of its output size, adaptive pooling is a plain pooling
window and stays native. Otherwise torch's bins (``[floor(i*in/out), ceil((i+1)*in/out))``) differ
in length and may overlap: PyTorch/XLA then falls back to the CPU (``IsSupportedAdaptivePool``),
and a TPU wants a static form. Average bins are a constant pooling matrix per axis (a matmul);
max bins a gather of each bin, padded to the longest bin by repeating its last index, then a max.
Both op tables name these rules for the adaptive pools; the emitters write only the even bins.

Example:
    >>> legalize(graph, "torch-xla")   # adaptive_avg_pool {size=(3, 4)} on 7x9 -> two bin-mean matmuls
"""
from __future__ import annotations

import numpy as np

from ...ops.pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL, bin_mean_matrix, padded_bin_table
from ...ops.reduce import REDUCE
from ...ops.shape import RESHAPE
from ...ops.shape.index import INDEX_SELECT
from .rewriter import contract_axes, node_rule

__all__ = ["adaptive_avg_pool_as_matmul", "adaptive_max_pool_as_gather_max"]


def _uneven_axes(node):
    """(axis, n_in, n_out) per pooled axis, or None when the bins are even (or shapes symbolic)."""
    x, size = node.inputs[0], node.attrs["size"]
    if not x.type.is_static or node.attrs.get("channels_last", False):
        return None  # the bins below are on trailing axes: channels-first nodes only
    first = x.type.rank - len(size)
    axes = [(first + i, x.type.shape[first + i], n_out) for i, n_out in enumerate(size)]
    return axes if any(n_in % n_out for _, n_in, n_out in axes) else None


@node_rule(ADAPTIVE_AVG_POOL)
def adaptive_avg_pool_as_matmul(node, rw) -> bool:
    """Uneven adaptive average pooling as one matmul per axis with a constant bin-mean matrix.

    Before / after::

        %y: float32[1x8x3x2] = adaptive_avg_pool(%x: float32[1x8x5x4]) {size=(3, 2)}  # pool
            ->
        %y_bin_cols: float32[1x8x5x2] = matmul(%x, %pool.bin_cols)     # [[.5 0] [.5 0] [0 .5] [0 .5]]
        %y: float32[1x8x3x2] = matmul(%pool.bin_rows, %y_bin_cols)    # [[.5 .5 0 0 0] [0 1/3 1/3 1/3 0] ...]

    (the W axis divides evenly, 4 -> 2, and still becomes a matrix: one form for the whole node)
    """
    axes = _uneven_axes(node)
    if axes is None or len(axes) > 3:
        return False
    matrices = [None if n_in == n_out else bin_mean_matrix(n_in, n_out) for _, n_in, n_out in axes]
    hints = ("bin_depth", "bin_rows", "bin_cols")[3 - len(axes):]
    contract_axes(rw, node.inputs[0], matrices, hints, node.inputs[0].type.dtype)
    return True


@node_rule(ADAPTIVE_MAX_POOL)
def adaptive_max_pool_as_gather_max(node, rw) -> bool:
    """Uneven adaptive max pooling as, per axis, a static gather of each bin, a reshape and a max.

    Each bin's indices are padded to the longest bin by repeating its last index, which cannot
    change a max.

    Before / after::

        %y: float32[1x8x2] = adaptive_max_pool(%x: float32[1x8x5]) {size=(2,)}  # pool
            ->
        %y_bins2: float32[1x8x6] = index_select(%x, %pool.bins_axis2) {axis=2}  # [0 1 2 2 3 4]
        %y_group2: float32[1x8x2x3] = reshape(%y_bins2) {shape=(1, 8, 2, 3)}
        %y: float32[1x8x2] = amax(%y_group2) {axes=(3,)}
    """
    axes = _uneven_axes(node)
    if axes is None:
        return False
    steps = [(axis, n_in, n_out) for axis, n_in, n_out in axes if n_in != n_out]
    y = node.inputs[0]
    for axis, n_in, n_out in steps:
        table = padded_bin_table(n_in, n_out)
        width = table.shape[1]
        index = rw.const(table.reshape(-1).astype(np.int32), f"bins_axis{axis}")
        y = rw.emit(INDEX_SELECT, [y, index], {"axis": axis}, f"bins{axis}")
        shape = y.type.shape
        y = rw.emit(RESHAPE, [y], {"shape": shape[:axis] + (n_out, width) + shape[axis + 1:]}, f"group{axis}")
        y = rw.emit(REDUCE["amax"], [y], {"axes": (axis + 1,)}, f"max{axis}")
    rw.result(y)
    return True
