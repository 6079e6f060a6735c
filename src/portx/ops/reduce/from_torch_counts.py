"""ATen import rules for counting reductions: mode, histc, histogram, histogramdd and segment_reduce.

All of them have static output shapes (a bin count, a segment table held as a constant), so each is
built from comparisons and plain reductions:

- ``mode``: every element's count of equal elements along ``dim`` (an n x n comparison); the mode is
  the smallest value of the highest count and its index the last position holding it, torch's rule.
- histograms: each element's bin (``pos``, a float) is compared with every bin number and the
  matches are summed, weighted when a weight is given. ``histc`` finds the bin by linear
  interpolation, ``(x - lo) * bins / (hi - lo)``, as torch does; ``histogram`` and ``histogramdd``
  count the bin edges at or below the element (torch's search on its edges, which are
  ``linspace(lo, hi, bins + 1)`` computed the way torch computes them). The range defaults to the
  data's min and max, widened by 1 (histc) or 0.5 (histogram) on each side when they are equal.
- ``segment_reduce``: the lengths (or offsets) are constants, so the segments are a constant
  (segments x elements) mask over which a masked sum, prod, max, min or mean runs.

Example:
    aten::histc(%x, 4, 0, 1) -> sum(cast(eq(min(floor((x - 0) * 4 / 1), 3), [0, 1, 2, 3]) & in_range)) {axes=(0,)}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from .._util import kind, norm_axis
from ..elementwise import CAST, WHERE, scalar_const, emit_binary as _op
from ..elementwise.unary import UNARY
from ..reduce import REDUCE
from ..shape.from_keras_ops import reshape_to
from ..shape.index import SELECT, SLICE

__all__ = []


def _num(call, name, x, number):
    return _op(call, name, x, scalar_const(call, number, x))


def _reduce(call, name, x, axes, keepdims=False):
    return call.emit(REDUCE[name], [x], {"axes": tuple(axes), "keepdims": keepdims})


def _extreme(dtype, largest):
    """The value no element exceeds (``largest``) or undercuts, in ``dtype``."""
    if kind(dtype) == 2:
        return np.inf if largest else -np.inf
    if dtype == "bool":
        return largest
    info = np.iinfo(dtype)
    return info.max if largest else info.min


def _fill(call, x, number):
    return call.const(np.array(number, dtype=x.type.dtype), "fill")


# -- mode --------------------------------------------------------------------------------------------
@imports("torch", "aten::mode")
def _mode_from_aten(call):
    """(values, indices): the smallest of the most frequent values along ``dim`` and its last position."""
    x, keepdim = call.arg("self"), bool(call.arg("keepdim", False))
    if not x.type.rank:
        return [x, call.const(np.array(0, np.int64), "index")]
    axis, shape = norm_axis(call.arg("dim", -1), x.type.rank), tuple(x.type.shape)
    n = shape[axis]
    rows = reshape_to(call, x, shape[:axis + 1] + (1,) + shape[axis + 1:])
    cols = reshape_to(call, x, shape[:axis] + (1,) + shape[axis:])
    counts = _reduce(call, "sum", _op(call, "eq", rows, cols), [axis + 1])
    most = _op(call, "eq", counts, _reduce(call, "amax", counts, [axis], True))
    values = _reduce(call, "amin", call.emit(WHERE, [most, x, _fill(call, x, _extreme(x.type.dtype, True))]),
                     [axis], True)
    positions = call.const(np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (x.type.rank - axis - 1)), "positions")
    held = call.emit(WHERE, [_op(call, "eq", x, values), positions, call.const(np.array(-1, np.int64), "none")])
    indices = _reduce(call, "amax", held, [axis], keepdim)
    return [values if keepdim else reshape_to(call, values, shape[:axis] + shape[axis + 1:]), indices]


# -- histograms --------------------------------------------------------------------------------------
def _flat(call, x):
    return reshape_to(call, x, (int(np.prod(x.type.shape, dtype=np.int64)),))


def _outer_edges(call, x, lo, hi, widen):
    """(lo, hi) as 0-d values: the given range, or ``x``'s min and max moved apart by ``widen`` when equal."""
    if lo is not None and float(lo) != float(hi):
        return scalar_const(call, float(lo), x), scalar_const(call, float(hi), x)
    if lo is not None:
        return scalar_const(call, float(lo) - widen, x), scalar_const(call, float(hi) + widen, x)
    lo, hi = _reduce(call, "amin", x, [0]), _reduce(call, "amax", x, [0])
    same = _op(call, "eq", lo, hi)
    return (call.emit(WHERE, [same, _num(call, "sub", lo, widen), lo]),
            call.emit(WHERE, [same, _num(call, "add", hi, widen), hi]))


