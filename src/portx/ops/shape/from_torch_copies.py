"""ATen import rules for copies and static-size forms: the ``*_copy`` functional views, ``copy``, ``resize``,
``new_empty_strided``, ``combinations`` and ``nonzero_static``, all as decompositions into existing shape ops.

The ``*_copy`` ops (``view_copy``, ``permute_copy``, ...) are the functional forms of views: they return a new
tensor with the view's contents, which is what every IR op returns anyway, so they import as the view. Sizes come
from torch's recorded output types (Note [recorded target shapes] in from_torch.py).

``combinations(x, r)`` has C(n, r) rows for a 1-D ``x`` of size n whatever its values: one ``index_select`` with
a constant (C, r) index table. ``nonzero_static(x, size=N)`` sorts the keys ``where(x != 0, i, n)`` (the flat
positions of the nonzeros first, in order), keeps N of them (padded with n), and turns each into coordinates,
``fill_value`` where no nonzero is left.

Example:
    aten::permute_copy(%x, [0, 2, 1]) -> permute(%x) {perm=(0, 2, 1)}
    aten::combinations(%x, 2) on float32[4] -> index_select(%x, %pairs) {axis=0}   (%pairs: int64[6x2])
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...ir import imports
from .._util import norm_axis
from ..elementwise import BINARY, BITCAST, CAST, WHERE
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, STACK
from ..shape.index import INDEX_SELECT, emit_slice, torch_slice_bounds
from ..sort import SORT

__all__ = ["zeros_of"]


def zeros_of(call, ttype):
    """Zeros of ``ttype`` (a TensorType): one stored 0-d zero, broadcast to the shape."""
    store = "float32" if ttype.dtype == "bfloat16" else ttype.dtype
    zero = call.const(np.zeros((), dtype=store), "zero")
    if store != ttype.dtype:
        zero = call.emit(CAST, [zero], {"dtype": ttype.dtype})
    return zero if ttype.shape == () else call.emit(EXPAND, [zero], {"shape": ttype.shape})


@imports("torch", "aten::view_copy", "aten::_reshape_copy", "aten::squeeze_copy", "aten::unsqueeze_copy")
def _view_copy_from_aten(call):
    """A reshape to torch's recorded shape; ``view_copy(x, dtype)`` reads the same bits as another dtype."""
    x, out = call.arg("self"), call.out_type()
    if out.dtype != x.type.dtype:
        return call.emit(BITCAST, [x], {"dtype": out.dtype})
    return x if out.shape == x.type.shape else call.emit(RESHAPE, [x], {"shape": out.shape})


@imports("torch", "aten::permute_copy", "aten::transpose_copy", "aten::t_copy")
def _permute_copy_from_aten(call):
    x = call.arg("self")
    rank, name = x.type.rank, call.node.target._schema.name
    perm = list(range(rank))
    if name == "aten::permute_copy":
        perm = [norm_axis(d, rank) for d in call.arg("dims")]
    elif rank == 2 or name == "aten::transpose_copy":
        a = norm_axis(call.arg("dim0", 0), rank)
        b = norm_axis(call.arg("dim1", 1), rank)
        perm[a], perm[b] = perm[b], perm[a]
    return x if perm == list(range(rank)) else call.emit(PERMUTE, [x], {"perm": tuple(perm)})


@imports("torch", "aten::expand_copy")
def _expand_copy_from_aten(call):
    x, shape = call.arg("self"), call.out_type().shape
    return x if shape == x.type.shape else call.emit(EXPAND, [x], {"shape": shape})


@imports("torch", "aten::alias_copy")
def _alias_copy_from_aten(call):
    return call.arg("self")



@imports("torch", "aten::narrow_copy", "aten::slice_copy")
def _narrow_copy_from_aten(call):
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    size = x.type.shape[axis]
    if call.node.target._schema.name == "aten::slice_copy":
        step = call.arg("step", 1)
        if step < 1:
            call.unsupported(f"slice step {step}: torch needs a positive step")
        start, end = torch_slice_bounds(size, call.arg("start"), call.arg("end"))
        return emit_slice(call, x, axis, start, end, step)
    start = call.arg("start")
    start = start + size if start < 0 else start
    return emit_slice(call, x, axis, start, start + call.arg("length"))


