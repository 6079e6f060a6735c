"""torch import rules for reads and writes through index tables known at conversion time: ``diagonal``,
``diagonal_scatter``, ``slice_scatter``, ``as_strided`` (and ``as_strided_scatter``), ``take``, ``unfold``
(Tensor.unfold's sliding windows) and ``embedding_bag``.

Each computes its index table in NumPy from the static shapes, so the graph holds one
``index_select`` (a gather) and, for the writes, a ``where`` with a constant mask: no data-dependent
shape anywhere. ``as_strided`` reads the tensor as if contiguous (what torch.export gives a graph
value). ``embedding_bag`` needs its ``offsets`` known (a buffer or a constant): the bag of each
index is then a constant, and the bags are sums, means or maxima of rows (scatters).

Example:
    torch.diagonal(x, 1) -> index_select(reshape(%x) {shape=(20,)}, %diag_index) {axis=0}
"""
from __future__ import annotations

import math

import numpy as np

from .._util import norm_axis
from ..elementwise import BINARY, CAST, WHERE
from ..embedding import EMBEDDING
from ..shape import PERMUTE
from ..shape.index import INDEX_SELECT, SCATTER, torch_slice_bounds
from ..scatter import SCATTER_REDUCE
from .rows import filled, known, reshaped, scatter_rows, wrapped

__all__ = []


def _matrix_last(call, x, d1, d2):
    """(x with axes d1, d2 moved last and merged into one, the permutation)."""
    perm = tuple(a for a in range(x.type.rank) if a not in (d1, d2)) + (d1, d2)
    xt = x if perm == tuple(range(x.type.rank)) else call.emit(PERMUTE, [x], {"perm": perm})
    shape = xt.type.shape
    return reshaped(call, xt, shape[:-2] + (shape[-2] * shape[-1],)), perm


def _diagonal_table(n, m, offset):
    """Linear positions (in an n x m matrix) of the diagonal ``offset``."""
    rows = np.arange(max(0, min(n + min(offset, 0), m - max(offset, 0))), dtype=np.int64)
    return (rows + max(-offset, 0)) * m + rows + max(offset, 0)


def _diagonal_axes(call, x):
    rank = x.type.rank
    d1, d2 = norm_axis(call.arg("dim1", 0), rank), norm_axis(call.arg("dim2", 1), rank)
    if d1 == d2:
        call.unsupported("diagonal with dim1 == dim2")
    return d1, d2, int(call.arg("offset", 0))


@INDEX_SELECT.imports("torch", "aten::diagonal")
def _diagonal_from_aten(call):
    x = call.arg("self")
    d1, d2, offset = _diagonal_axes(call, x)
    table = _diagonal_table(x.type.shape[d1], x.type.shape[d2], offset)
    flat, _ = _matrix_last(call, x, d1, d2)
    return call.emit(INDEX_SELECT, [flat, call.const(table, "diagonal")], {"axis": x.type.rank - 2})


@WHERE.imports("torch", "aten::diagonal_scatter")
def _diagonal_scatter_from_aten(call):
    """src spread over the matrix (every cell reads some src entry), kept only on the diagonal."""
    x, src = call.arg("self"), call.arg("src")
    d1, d2, offset = _diagonal_axes(call, x)
    n, m = x.type.shape[d1], x.type.shape[d2]
    table = _diagonal_table(n, m, offset)
    spread, mask = np.zeros(n * m, np.int64), np.zeros(n * m, bool)
    spread[table], mask[table] = np.arange(len(table)), True
    flat, perm = _matrix_last(call, x, d1, d2)
    src = src if src.type.dtype == x.type.dtype else call.emit(CAST, [src], {"dtype": x.type.dtype})
    taken = call.emit(INDEX_SELECT, [src, call.const(spread, "spread")], {"axis": flat.type.rank - 1})
    y = call.emit(WHERE, [call.const(mask, "diagonal_mask"), taken, flat])
    y = reshaped(call, y, flat.type.shape[:-1] + (n, m))
    return y if perm == tuple(range(x.type.rank)) else call.emit(PERMUTE, [y], {"perm": tuple(np.argsort(perm))})


@WHERE.imports("torch", "aten::slice_scatter")
def _slice_scatter_from_aten(call):
    x, src = call.arg("self"), call.arg("src")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    size = x.type.shape[axis]
    start, end = torch_slice_bounds(size, call.arg("start"), call.arg("end"))
    written = np.arange(start, end, int(call.arg("step", 1)))
    spread, mask = np.zeros(size, np.int64), np.zeros(size, bool)
    spread[written], mask[written] = np.arange(len(written)), True
    src = src if src.type.dtype == x.type.dtype else call.emit(CAST, [src], {"dtype": x.type.dtype})
    taken = call.emit(INDEX_SELECT, [src, call.const(spread, "spread")], {"axis": axis})
    mask = mask.reshape((size,) + (1,) * (x.type.rank - axis - 1))
    return call.emit(WHERE, [call.const(mask, "slice_mask"), taken, x])


