"""torch import rules for scatters: ``scatter`` (src, value and reduce forms), ``scatter_add``,
``scatter_reduce``, ``index_reduce``, ``put`` and ``masked_scatter``, all in the IR's row form.

torch's element-wise ``scatter`` gives every update its own coordinates (``rows.element_rows``; a
buffer index folds into one constant table); ``index_reduce`` writes whole slices along ``dim``,
which is moved to the front; ``put`` indexes the flattened tensor. ``index_add``, ``index_copy``
and ``index_fill`` reach ``index_put`` through torch's own decompositions (ops/shape/from_torch.py).
``masked_scatter`` has a static shape: the k-th set mask element takes source element k, found with
a running sum of the mask. Duplicate indices in a plain (set) scatter are nondeterministic in
torch; portx keeps one of them, as XLA does.

Example:
    x.scatter_reduce(1, idx, src, "amax") -> scatter_reduce(%x, %rows, reshape(slice(%src))) {reduce="amax"}
"""
from __future__ import annotations

import math

import numpy as np

from .._util import norm_axis
from ..elementwise import BINARY, CAST, WHERE
from ..reduce import CUMSUM
from ..shape import EXPAND, PERMUTE
from ..shape.index import INDEX_SELECT, SCATTER, emit_slice
from ..scatter import SCATTER_REDUCE
from .rows import element_rows, filled, reshaped, scatter_rows, wrapped

__all__ = []

_TORCH_REDUCE = {"sum": "sum", "add": "sum", "prod": "prod", "multiply": "prod", "mean": "mean", "amax": "amax",
                 "amin": "amin"}


def _reduction(call, name):
    if name not in _TORCH_REDUCE:
        call.unsupported(f"reduce={name!r}")
    return _TORCH_REDUCE[name]


def _fitted(call, src, shape):
    """``src`` cut to the index's ``shape`` (torch reads only that corner of a larger src)."""
    for axis, (have, want) in enumerate(zip(src.type.shape, shape)):
        if have != want:
            src = emit_slice(call, src, axis, 0, want)
    return src


@SCATTER_REDUCE.imports("torch", "aten::scatter", "aten::scatter_add", "aten::scatter_reduce")
def _scatter_from_aten(call):
    x, index, src = call.arg("self"), call.arg("index"), call.arg("src")
    axis = norm_axis(call.arg("dim"), max(x.type.rank, 1))
    if x.type.rank == 0:  # 0-d self, index and src: one element, as shape (1,)
        x, index = reshaped(call, x, (1,)), reshaped(call, index, (1,))
        src = None if src is None else reshaped(call, src, (1,))
    shape = tuple(index.type.shape)
    if src is None:
        updates = filled(call, call.arg("value"), x.type.dtype, shape)
    else:
        updates = _fitted(call, src, shape)
    op = str(call.node.target)
    reduce = "sum" if "scatter_add" in op else _reduction(call, call.arg("reduce")) if call.arg("reduce") else "set"
    rows, n = element_rows(call, x, axis, index)
    y = scatter_rows(call, x, rows, reshaped(call, updates, (n,)), reduce, bool(call.arg("include_self", True)))
    return reshaped(call, y, call.out_type().shape)


@SCATTER_REDUCE.imports("torch", "aten::index_reduce")
def _index_reduce_from_aten(call):
    """Slices of ``source`` along ``dim`` reduced into x at ``index``: ``dim`` moved to the front, rows (N, 1)."""
    x, index, source = call.arg("self"), call.arg("index"), call.arg("source")
    axis = norm_axis(call.arg("dim"), max(x.type.rank, 1))
    scalar = x.type.rank == 0  # a 0-d tensor is indexed as one of shape (1,)
    if scalar:
        x, source = reshaped(call, x, (1,)), reshaped(call, source, (math.prod(source.type.shape),))
    perm = (axis,) + tuple(a for a in range(x.type.rank) if a != axis)
    front = perm != tuple(range(x.type.rank))
    xt = call.emit(PERMUTE, [x], {"perm": perm}) if front else x
    src = call.emit(PERMUTE, [source], {"perm": perm}) if front else source
    n = math.prod(index.type.shape)
    rows = reshaped(call, wrapped(call, index, x.type.shape[axis]), (n, 1))
    y = scatter_rows(call, xt, rows, src, _reduction(call, call.arg("reduce")), bool(call.arg("include_self", True)))
    if scalar:
        return reshaped(call, y, ())
    return call.emit(PERMUTE, [y], {"perm": tuple(int(i) for i in np.argsort(perm))}) if front else y


@SCATTER.imports("torch", "aten::put")
def _put_from_aten(call):
    """``x.put(index, source, accumulate)``: a scatter into the flattened tensor."""
    x, index, source = call.arg("self"), call.arg("index"), call.arg("source")
    size, n = math.prod(x.type.shape), math.prod(index.type.shape)
    flat = reshaped(call, x, (size,))
    rows = reshaped(call, wrapped(call, index, size), (n, 1))
    reduce = "sum" if call.arg("accumulate", False) else "set"
    return reshaped(call, scatter_rows(call, flat, rows, reshaped(call, source, (n,)), reduce), x.type.shape)


@WHERE.imports("torch", "aten::masked_scatter")
def _masked_scatter_from_aten(call):
    """Set mask element number k (in row-major order) takes ``source.flatten()[k]``; the rest keep x."""
    x, mask, source = call.arg("self"), call.arg("mask"), call.arg("source")
    shape = call.out_type().shape  # self and mask broadcast together
    size = math.prod(shape)
    if mask.type.shape != shape:
        mask = call.emit(EXPAND, [mask], {"shape": shape})
    if x.type.shape != shape:
        x = call.emit(EXPAND, [x], {"shape": shape})
    flat_mask = reshaped(call, mask, (size,))
    count = call.emit(CUMSUM, [call.emit(CAST, [flat_mask], {"dtype": "int64"})], {"axis": 0})
    position = call.emit(BINARY["maximum"], [call.emit(BINARY["sub"], [count, call.const(np.array(1, np.int64),
                                                                                          "one")]),
                                             call.const(np.array(0, np.int64), "zero")])
    flat_source = reshaped(call, source, (math.prod(source.type.shape),))
    picked = call.emit(INDEX_SELECT, [flat_source, position], {"axis": 0})
    if picked.type.dtype != x.type.dtype:
        picked = call.emit(CAST, [picked], {"dtype": x.type.dtype})
    return reshaped(call, call.emit(WHERE, [flat_mask, picked, reshaped(call, x, (size,))]), shape)
