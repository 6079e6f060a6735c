"""Decompositions both targets need, written once as IR rewrites (Note [decompositions]).

Note [decompositions]: an algorithm that each target would otherwise write in its own dialect (a reversed
running op as flip, scan, flip) is one node rule here, applied to every graph by both pipelines before the op
tables' rules, so the emitters see only the plain form and never write it twice. Unlike a table rule it does
not depend on the target: the decomposition is what the op means, not what a TPU accepts. grid_sample is one:
neither Keras nor PyTorch/XLA has a TPU lowering of it, so both run torch's coordinate steps as IR ops
(``grid_sample_as_gathers``); so is unpacking LAPACK's row swaps into P, L, U (``lu`` and ``lu_unpack``), which
both frameworks trace with data-dependent slices, and LAPACK's cholesky ``info``, which neither XLA backend gives
(``cholesky_info``: Sylvester's criterion on the leading minors); so is a ``scatter_reduce`` at coordinates into
several axes, which both would flatten into one by the same row-major index (``scatter_rows_into_one_axis``). An
op always decomposed has the trait ``decomposed`` (ops/traits.py), and no emit rule. A decomposed node's outputs
keep their names; those its op declares error statuses (``OpDef.status_outputs``) are recorded in
``graph.meta["status_values"]`` by the driver (Note [status outputs] in driver.py), so verification still finds
them.

Example (before / after)::

    %y: float32[2x6] = cumsum(%x) {axis=1, reverse=True}
        ->
    %y_flip = flip(%x) {axes=(1,)}; %y_scan = cumsum(%y_flip) {axis=1}; %y = flip(%y_scan) {axes=(1,)}
"""
from __future__ import annotations

import math

import numpy as np

from ...ops.elementwise import BINARY, CAST, WHERE
from ...ops.elementwise.unary import UNARY
from ...ops.linalg import CHOLESKY_INFO, DET, LU, LU_FACTOR, LU_UNPACK
from ...ops.reduce import CUMSUM, REDUCE
from ...ops.resize.grid import GRID_SAMPLE, flat_index_terms, grid_corners, reflect_bounds
from ...ops.scatter import SCATTER_REDUCE
from ...ops.shape import EXPAND, PERMUTE, RESHAPE
from ...ops.shape.index import FLIP, GATHER, SELECT, SLICE
from ...ops.sort import SCANS

__all__ = ["DECOMPOSITIONS", "decomposition", "reverse_scan_as_flips", "grid_sample_as_gathers",
           "lu_as_factor_and_unpack", "lu_unpack_as_row_swaps", "cholesky_info_as_leading_minors",
           "scatter_rows_into_one_axis"]

#: op name -> the decompositions offered its nodes, in order
DECOMPOSITIONS: dict = {}


def decomposition(*ops):
    """Register a node rule (``rule(node, rw) -> bool``, as the table rules of ``rewriter.py``) for ``ops``."""
    def register(fn):
        fn.ops = ops
        for op in ops:
            DECOMPOSITIONS.setdefault(op.name, []).append(fn)
        return fn
    return register


@decomposition(CUMSUM, *SCANS.values())
def reverse_scan_as_flips(node, rw) -> bool:
    """A running op from the end of its axis: the same op on the flipped axis, flipped back.

    Before / after::

        %y: float32[2x6] = cummax(%x) {axis=1, reverse=True}
            ->
        %y_flip = flip(%x) {axes=(1,)}; %y_scan = cummax(%y_flip) {axis=1}; %y = flip(%y_scan) {axes=(1,)}
    """
    if not node.attrs["reverse"]:
        return False
    axes = (node.attrs["axis"],)
    flipped = rw.emit(FLIP, [node.inputs[0]], {"axes": axes}, hint="flip")
    scanned = rw.emit(node.op, [flipped], {**node.attrs, "reverse": False}, hint="scan")
    rw.result(rw.emit(FLIP, [scanned], {"axes": axes}, hint="back"))
    return True