def _linspace(call, lo, hi, steps):
    """torch.linspace(lo, hi, steps): ``lo + step * i`` for the first half, ``hi - step * (steps - 1 - i)`` after."""
    dtype = lo.type.dtype
    step = _num(call, "div", _op(call, "sub", hi, lo), float(steps - 1))
    i = np.arange(steps)
    up = _op(call, "add", lo, _op(call, "mul", step, call.const(i.astype(dtype), "i")))
    down = _op(call, "sub", hi, _op(call, "mul", step, call.const((steps - 1 - i).astype(dtype), "rest")))
    return call.emit(WHERE, [call.const(i < steps // 2, "first_half"), up, down])


def _in_range(call, x, lo, hi):
    """``lo <= x <= hi`` (False for NaN)."""
    return _op(call, "logical_and", _op(call, "ge", x, lo), _op(call, "le", x, hi))


def _bin_of(call, x, edges, bins):
    """Each element's bin (float): the number of inner edges at or below it (torch's upper_bound, last bin closed)."""
    inner = call.emit(SLICE, [edges], {"axis": 0, "start": 1, "end": bins, "step": 1})
    at_or_below = _op(call, "ge", reshape_to(call, x, x.type.shape + (1,)), reshape_to(call, inner, (1, bins - 1)))
    return _reduce(call, "sum", call.emit(CAST, [at_or_below], {"dtype": x.type.dtype}), [1])


def _counts(call, pos, valid, total, weight):
    """Per-bin sum of ``weight`` (or 1) over the elements with ``valid`` and ``pos`` equal to the bin number."""
    dtype = pos.type.dtype
    hit = _op(call, "eq", reshape_to(call, pos, pos.type.shape + (1,)),
              call.const(np.arange(total, dtype=dtype).reshape(1, total), "bins"))
    hit = call.emit(CAST, [_op(call, "logical_and", hit, reshape_to(call, valid, valid.type.shape + (1,)))],
                    {"dtype": dtype})
    if weight is not None:
        hit = _op(call, "mul", hit, reshape_to(call, weight, (pos.type.shape[0], 1)))
    return _reduce(call, "sum", hit, [0])


def _widths(call, edges, bins):
    cut = [call.emit(SLICE, [edges], {"axis": 0, "start": a, "end": a + bins, "step": 1}) for a in (0, 1)]
    return _op(call, "sub", cut[1], cut[0])


def _density(call, hist, edge_list):
    """hist / its sum / each bin's volume (torch's ``density=True``)."""
    hist = _op(call, "div", hist, _reduce(call, "sum", hist, range(hist.type.rank)))
    for d, edges in enumerate(edge_list):
        bins = hist.type.shape[d]
        shape = (1,) * d + (bins,) + (1,) * (hist.type.rank - d - 1)
        hist = _op(call, "div", hist, reshape_to(call, _widths(call, edges, bins), shape))
    return hist


@imports("torch", "aten::histc")
def _histc_from_aten(call):
    """``torch.histc``: bins by linear interpolation between the outer edges, the last bin closed."""
    x, bins = call.arg("self"), int(call.arg("bins", 100))
    flat, low, high = _flat(call, x), call.arg("min", 0), call.arg("max", 0)
    lo, hi = _outer_edges(call, flat, *((low, high) if low != high else (None, None)), widen=1.0)
    scaled = _op(call, "div", _num(call, "mul", _op(call, "sub", flat, lo), float(bins)), _op(call, "sub", hi, lo))
    pos = _num(call, "minimum", call.emit(UNARY["floor"], [scaled]), float(bins - 1))
    return _counts(call, pos, _in_range(call, flat, lo, hi), bins, None)


def _edges_of(call, column, bins, limits):
    lo, hi = _outer_edges(call, column, *(limits or (None, None)), widen=0.5)
    return _linspace(call, lo, hi, bins + 1)


def _histogram_dd(call, x, edge_list, weight, density):
    """The D-dimensional histogram of the rows of ``x`` (..., D) over per-dimension ``edge_list``."""
    d = len(edge_list)
    rows = reshape_to(call, x, (int(np.prod(x.type.shape[:-1], dtype=np.int64)), d))
    sizes = [e.type.shape[0] - 1 for e in edge_list]
    index, valid = None, None
    for k, (edges, bins) in enumerate(zip(edge_list, sizes)):
        column = call.emit(SELECT, [rows], {"axis": 1, "index": k})
        first, last = (call.emit(SELECT, [edges], {"axis": 0, "index": i}) for i in (0, bins))
        pos = _num(call, "mul", _bin_of(call, column, edges, bins), float(np.prod(sizes[k + 1:], dtype=np.int64)))
        inside = _in_range(call, column, first, last)
        index = pos if index is None else _op(call, "add", index, pos)
        valid = inside if valid is None else _op(call, "logical_and", valid, inside)
    hist = reshape_to(call, _counts(call, index, valid, int(np.prod(sizes)), weight), tuple(sizes))
    return _density(call, hist, edge_list) if density else hist


def _limits(call, d):
    span = call.arg("range")
    return [None] * d if span is None else [(span[2 * k], span[2 * k + 1]) for k in range(d)]


@imports("torch", "aten::histogram")
def _histogram_from_aten(call):
    """``torch.histogram``: (hist, bin_edges); ``bins`` is a bin count (edges spanning the range) or the edges."""
    x, bins, weight = call.arg("self"), call.arg("bins", 100), call.arg("weight")
    flat = _flat(call, x)
    edges = bins if hasattr(bins, "type") else _edges_of(call, flat, int(bins), _limits(call, 1)[0])
    column = reshape_to(call, flat, flat.type.shape + (1,))
    return [_histogram_dd(call, column, [edges], weight, bool(call.arg("density", False))), edges]


@imports("torch", "aten::_histogramdd_bin_edges")
def _histogramdd_edges_from_aten(call):
    """The D edge tensors of ``torch.histogramdd`` with bin counts."""
    x, bins = call.arg("self"), [int(b) for b in call.arg("bins")]
    rows = reshape_to(call, x, (int(np.prod(x.type.shape[:-1], dtype=np.int64)), len(bins)))
    return [_edges_of(call, call.emit(SELECT, [rows], {"axis": 1, "index": k}), b, span)
            for k, (b, span) in enumerate(zip(bins, _limits(call, len(bins))))]


@imports("torch", "aten::_histogramdd_from_bin_cts", "aten::_histogramdd_from_bin_tensors")
def _histogramdd_from_aten(call):
    """The hist of ``torch.histogramdd``, with bin counts (edges as ``_histogramdd_bin_edges``) or edge tensors."""
    x, bins = call.arg("self"), call.arg("bins")
    if call.node.target._schema.name.endswith("bin_cts"):
        edge_list = _histogramdd_edges_from_aten(call)
    else:
        edge_list = list(bins)
    return _histogram_dd(call, x, edge_list, call.arg("weight"), bool(call.arg("density", False)))


# -- segment_reduce -----------------------------------------------------------------------------------
_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0}
_REDUCER = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "amax", "min": "amin"}
_COMBINE = {"sum": "add", "mean": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def _segment_lengths(call):
    lengths, offsets = call.arg("lengths"), call.arg("offsets")
    given = lengths if lengths is not None else offsets
    array = call.constant(given) if given is not None else None
    if array is None:
        call.unsupported("segment_reduce with lengths or offsets computed at run time (segments must be constants)")
    array = np.asarray(array.numpy() if hasattr(array, "numpy") else array).astype(np.int64)
    return array if lengths is not None else np.diff(array, axis=-1)


@imports("torch", "aten::segment_reduce")
def _segment_reduce_from_aten(call):
    """Reduce consecutive segments along ``axis``; ``initial`` joins every segment (and fills empty ones)."""
    data, reduce, initial = call.arg("data"), call.arg("reduce"), call.arg("initial")
    if reduce not in _REDUCER:
        call.unsupported(f"segment_reduce with reduce={reduce!r}")
    lengths = _segment_lengths(call)
    axis = norm_axis(call.arg("axis", 0), data.type.rank)
    shape, segments = tuple(data.type.shape), lengths.shape[-1]
    ends = np.cumsum(lengths, axis=-1)
    position = np.arange(shape[axis])
    mask = (position >= (ends - lengths)[..., None]) & (position < ends[..., None])  # (*batch, S, N)
    mask = mask.reshape(mask.shape + (1,) * (data.type.rank - axis - 1))
    spread = reshape_to(call, data, shape[:axis] + (1,) + shape[axis:])
    fill = _IDENTITY.get(reduce, _extreme(data.type.dtype, reduce == "min"))
    picked = call.emit(WHERE, [call.const(mask, "segments"), spread, _fill(call, data, fill)])
    out = _reduce(call, _REDUCER[reduce], picked, [axis + 1])
    if initial is not None:
        out = _num(call, _COMBINE[reduce], out, initial)
    if reduce == "mean":
        count = np.where((lengths == 0) & (initial is not None), 1, lengths).astype(data.type.dtype)
        out = _op(call, "div", out, call.const(count.reshape(count.shape + (1,) * (data.type.rank - axis - 1)),
                                                "counts"))
    return out
