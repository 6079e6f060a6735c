"""keras.ops sorting and running ops in functional graphs: ``ops.sort``, ``ops.argsort``, ``ops.top_k``,
``ops.cumprod``, ``ops.searchsorted``, ``ops.median`` (a sort, the middle value or two, their mean).

Indices come back in the dtype Keras records (int32 on JAX). ``axis=None`` (the flattened tensor) runs across
the batch and is refused on tensors of rank > 1, as ``ops.cumsum`` is.

Example:
    >>> v, i = keras.ops.top_k(x, 2)   # recorded as ops.TopK -> IR: topk(%x) {k=2, axis=-1}
"""
from __future__ import annotations

import numpy as np

from .._util import norm_axis
from ..elementwise import BINARY
from ..elementwise.from_keras_ops import cast_to, keras_number, out_dtype
from ..shape.index import SELECT, SLICE
from ..sort import SCANS, SEARCHSORTED, SORT, TOPK

__all__ = []


def _axis(call, x, axis):
    if axis is None and x.type.rank != 1:
        call.unsupported(f"{call.layer.__class__.__name__.lower()} with axis=None on a batch (it runs across "
                         f"samples); give an axis")
    return norm_axis(0 if axis is None else int(axis), x.type.rank)


@SORT.imports("keras", "ops.Sort", "ops.Argsort")
def _sort_from_keras(call):
    x = call.inputs[0]
    values, indices = call.emit(SORT, [x], {"axis": _axis(call, x, call.layer.axis)})
    return values if type(call.layer).__name__ == "Sort" else cast_to(call, indices, out_dtype(call))


@TOPK.imports("keras", "ops.TopK")
def _top_k_from_keras(call):
    x = call.inputs[0]
    values, indices = call.emit(TOPK, [x], {"k": int(call.layer.k), "axis": x.type.rank - 1})
    return [values, cast_to(call, indices, out_dtype(call, 1))]


@SCANS["cumprod"].imports("keras", "ops.Cumprod")
def _cumprod_from_keras(call):
    x = cast_to(call, call.inputs[0], out_dtype(call))
    return call.emit(SCANS["cumprod"], [x], {"axis": _axis(call, x, call.layer.axis)})


@SEARCHSORTED.imports("keras", "ops.SearchSorted")
def _searchsorted_from_keras(call):
    sequence, values = (v if hasattr(v, "type") else keras_number(call, np.asarray(v), str(np.asarray(v).dtype), hint)
                        for v, hint in zip(call.operands(2), ("sorted_sequence", "values")))
    if sequence.type.rank != 1:
        call.unsupported("ops.searchsorted with an N-D sorted sequence (only 1-D)")
    out = call.emit(SEARCHSORTED, [sequence, values], {"right": call.layer.side == "right", "dtype": "int64"})
    return cast_to(call, out, out_dtype(call))


@SORT.imports("keras", "ops.Median")
def _median_from_keras(call):
    """``jnp.median`` along one axis: the middle of the sorted values, the mean of the two middle ones for even n."""
    x, axis = call.inputs[0], call.layer.axis
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            call.unsupported("ops.median over several axes")
        axis = axis[0]
    x = cast_to(call, x, out_dtype(call))
    axis = _axis(call, x, axis)
    values, _ = call.emit(SORT, [x], {"axis": axis})
    n = x.type.shape[axis]
    keep = bool(call.layer.keepdims)
    middle = [call.emit(SLICE, [values], {"axis": axis, "start": i, "end": i + 1}) if keep else
              call.emit(SELECT, [values], {"axis": axis, "index": i}) for i in sorted({(n - 1) // 2, n // 2})]
    out = middle[0]
    if len(middle) == 2:
        half = keras_number(call, 0.5, x.type.dtype, "half")
        out = call.emit(BINARY["mul"], [call.emit(BINARY["add"], middle), half])
    return out