_HINTS = ("ix", "iy", "iz")


class _Math:
    """Elementwise IR arithmetic on one rewrite's values, each number a 0-d constant of ``dtype`` (made once)."""

    def __init__(self, rw, dtype):
        self.rw, self.dtype, self.numbers = rw, dtype, {}

    def num(self, number):
        if number not in self.numbers:
            self.numbers[number] = self.rw.const(np.array(number, self.dtype), f"c{len(self.numbers)}")
        return self.numbers[number]

    def op(self, name, a, b, hint):
        """``BINARY[name]`` of two operands, each a Value or a Python number."""
        a, b = (v if hasattr(v, "type") else self.num(float(v)) for v in (a, b))
        return self.rw.emit(BINARY[name], [a, b], hint=hint)

    def unary(self, name, x, hint, **attrs):
        return self.rw.emit(UNARY[name], [x], attrs, hint=hint)


def _grid_coordinate(m, g, size, attrs, hint):
    """Pixel coordinate of the normalized grid values ``g`` along an axis of ``size`` (Note [grid sample])."""
    scale, shift = ((size - 1) / 2, 0.0) if attrs["align_corners"] else (size / 2, 0.5)
    c = m.op("mul", m.op("add", g, 1.0, f"{hint}_shift"), scale, hint)
    if shift:
        c = m.op("sub", c, shift, hint)
    if attrs["padding"] == "reflection":
        low, span = reflect_bounds(size, attrs["align_corners"])
        if span <= 0:
            c = m.rw.emit(EXPAND, [m.rw.emit(RESHAPE, [m.num(0.0)], {"shape": (1,) * c.type.rank}, f"{hint}_zero")],
                          {"shape": c.type.shape}, hint)
        else:
            dist = m.unary("abs", m.op("sub", c, low, f"{hint}_off"), f"{hint}_dist")
            flips = m.unary("floor", m.op("div", dist, span, f"{hint}_turns"), f"{hint}_flips")
            extra = m.op("sub", dist, m.op("mul", flips, span, f"{hint}_span"), f"{hint}_extra")
            even = m.op("eq", m.op("remainder", flips, 2.0, f"{hint}_parity"), 0.0, f"{hint}_even")
            c = m.rw.emit(WHERE, [even, m.op("add", extra, low, f"{hint}_up"),
                                  m.op("sub", span + low, extra, f"{hint}_down")], hint=hint)
    if attrs["padding"] != "zeros":
        c = m.unary("clamp", c, hint, min=0.0, max=float(size - 1))
    return c


def _grid_read(m, flat, coords, weight, spatial, points):
    """``flat`` (N, C, prod(spatial)) at the integer maps ``coords`` (one per spatial axis), times ``weight`` (None:
    1) and 0 outside the image: (N, C, points)."""
    inside = None
    for c, size in zip(coords, spatial):
        here = m.op("logical_and", m.op("ge", c, 0.0, "ge"), m.op("le", c, float(size - 1), "le"), "in")
        inside = here if inside is None else m.op("logical_and", inside, here, "inside")
    scale = m.rw.emit(CAST, [inside], {"dtype": coords[0].type.dtype}, hint="inside")
    if weight is not None:
        scale = m.op("mul", weight, scale, "scale")
    index = None
    for c, size, stride in flat_index_terms(coords, spatial):
        term = m.unary("clamp", c, "clip", min=0.0, max=float(size - 1))
        term = m.op("mul", term, float(stride), "stride") if stride > 1 else term
        index = term if index is None else m.op("add", index, term, "flat_index")
    rw, (n, channels) = m.rw, flat.type.shape[:2]
    index = rw.emit(RESHAPE, [rw.emit(CAST, [index], {"dtype": "int32"}, hint="index")], {"shape": (n, 1, points)},
                    hint="index")
    index = rw.emit(EXPAND, [index], {"shape": (n, channels, points)}, hint="index")
    scale = rw.emit(RESHAPE, [scale], {"shape": (n, 1, points)}, hint="scale")
    return m.op("mul", rw.emit(GATHER, [flat, index], {"axis": 2}, hint="gather"), scale, "value")


