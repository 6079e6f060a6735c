"""The indices of a max pool (``max_pool2d(..., return_indices=True)``), built from ops every target has.

Note [max pool indices]: torch returns, for each window, the flat index into the input's spatial
plane (``h * W + w`` in 2-d) of its first maximum, scanning the window in row-major order. The
window's taps, in that same order, are strided slices of the input padded with ``-inf``; stacked
on a new last axis, ``argmax`` picks the first maximal tap (torch's tie-break). A constant table
holds, for every tap and output position, the flat input index that tap reads, and a ``gather``
along the tap axis turns the chosen tap into torch's index. Nothing here depends on a target:
the import rule emits ``pad``, ``slice``, ``stack``, ``argmax``, ``expand``, ``gather`` and
``reshape`` nodes. Adaptive bins are uneven, so there a tap is an ``index_select`` per axis with
the bin tables of ``adaptive.py`` (short bins repeat their last index, which argmax never prefers).

Example IR (2x2 windows, stride 2, on a 1x1x4x4 input):
    %taps: float32[1x1x2x2x4] = stack(%t0, %t1, %t2, %t3) {axis=4}
    %tap: int64[1x1x2x2x1] = argmax(%taps) {axis=4, keepdims=True}
    %i: int64[1x1x2x2x1] = gather(%table, %tap) {axis=4}
"""
from __future__ import annotations

import itertools

import numpy as np

from ..pad import PAD
from ..reduce import ARGMAX
from ..shape import EXPAND, RESHAPE, STACK
from ..shape.index import GATHER, INDEX_SELECT, emit_slice
from . import end_pad
from .adaptive import padded_bin_table

__all__ = ["tap_offsets", "tap_index_table", "max_pool_indices", "adaptive_max_pool_indices", "MAX_TAPS"]

#: the most window positions an adaptive pool's indices are built from (one slice each)
MAX_TAPS = 256


def tap_offsets(kernel, dilation) -> list:
    """Each tap's offset within the window, row-major: ``tap_offsets((2, 2), (1, 1))`` -> ``[(0, 0), (0, 1), ...]``."""
    return list(itertools.product(*[range(0, d * k, d) for k, d in zip(kernel, dilation)]))


def tap_index_table(in_spatial, out, kernel, stride, pads, dilation) -> np.ndarray:
    """(*out, taps) int64: the flat input index each tap reads at each output position (Note [max pool indices]).

    Example: ``tap_index_table((4,), (2,), (2,), (2,), ((0, 0),), (1,))`` -> ``[[0, 1], [2, 3]]``.
    """
    grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
    columns = []
    for offset in tap_offsets(kernel, dilation):
        coords = [g * s - p[0] + o for g, s, p, o in zip(grids, stride, pads, offset)]
        columns.append(np.ravel_multi_index(coords, in_spatial, mode="clip"))
    return np.stack(columns, axis=-1).astype(np.int64)


def _indices_from_taps(call, x, taps, table, out):
    """Stack the taps, pick the first maximal one, and read its flat index from ``table`` (*out, taps)."""
    lead, axis = x.type.shape[:x.type.rank - len(out)], x.type.rank
    stacked = call.emit(STACK, taps, {"axis": axis})
    chosen = call.emit(ARGMAX, [stacked], {"axis": axis, "keepdims": True})
    table = call.const(table.reshape((1,) * len(lead) + table.shape), "tap_index")
    table = call.emit(EXPAND, [table], {"shape": stacked.type.shape})
    picked = call.emit(GATHER, [table, chosen], {"axis": axis})
    return call.emit(RESHAPE, [picked], {"shape": tuple(lead) + tuple(out)})


def max_pool_indices(call, x, kernel, stride, pads, dilation, out):
    """Emit torch's max-pool indices for ``x`` (N, C, *spatial) with the windows given; returns the int64 Value."""
    rank = len(kernel)
    lead, in_spatial = x.type.shape[:-rank], x.type.shape[-rank:]
    ends = [end_pad(n, k, s, p[0], d, o) for n, k, s, p, d, o in zip(in_spatial, kernel, stride, pads, dilation, out)]
    widths = ((0, 0),) * len(lead) + tuple((p[0], e) for p, e in zip(pads, ends))
    padded = x if not any(any(w) for w in widths) else \
        call.emit(PAD, [x], {"pads": widths, "mode": "constant", "value": float("-inf")})
    taps = []
    for offset in tap_offsets(kernel, dilation):
        tap = padded
        for i, (o, s, n) in enumerate(zip(offset, stride, out)):
            tap = emit_slice(call, tap, len(lead) + i, o, o + s * (n - 1) + 1, s)
        taps.append(tap)
    table = tap_index_table(in_spatial, out, kernel, stride, pads, dilation)
    return _indices_from_taps(call, x, taps, table, out)


def adaptive_max_pool_indices(call, x, size):
    """torch's indices of an adaptive max pool of ``x`` (N, C, *spatial) to ``size``; the int64 Value."""
    rank = len(size)
    first, in_spatial = x.type.rank - rank, x.type.shape[-rank:]
    bins = [padded_bin_table(n, o) for n, o in zip(in_spatial, size)]
    offsets = list(itertools.product(*[range(b.shape[1]) for b in bins]))
    if len(offsets) > MAX_TAPS:
        call.unsupported(f"the indices of adaptive max pooling with {len(offsets)} positions per bin (at most "
                         f"{MAX_TAPS}): pool to a larger output size or use the values only")
    taps, columns = [], []
    for offset in offsets:
        tap = x
        for i, (b, j) in enumerate(zip(bins, offset)):
            tap = call.emit(INDEX_SELECT, [tap, call.const(b[:, j].astype(np.int32), "bin")], {"axis": first + i})
        taps.append(tap)
        grids = np.meshgrid(*[b[:, j] for b, j in zip(bins, offset)], indexing="ij")
        columns.append(np.ravel_multi_index(grids, in_spatial))
    return _indices_from_taps(call, x, taps, np.stack(columns, axis=-1).astype(np.int64), tuple(size))
