"""Row-form building blocks shared by the scatter family's import rules (torch and JAX).

``scatter_rows`` writes (N, k) coordinate rows into x with any of torch's reductions; the helpers
around it wrap negative indices, fill tensors with a constant and turn an element-wise index
(torch ``scatter``: one index per update) into rows. Nothing here is torch- or JAX-specific: a rule
passes its ``call`` (TorchCall or JaxCall), which both offer ``emit``, ``const`` and ``unsupported``.

Example:
    >>> y = scatter_rows(call, x, rows, updates, "amax", include_self=False)
"""
from __future__ import annotations

import math

import numpy as np

from .._util import kind
from ..elementwise import BINARY, CAST, WHERE
from ..shape import EXPAND, RESHAPE
from ..shape.index import SCATTER
from ..scatter import SCATTER_REDUCE, identity_of

__all__ = ["scatter_rows", "filled", "wrapped", "known", "element_rows", "reshaped", "masked_put"]


def reshaped(call, x, shape):
    """``reshape(x)`` unless it already has ``shape``."""
    shape = tuple(int(s) for s in shape)
    return x if x.type.shape == shape else call.emit(RESHAPE, [x], {"shape": shape})


def known(call, value):
    """The array behind ``value`` when the conversion knows it (a buffer, a folded constant), else None."""
    lookup = getattr(call, "constant", None)
    return lookup(value) if lookup is not None else None


def filled(call, number, dtype, shape):
    """A tensor of ``shape`` holding ``number`` (a stored scalar, expanded)."""
    one = call.const(np.full((1,) * len(shape), number, dtype="float32" if dtype == "bfloat16" else dtype), "fill")
    if dtype == "bfloat16":
        one = call.emit(CAST, [one], {"dtype": dtype})
    return one if tuple(shape) == one.type.shape else call.emit(EXPAND, [one], {"shape": tuple(shape)})


def wrapped(call, index, size):
    """``index`` as int64 with negative entries counted from the end of an axis of ``size``."""
    array = known(call, index)
    if array is not None:
        return call.const(np.where(array < 0, array + size, array).astype(np.int64), "index")
    if index.type.dtype != "int64":
        index = call.emit(CAST, [index], {"dtype": "int64"})
    negative = call.emit(BINARY["lt"], [index, call.const(np.array(0, np.int64), "zero")])
    return call.emit(WHERE, [negative, call.emit(BINARY["add"], [index, call.const(np.array(size, np.int64),
                                                                                     "size")]), index])


def element_rows(call, x, axis, index):
    """(rows (N, rank), N) for an element-wise index on ``axis`` (torch ``scatter``/``gather``): each entry's
    coordinates are its own position, with the index value on ``axis``. Folded in NumPy when the index is known."""
    shape, rank = tuple(index.type.shape), x.type.rank
    n = math.prod(shape)
    grids = np.indices(shape, dtype=np.int64).reshape(rank, n).T
    index = wrapped(call, index, x.type.shape[axis])
    array = known(call, index)
    if array is not None:
        grids[:, axis] = array.reshape(n)
        return call.const(grids, "rows"), n
    mask = np.zeros((1, rank), np.int64)
    mask[0, axis] = 1
    column = reshaped(call, index, (n, 1))
    picked = call.emit(BINARY["mul"], [column, call.const(mask, "axis_mask")])
    grids[:, axis] = 0
    return call.emit(BINARY["add"], [picked, call.const(grids, "grid")]), n


def _counts(call, x, rows, updates, base):
    ones = filled(call, 1, x.type.dtype, updates.type.shape)
    return call.emit(SCATTER, [filled(call, base, x.type.dtype, x.type.shape), rows, ones], {"accumulate": True})


def scatter_rows(call, x, rows, updates, reduce, include_self=True):
    """x with ``updates`` (N, *rest) combined in at ``rows`` (N, k): reduce ``set``, ``sum``, ``prod``,
    ``amax``, ``amin`` or ``mean`` (torch's ``scatter_reduce`` meaning; ``include_self=False`` first resets
    the written positions to the reduction's identity, and a mean then counts only the updates)."""
    if updates.type.dtype != x.type.dtype:
        updates = call.emit(CAST, [updates], {"dtype": x.type.dtype})
    if reduce == "mean" and kind(x.type.dtype) != 2:
        call.unsupported(f"mean scatter of {x.type.dtype} (integer means round in torch); cast to float first")
    base = x
    if not include_self and reduce != "set":
        fill = filled(call, identity_of(reduce, x.type.dtype), x.type.dtype, updates.type.shape)
        base = call.emit(SCATTER, [x, rows, fill], {"accumulate": False})
    if reduce in ("set", "sum", "mean"):
        total = call.emit(SCATTER, [base, rows, updates], {"accumulate": reduce != "set"})
        if reduce != "mean":
            return total
        count = _counts(call, x, rows, updates, 1 if include_self else 0)
        count = call.emit(BINARY["maximum"], [count, call.const(np.array(1, x.type.dtype), "one")])
        return call.emit(BINARY["div"], [total, count])
    if reduce not in ("prod", "amax", "amin"):
        call.unsupported(f"scatter reduction {reduce!r}")
    return call.emit(SCATTER_REDUCE, [base, rows, updates], {"reduce": reduce})


def masked_put(call, x, indices, values, accumulate=False):
    """``x[mask] = v`` with one boolean mask and a single value: ``where(mask, v, x)`` (static shape).

    Several values (``x[mask] = t[mask]``) would be written in an order only the data knows: refused,
    naming the static form.
    """
    present = [(slot, v) for slot, v in enumerate(indices) if v is not None]
    if len(present) != 1 or present[0][1].type.dtype not in ("bool", "uint8") or math.prod(values.type.shape) != 1:
        call.unsupported("index_put with a boolean mask and several values (a data-dependent number of writes); "
                         "write torch.where(mask, v, x) with v shaped like x")
    slot, mask = present[0]
    if mask.type.dtype != "bool":
        mask = call.emit(CAST, [mask], {"dtype": "bool"})
    mask = reshaped(call, mask, (1,) * slot + mask.type.shape + (1,) * (x.type.rank - slot - mask.type.rank))
    value = values if values.type.dtype == x.type.dtype else call.emit(CAST, [values], {"dtype": x.type.dtype})
    value = reshaped(call, value, ())
    if accumulate:
        zero = call.const(np.zeros((), x.type.dtype if x.type.dtype != "bfloat16" else "float32"), "zero")
        zero = zero if zero.type.dtype == x.type.dtype else call.emit(CAST, [zero], {"dtype": x.type.dtype})
        return call.emit(BINARY["add"], [x, call.emit(WHERE, [mask, value, zero])])
    return call.emit(WHERE, [mask, value, x])