@decomposition(GRID_SAMPLE)
def grid_sample_as_gathers(node, rw) -> bool:
    """torch's grid_sample steps (Note [grid sample] in ops/resize/grid.py) for 2-d and 3-d inputs: a pixel
    coordinate per spatial axis, one flat gather per neighbour (2**k for linear, one for nearest), a weighted sum.

    Before / after (2-d, nearest, zeros; bilinear reads the four floor/floor + 1 neighbours)::

        %y: float32[1x3x5x6] = grid_sample(%x, %grid) {mode="nearest", padding="zeros", align_corners=False}
            ->
        %y_ix = sub(mul(add(select(%grid) {index=0}, 1.0), 3.0), 0.5); ... %y_iy ...
        %y_flat = reshape(%x) {shape=(1, 3, 30)}; %y_index = expand(reshape(cast(round(%y_iy) * 6 + round(%y_ix))))
        %y_value = mul(gather(%y_flat, %y_index) {axis=2}, %y_scale); %y = reshape(%y_value) {shape=(1, 3, 5, 6)}
    """
    (x, grid), attrs = node.inputs, node.attrs
    n, channels, spatial, out = x.type.shape[0], x.type.shape[1], tuple(x.type.shape[2:]), tuple(grid.type.shape[1:-1])
    rank, points, size = len(spatial), 1, 1
    for d in out:
        points *= d
    for d in spatial:
        size *= d
    m = _Math(rw, grid.type.dtype)
    coords = [_grid_coordinate(m, rw.emit(SELECT, [grid], {"axis": grid.type.rank - 1, "index": rank - 1 - axis},
                                          hint="g"), s, attrs, _HINTS[rank - 1 - axis])
              for axis, s in enumerate(spatial)]
    flat = rw.emit(RESHAPE, [x], {"shape": (n, channels, size)}, hint="flat")
    if attrs["mode"] == "nearest":
        terms = [_grid_read(m, flat, [m.unary("round", c, "round") for c in coords], None, spatial, points)]
    else:
        low = [m.unary("floor", c, f"{_HINTS[rank - 1 - axis]}0") for axis, c in enumerate(coords)]
        frac = [m.op("sub", c, lo, f"{_HINTS[rank - 1 - axis]}f") for axis, (c, lo) in enumerate(zip(coords, low))]
        terms = []
        for corner in grid_corners(rank):
            weight = None
            for f, d in zip(frac, corner):
                part = f if d else m.op("sub", 1.0, f, "rest")
                weight = part if weight is None else m.op("mul", weight, part, "weight")
            at = [m.op("add", lo, 1.0, "next") if d else lo for lo, d in zip(low, corner)]
            terms.append(_grid_read(m, flat, at, weight, spatial, points))
    total = terms[0]
    for term in terms[1:]:
        total = m.op("add", total, term, "sum")
    rw.result(rw.emit(RESHAPE, [total], {"shape": (n, channels, *out)}, hint="out"))
    return True