@imports("torch", "aten::copy")
def _copy_from_aten(call):
    """``copy(self, src)``, the functional ``self.copy_(src)``: ``src`` in ``self``'s dtype, broadcast to its shape."""
    src, out = call.arg("src"), call.out_type()
    if src.type.dtype != out.dtype:
        src = call.emit(CAST, [src], {"dtype": out.dtype})
    return src if src.type.shape == out.shape else call.emit(EXPAND, [src], {"shape": out.shape})


@imports("torch", "aten::new_empty_strided")
def _new_empty_strided_from_aten(call):
    """Uninitialized memory in torch: zeros here (its contents are no one's to read)."""
    return zeros_of(call, call.out_type())


@imports("torch", "aten::resize")
def _resize_from_aten(call):
    """``resize(x, size)``: the first elements of ``x`` in row-major order, then zeros where torch leaves new
    memory uninitialized."""
    x, out = call.arg("self"), call.out_type()
    have, want = math.prod(x.type.shape), math.prod(out.shape)
    if out.shape == x.type.shape:
        return x
    if 0 in (have, want):
        call.unsupported("resize to or from zero elements")
    flat = x if x.type.rank == 1 else call.emit(RESHAPE, [x], {"shape": (have,)})
    if want < have:
        flat = emit_slice(call, flat, 0, 0, want)
    elif want > have:
        flat = call.emit(CONCAT, [flat, zeros_of(call, flat.type.with_shape((want - have,)))], {"axis": 0})
    return flat if out.shape == (want,) else call.emit(RESHAPE, [flat], {"shape": out.shape})


@imports("torch", "aten::combinations")
def _combinations_from_aten(call):
    """C(n, r) rows read from a 1-D ``x`` with a constant index table (Note [static sizes] in torch_dynamic.py)."""
    x, r = call.arg("self"), call.arg("r", 2)
    pick = itertools.combinations_with_replacement if call.arg("with_replacement", False) else \
        itertools.combinations
    table = np.array(list(pick(range(x.type.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if table.size == 0:
        call.unsupported(f"combinations with r={r} of {x.type.shape[0]} elements is empty")
    return call.emit(INDEX_SELECT, [x, call.const(table, "combinations")], {"axis": 0})


@imports("torch", "aten::nonzero_static")
def _nonzero_static_from_aten(call):
    """The coordinates of the first ``size`` nonzeros in row-major order, ``fill_value`` rows after them."""
    x, size, fill = call.arg("self"), call.arg("size"), call.arg("fill_value", -1)
    shape, out = x.type.shape, call.out_type()
    n = math.prod(shape)
    if not shape or size == 0:
        call.unsupported("nonzero_static of a 0-d tensor or with size=0 (a zero-size result)")
    flat = x if x.type.rank == 1 else call.emit(RESHAPE, [x], {"shape": (n,)})
    mask = flat if flat.type.dtype == "bool" else call.emit(
        BINARY["ne"], [flat, call.const(np.zeros((), dtype="float32" if x.type.dtype == "bfloat16" else
                                                  x.type.dtype), "zero")])
    end = call.const(np.array(n, dtype=np.int32), "end")
    keys = call.emit(WHERE, [mask, call.const(np.arange(n, dtype=np.int32), "positions"), end])
    keys = call.emit(SORT, [keys], {"axis": 0})[0]
    if size < n:
        keys = emit_slice(call, keys, 0, 0, size)
    elif size > n:
        keys = call.emit(CONCAT, [keys, call.const(np.full(size - n, n, dtype=np.int32), "padding")], {"axis": 0})
    found = call.emit(RESHAPE, [call.emit(BINARY["lt"], [keys, end])], {"shape": (size, 1)})
    columns, stride = [], n
    for dim in shape:
        stride //= dim
        column = keys
        if stride != 1:
            column = call.emit(BINARY["div"], [column, call.const(np.array(stride, np.int32), "stride")],
                               {"rounding_mode": "floor"})
        if stride * dim != n:
            column = call.emit(BINARY["remainder"], [column, call.const(np.array(dim, np.int32), "dim")])
        columns.append(column)
    coords = call.emit(STACK, columns, {"axis": 1})
    coords = call.emit(CAST, [coords], {"dtype": out.dtype})
    return call.emit(WHERE, [found, coords, call.const(np.array(fill, dtype=out.dtype), "fill")])
