"""Adaptive pooling on NC... tensors: any output size, with torch's bins.

Bin ``i`` of an axis covers ``[floor(i * in / out), ceil((i + 1) * in / out))``; bins may differ in
length and overlap. Global and evenly divided cases are plain Keras pooling layers; uneven
average bins are a constant matrix per axis (Note [resize as matrices] in ``resize.py``), and
uneven max bins are a gather of each bin, padded to the longest one, followed by a max.

Example IR:
    %y: float32[1x8x3x3] = adaptive_avg_pool(%x) {size=(3, 3)}  # pool
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last, spatial_shape
from ..pool import check_emittable, pool_rank, values_only
from ..resize import apply_axis_matrices

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


def _adaptive_as_keras_pool(node, k, kind) -> bool:
    """Global or evenly divided bins are a plain Keras pooling layer; True when written."""
    x, size = node.inputs[0], node.attrs["size"]
    last = node.attrs.get("channels_last", False)
    rank, in_spatial = len(size), spatial_shape(x.type.shape, last)
    fmt = "channels_last" if last else "channels_first"
    if all(n == 1 for n in size):
        k.layer(node, f"Global{kind}Pooling{rank}D", {"keepdims": True, "data_format": fmt}, [x])
        return True
    if all(n % o == 0 for n, o in zip(in_spatial, size)):
        window = tuple(n // o for n, o in zip(in_spatial, size))
        k.layer(node, f"{kind}Pooling{rank}D", {"pool_size": window, "strides": window, "padding": "valid",
                                                "data_format": fmt}, [x])
        return True
    return False


@ADAPTIVE_AVG_POOL.emits("keras-jax")
def _adaptive_avg_pool_to_keras(node, k):
    size = node.attrs["size"]
    check_emittable(node, len(size))
    if _adaptive_as_keras_pool(node, k, "Average"):
        return
    if node.attrs.get("channels_last", False):  # the bin matrices below are written for channels-first
        k.via_channels_first(node, _adaptive_avg_pool_to_keras)
        return
    if len(size) > 2:
        raise NotImplementedError(f"{node.where()}: uneven 3-d adaptive average pooling is not emitted")
    matrices = [None if n_in == n_out else bin_mean_matrix(n_in, n_out)
                for n_in, n_out in zip(node.inputs[0].type.shape[2:], size)]
    apply_axis_matrices(node, k, node.inputs[0], matrices, hints=("bin_rows", "bin_cols"))


@ADAPTIVE_MAX_POOL.emits("keras-jax")
def _adaptive_max_pool_to_keras(node, k):
    """Uneven bins: gather each bin padded to the longest by repeating its last index, then max."""
    check_emittable(node, len(node.attrs["size"]))
    if _adaptive_as_keras_pool(node, k, "Max"):
        return
    if node.attrs.get("channels_last", False):  # the bin gathers below are written for channels-first
        k.via_channels_first(node, _adaptive_max_pool_to_keras)
        return
    x = node.inputs[0]
    shape, expr = list(x.type.shape), k.ref(x)
    for axis, n_out in enumerate(node.attrs["size"], start=2):
        n_in = shape[axis]
        if n_in == n_out:
            continue
        if expr != k.ref(x):  # one line per axis keeps the generated code readable
            expr = k.temp(node, expr, f"max_axis{axis - 1}")
        table = padded_bin_table(n_in, n_out)
        width = table.shape[1]
        index = k.const(node, table.reshape(-1).astype("int32"), f"bins_axis{axis}")
        grouped = tuple([-1] + shape[1:axis] + [n_out, width] + shape[axis + 1:])
        expr = f"ops.max(ops.reshape(ops.take({expr}, {index}, axis={axis}), {k.lit(grouped)}), axis={axis + 1})"
        shape[axis] = n_out
    k.assign(node, expr)


def _adaptive_from_aten(call, op):
    rank = pool_rank(call)
    x = call.arg("self")
    if x.type.rank != rank + 2:
        call.unsupported(f"unbatched input {x.type.shape}: add a batch dimension before pooling")
    size = tuple(call.out_type(0).shape[2:])  # torch has resolved None entries of output_size
    return values_only(call, call.emit(op, [x], {"size": size}))


@ADAPTIVE_AVG_POOL.imports("torch", "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d")
def _adaptive_avg_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_AVG_POOL)


@ADAPTIVE_MAX_POOL.imports("torch", "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d")
def _adaptive_max_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_MAX_POOL)