def _lu_unpacked(rw, lu, pivots) -> list:
    """P, L, U of packed ``lu`` (..., m, n) and 1-based ``pivots`` (..., min(m, n)) with static shapes: the row swaps
    are applied to arange(m) one at a time (perm), A[perm] = L U, so P = one_hot(perm)^T."""
    *batch, m, n = lu.type.shape
    size, last, dtype = min(m, n), lu.type.rank - 1, lu.type.dtype
    ints = _Math(rw, "int32")
    rows = rw.const(np.arange(m, dtype=np.int32), "rows")
    perm, swaps = rw.emit(EXPAND, [rows], {"shape": (*batch, m)}, hint="perm"), ints.op("sub", pivots, 1, "swaps")
    for j in range(size):
        swap = rw.emit(SLICE, [swaps], {"axis": last - 1, "start": j, "end": j + 1}, hint="swap")
        moved = rw.emit(GATHER, [perm, swap], {"axis": last - 1}, hint="moved")
        kept = rw.emit(SLICE, [perm], {"axis": last - 1, "start": j, "end": j + 1}, hint="kept")
        other = rw.emit(WHERE, [ints.op("eq", rows, swap, "at_swap"), kept, perm], hint="perm")
        perm = rw.emit(WHERE, [rw.const(np.arange(m) == j, f"row{j}"), moved, other], hint="perm")
    hot = ints.op("eq", rw.emit(RESHAPE, [perm], {"shape": (*batch, m, 1)}, hint="column"), rows, "hot")
    hot = rw.emit(CAST, [hot], {"dtype": dtype}, hint="hot")
    p = rw.emit(PERMUTE, [hot], {"perm": (*range(len(batch)), last, last - 1)}, hint="p")
    zero = rw.const(np.zeros((), dtype), "zero")
    left = lu if n == size else rw.emit(SLICE, [lu], {"axis": last, "start": 0, "end": size}, hint="left")
    below = rw.emit(WHERE, [rw.const(np.tri(m, size, -1, dtype=bool), "below"), left, zero], hint="below")
    lower = rw.emit(BINARY["add"], [below, rw.const(np.eye(m, size, dtype=dtype), "eye")], hint="l")
    top = lu if m == size else rw.emit(SLICE, [lu], {"axis": last - 1, "start": 0, "end": size}, hint="top")
    upper = rw.emit(WHERE, [rw.const(np.triu(np.ones((size, n), dtype=bool)), "upper"), top, zero], hint="u")
    return [p, lower, upper]


@decomposition(LU)
def lu_as_factor_and_unpack(node, rw) -> bool:
    """P, L, U from ``lu_factor`` (the factorization both targets have natively) and its unpacking.

    Before / after::

        %p, %l, %u = lu(%a)
            ->
        %p_lu, %p_lu_1 = lu_factor(%a); ... (lu_unpack_as_row_swaps on them) ...; %p, %l, %u
    """
    if node.inputs[0].type.dtype not in ("float32", "float64"):
        return False
    rw.results(_lu_unpacked(rw, *rw.emit_outputs(LU_FACTOR, [node.inputs[0]], hint="lu")))
    return True


@decomposition(LU_UNPACK)
def lu_unpack_as_row_swaps(node, rw) -> bool:
    """LAPACK's packed LU and row swaps as P, L, U: the swaps applied to arange with where and gather, P its one-hot
    transposed, L and U the packed triangles under constant masks.

    Before / after (m = n = 2)::

        %p, %l, %u = lu_unpack(%lu, %piv)
            ->
        %p_swaps = sub(%piv, 1); %p_perm = where(row0, gather(%p_perm, slice(%p_swaps)), ...) ...
        %p = permute(cast(eq(reshape(%p_perm), rows))); %l = add(where(below, %lu, 0), eye); %u = where(upper, %lu, 0)
    """
    if node.inputs[0].type.dtype not in ("float32", "float64"):
        return False
    rw.results(_lu_unpacked(rw, *node.inputs))
    return True


def _mirrored(rw, x, upper):
    """The symmetric matrix of one triangle of ``x`` (what torch's cholesky reads): the triangle, else x^T."""
    n, last = x.type.shape[-1], x.type.rank - 1
    keep = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
    swapped = rw.emit(PERMUTE, [x], {"perm": (*range(last - 1), last, last - 1)}, hint="mirror")
    return rw.emit(WHERE, [rw.const(keep, "triangle"), x, swapped], hint="sym")