def _strided_table(call, x):
    """Positions in the flattened x (read as contiguous) of every element of the strided view."""
    size, stride = tuple(call.arg("size")), tuple(call.arg("stride"))
    table = np.full(size, int(call.arg("storage_offset", 0)), np.int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        table += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(size) - axis - 1))
    numel = math.prod(x.type.shape)
    if table.size and (table.max() >= numel or table.min() < 0):
        call.unsupported(f"as_strided view reaching past the tensor ({numel} elements; a view of a larger "
                         "storage cannot be expressed)")
    return table, numel


@INDEX_SELECT.imports("torch", "aten::as_strided", "aten::as_strided_copy")
def _as_strided_from_aten(call):
    x = call.arg("self")
    table, numel = _strided_table(call, x)
    return call.emit(INDEX_SELECT, [reshaped(call, x, (numel,)), call.const(table, "strided")], {"axis": 0})


@SCATTER.imports("torch", "aten::as_strided_scatter")
def _as_strided_scatter_from_aten(call):
    """src written into the positions the strided view reads (overlapping views: one write wins)."""
    x, src = call.arg("self"), call.arg("src")
    table, numel = _strided_table(call, x)
    rows = call.const(table.reshape(-1, 1), "strided")
    y = scatter_rows(call, reshaped(call, x, (numel,)), rows, reshaped(call, src, (table.size,)), "set")
    return reshaped(call, y, x.type.shape)


@INDEX_SELECT.imports("torch", "aten::take")
def _take_from_aten(call):
    """``torch.take``: numpy.take of the flattened tensor (negative indices count from its end)."""
    x, index = call.arg("self"), call.arg("index")
    numel = math.prod(x.type.shape)
    flat = call.emit(INDEX_SELECT, [reshaped(call, x, (numel,)), wrapped(call, index, numel)], {"axis": 0})
    return flat


@INDEX_SELECT.imports("torch", "aten::unfold")
def _unfold_from_aten(call):
    """Windows of ``size`` every ``step`` along ``dimension``: (windows, size) taken there, size moved last."""
    x = call.arg("self")
    if x.type.rank == 0:  # torch: one window of size 1
        return reshaped(call, x, (1,))
    axis = norm_axis(call.arg("dimension"), x.type.rank)
    size, step = int(call.arg("size")), int(call.arg("step"))
    count = (x.type.shape[axis] - size) // step + 1
    table = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    y = call.emit(INDEX_SELECT, [x, call.const(table, "windows")], {"axis": axis})
    rank = y.type.rank
    perm = tuple(a for a in range(rank) if a != axis + 1) + (axis + 1,)
    return y if perm == tuple(range(rank)) else call.emit(PERMUTE, [y], {"perm": perm})


@SCATTER_REDUCE.imports("torch", "aten::_embedding_bag", "aten::_embedding_bag_forward_only")
def _embedding_bag_from_aten(call):
    """Rows of ``weight`` summed, averaged or maxed per bag; empty bags are zeros, as in torch."""
    weight, indices = call.arg("weight"), call.arg("indices")
    if any(call.output_read(i) for i in (1, 2, 3)):
        call.unsupported("embedding_bag's offset2bag / bag_size / max_indices outputs are read")
    offsets = known(call, call.arg("offsets"))
    if offsets is None:
        call.unsupported("embedding_bag with offsets computed at run time; store them as a buffer")
    n, last = math.prod(indices.type.shape), bool(call.arg("include_last_offset", False))
    bags = len(offsets) - 1 if last else len(offsets)
    bag = np.searchsorted(offsets.astype(np.int64), np.arange(n), side="right") - 1
    keep = bag < bags
    if int(call.arg("padding_idx", -1)) >= 0:
        ids = known(call, indices)
        if ids is None:
            call.unsupported("embedding_bag with padding_idx and indices computed at run time")
        keep &= ids.reshape(n) != int(call.arg("padding_idx"))
    mode = {0: "sum", 1: "mean", 2: "amax"}[int(call.arg("mode", 0))]
    dim = weight.type.shape[1]
    if not keep.all():
        indices = call.emit(INDEX_SELECT, [reshaped(call, indices, (n,)), call.const(np.nonzero(keep)[0], "kept")],
                            {"axis": 0})
    rows = call.emit(EMBEDDING, [weight, reshaped(call, indices, (int(keep.sum()),))])
    weights = call.arg("per_sample_weights")
    if weights is not None:
        weights = reshaped(call, weights, (n, 1))
        if not keep.all():
            weights = call.emit(INDEX_SELECT, [weights, call.const(np.nonzero(keep)[0], "kept")], {"axis": 0})
        rows = call.emit(BINARY["mul"], [rows, weights])
    where = call.const(bag[keep].reshape(-1, 1).astype(np.int64), "bags")
    zeros = filled(call, 0, weight.type.dtype, (bags, dim))
    if mode == "mean":
        counts = np.maximum(np.bincount(bag[keep], minlength=bags), 1).astype(weight.type.dtype)
        total = scatter_rows(call, zeros, where, rows, "sum")
        out = call.emit(BINARY["div"], [total, call.const(counts.reshape(bags, 1), "bag_sizes")])
    else:
        out = scatter_rows(call, zeros, where, rows, mode, include_self=mode != "amax")
    return [out, None, None, None]