@decomposition(CHOLESKY_INFO)
def cholesky_info_as_leading_minors(node, rw) -> bool:
    """LAPACK potrf's info by Sylvester's criterion: potrf stops at the first leading minor that is not positive
    definite, which is the first whose determinant is not positive, so info counts the leading positive ones
    (0 when all n are). The same numbers on every backend (XLA's cholesky gives no info).

    Before / after (n = 2)::

        %info: int32[3] = cholesky_info(%a) {upper=False}
            ->
        %info_sym = where(triangle, %a, permute(%a)); %info_det = det(slice(slice(%info_sym)))  # 1x1
        %info_ok = cast(gt(%info_det, 0)); ... %info_count = add(%info_ok, mul(%info_ok, %info_ok_1))
        %info = where(eq(%info_count, 2), 0, add(%info_count, 1))
    """
    x = node.inputs[0]
    if x.type.dtype not in ("float32", "float64"):
        return False
    sym, n, last = _mirrored(rw, x, node.attrs["upper"]), x.type.shape[-1], x.type.rank - 1
    floats, ints = _Math(rw, x.type.dtype), _Math(rw, "int32")
    running = count = None
    for j in range(1, n + 1):
        minor = sym
        if j < n:
            minor = rw.emit(SLICE, [sym], {"axis": last - 1, "start": 0, "end": j}, hint="rows")
            minor = rw.emit(SLICE, [minor], {"axis": last, "start": 0, "end": j}, hint="minor")
        positive = floats.op("gt", rw.emit(DET, [minor], hint="det"), 0.0, "positive")
        ok = rw.emit(CAST, [positive], {"dtype": "int32"}, hint="ok")
        running = ok if running is None else ints.op("mul", running, ok, "leading")
        count = running if count is None else ints.op("add", count, running, "count")
    done = ints.op("eq", count, n, "all")
    rw.result(rw.emit(WHERE, [done, ints.num(0), ints.op("add", count, 1, "first")], hint="info"))
    return True


@decomposition(SCATTER_REDUCE)
def scatter_rows_into_one_axis(node, rw) -> bool:
    """Rows at coordinates into x's first k > 1 axes: the same scatter on x with those axes flattened into one, at
    each row's row-major index (``indices @ strides``, folded where the indices are stored), then reshaped back;
    each target writes the one-axis form only (``ops.segment_max``, ``Tensor.scatter_reduce``).

    Before / after::

        %y: float32[4x5x2] = scatter_reduce(%x, %idx, %u) {reduce="amax"}     # idx: int64[3x2], u: float32[3x2]
            ->
        %y_flat = reshape(%x) {shape=(20, 2)}; %y_rows = sum(mul(%idx, %y.strides)) {axes=(1,), keepdims=True}
        %y_scatter = scatter_reduce(%y_flat, %y_rows, %u) {reduce="amax"}; %y = reshape(%y_scatter) {shape=(4, 5, 2)}
    """
    x, indices, updates = node.inputs
    depth, shape = indices.type.shape[-1], tuple(x.type.shape)
    if depth == 1:
        return False
    strides = np.array([math.prod(shape[i + 1:depth]) for i in range(depth)], np.int64)
    stored = rw.stored(indices)
    if stored is not None:
        rows = rw.const((np.asarray(stored).astype(np.int64) @ strides)[:, None], "rows")
    else:
        wide = rw.emit(CAST, [indices], {"dtype": "int64"}, hint="wide") if indices.type.dtype != "int64" else indices
        scaled = rw.emit(BINARY["mul"], [wide, rw.const(strides, "strides")], hint="scaled")
        rows = rw.emit(REDUCE["sum"], [scaled], {"axes": (1,), "keepdims": True}, hint="rows")
    flat = rw.emit(RESHAPE, [x], {"shape": (math.prod(shape[:depth]), *shape[depth:])}, hint="flat")
    scattered = rw.emit(SCATTER_REDUCE, [flat, rows, updates], dict(node.attrs), hint="scatter")
    rw.result(rw.emit(RESHAPE, [scattered], {"shape": shape}, hint="out"))
    return True
