"""Free dimensions found by diffing two lowerings of one source at two sizes (Note [free dims], ir/types.py).

``diff_free(g0, g1, symbol, s0, s1)`` walks two graphs that differ only in the size of ``symbol`` (``s0``
in ``g0``, the graph portx emits; ``s1`` in ``g1``) and returns what changed with it, as SymDims: node
attributes (a reshape's target shape), value shapes, and stored constants whose shape follows the
symbol (a mask of ones folded at the example's batch). ``apply_free`` records them in
``graph.meta["free"]`` and rewrites each such constant into its one row broadcast at run time
(an ``expand`` with a free shape). Anything that does not follow one symbol affinely raises
NotFree, naming the node; the caller pins that symbol with a warning.

Example:
    >>> found = diff_free(g2, g3, "batch", 2, 3)
    >>> found["attrs"]["flat"]["shape"]
    (SymDim(symbol='batch', scale=1, offset=0, size=2), 144)
    >>> graph = apply_free(g2, {"batch": {...}}, [found])
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..ir import Node, SymDim, TensorType, Value, fresh_name
from ..ops.elementwise import BINARY, CAST
from ..ops.reduce import CUMSUM, REDUCE
from ..ops.shape import EXPAND
from .blocks import refresh_blocks

__all__ = ["NotFree", "diff_free", "merge_found", "apply_free"]


class NotFree(Exception):
    """The two lowerings differ in a way no free dimension explains (the message names the node)."""


def _affine(a0, a1, symbol, s0, s1, where):
    """The SymDim through (s0, a0) and (s1, a1); NotFree when the step is not positive. A step that is a fraction
    ``p / q`` of the symbol's is ``(p * symbol + offset) // q``, exact at ``s0`` (Note [divided dims] in
    session/dims/find.py: ``s1 - s0`` is a multiple of torch's divisors, so both sizes round alike)."""
    slope = Fraction(a1 - a0, s1 - s0)
    if slope <= 0:
        raise NotFree(f"{where} changes from {a0} to {a1} when {symbol} goes from {s0} to {s1}")
    p, q = slope.numerator, slope.denominator
    return SymDim(symbol, p, q * a0 - p * s0, a0, q) if q > 1 else SymDim(symbol, p, a0 - p * s0, a0)


def _diff(a0, a1, symbol, s0, s1, where):
    """``a0`` with each int that changed replaced by its SymDim; None when nothing changed."""
    if isinstance(a0, SymDim):
        raise NotFree(f"{where} already follows {a0.symbol}")
    if isinstance(a0, (bool, np.bool_)) or isinstance(a1, (bool, np.bool_)):
        if a0 != a1:
            raise NotFree(f"{where} changes from {a0} to {a1}")
        return None
    if isinstance(a0, (int, np.integer)) and isinstance(a1, (int, np.integer)):
        return None if a0 == a1 else _affine(int(a0), int(a1), symbol, s0, s1, where)
    if isinstance(a0, (tuple, list)) and isinstance(a1, (tuple, list)) and len(a0) == len(a1):
        parts = [_diff(x, y, symbol, s0, s1, where) for x, y in zip(a0, a1)]
        if all(p is None for p in parts):
            return None
        return type(a0)(x if p is None else p for x, p in zip(a0, parts))
    if isinstance(a0, dict) and isinstance(a1, dict) and a0.keys() == a1.keys():
        parts = {k: _diff(a0[k], a1[k], symbol, s0, s1, f"{where}.{k}") for k in a0}
        return None if all(p is None for p in parts.values()) else {k: (a0[k] if p is None else p)
                                                                      for k, p in parts.items()}
    try:
        same = bool(np.array_equal(np.asarray(a0), np.asarray(a1))) if hasattr(a0, "shape") else a0 == a1
    except Exception:  # noqa: BLE001 - incomparable attribute data is a difference
        same = False
    if not same:
        raise NotFree(f"{where} changes from {a0!r} to {a1!r} when {symbol} goes from {s0} to {s1}")
    return None


def _shape_diff(t0, t1, symbol, s0, s1, where) -> dict:
    if t0.rank != t1.rank or t0.dtype != t1.dtype:
        raise NotFree(f"{where} is {t0} at {symbol}={s0} but {t1} at {symbol}={s1}")
    return {axis: _affine(d0, d1, symbol, s0, s1, where)
            for axis, (d0, d1) in enumerate(zip(t0.shape, t1.shape)) if d0 != d1}


def diff_free(g0, g1, symbol, s0, s1) -> dict:
    """{"attrs": {node key: {attr: with SymDims}}, "values": {value name: {axis: SymDim}}, "params": {name:
    {axis: SymDim}}}: what follows ``symbol`` between ``g0`` (at ``s0``) and ``g1`` (at ``s1``)."""
    if len(g0.nodes) != len(g1.nodes) or len(g0.inputs) != len(g1.inputs):
        raise NotFree(f"the graph has {len(g0.nodes)} nodes at {symbol}={s0} but {len(g1.nodes)} at {symbol}={s1}")
    found = {"attrs": {}, "values": {}, "params": {}, "sizes": {}}

    def values(v0, v1, where):
        if (v0 is None) != (v1 is None):
            raise NotFree(f"{where}: an optional input is present at one size only")
        if v0 is not None:
            axes = _shape_diff(v0.type, v1.type, symbol, s0, s1, where)
            if axes:
                found["params" if g0.is_param(v0) else "values"][v0.name] = axes
            elif g0.is_param(v0) and v0.type.rank == 0:  # a size folded into a scalar (an index stride)
                a0, a1 = g0.params[v0.name], g1.params[v1.name]
                if a0 != a1:
                    if a0.dtype.kind not in "iu":
                        raise NotFree(f"{where}: constant {v0.name} changes from {a0} to {a1} with {symbol}")
                    found["sizes"][v0.name] = _affine(int(a0), int(a1), symbol, s0, s1, f"{where}: {v0.name}")

    for v0, v1 in zip(g0.inputs, g1.inputs):
        values(v0, v1, f"input {v0.name}")
    for n0, n1 in zip(g0.nodes, g1.nodes):
        where = n0.where()
        if n0.op is not n1.op or len(n0.inputs) != len(n1.inputs) or len(n0.outputs) != len(n1.outputs):
            raise NotFree(f"{where} is {n1.where()} at {symbol}={s1}: the graph's structure depends on {symbol}")
        attrs = _diff(n0.attrs, n1.attrs, symbol, s0, s1, where)
        if attrs:
            found["attrs"][n0.outputs[0].name] = {k: v for k, v in attrs.items() if v is not n0.attrs.get(k)}
        for v0, v1 in zip(n0.inputs, n1.inputs):
            if v0 is not None and g0.is_param(v0):
                values(v0, v1, f"{where}: stored input {v0.name}")
        for v0, v1 in zip(n0.outputs, n1.outputs):
            values(v0, v1, f"{where}: output")
    for name, axes in found["params"].items():
        _check_uniform(g0.params[name], axes, symbol)
    return found


def _check_uniform(array, axes, symbol):
    """A constant that follows a free dim must repeat one row along it (ones, a broadcast mask), count
    along it (``arange``: batch indices, positions), ``row_kind`` says which, or be a band of two of its
    axes (a causal mask, ``band_of``)."""
    for axis in axes:
        if row_kind(array, axis) is None and band_of(array, axes) is None:
            raise NotFree(f"stored constant of shape {array.shape} varies along axis {axis}, which follows "
                          f"{symbol}, neither as one row repeated nor as an arange")


def band_of(array, axes):
    """Note [band constants]: a bool constant that is True exactly where ``lo <= j - i <= hi`` for the indices
    ``i``, ``j`` along two of its free ``axes`` (a causal mask is ``j - i <= 0``, a sliding window adds a
    ``lo``), the same for every index of its other axes: ``(axis_i, axis_j, lo, hi)``, with None for a side
    the example's size does not bound (it holds at any size), else None."""
    free = sorted(a for a in axes if array.shape[a] > 1)
    if array.dtype != bool or len(free) != 2:
        return None
    a, b = free
    rows, cols = array.shape[a], array.shape[b]
    first = array[tuple(slice(None) if k in (a, b) else slice(0, 1) for k in range(array.ndim))]
    if not np.array_equal(array, np.broadcast_to(first, array.shape)):
        return None
    grid = np.squeeze(first, axis=tuple(k for k in range(array.ndim) if k not in (a, b)))
    offsets = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    if not grid.any():
        return None
    lo, hi = int(offsets[grid].min()), int(offsets[grid].max())
    if not np.array_equal(grid, (offsets >= lo) & (offsets <= hi)):
        return None
    return a, b, (None if lo <= -(rows - 1) else lo), (None if hi >= cols - 1 else hi)


def row_kind(array, axis):
    """(start, step) when ``array`` is ``start + step * i`` along ``axis``, else None. Both have size 1 along
    ``axis`` (the first row and the difference of the first two): one number for a plain arange (batch indices,
    positions), a row of them for an arange per line (the angles of a rotary table, Note [run-time tables] in
    frontends/torch/__init__.py); step 0 is one row repeated."""
    first = np.take(array, [0], axis=axis)
    if array.shape[axis] < 2 or np.array_equal(array, np.broadcast_to(first, array.shape)):
        return (first, np.zeros_like(first))
    if array.dtype == bool:
        return None
    step = np.take(array, [1], axis=axis) - first
    shape = [1] * array.ndim
    shape[axis] = array.shape[axis]
    want = (first + step * np.arange(array.shape[axis]).reshape(shape)).astype(array.dtype)
    exact = np.array_equal(array, want) if array.dtype.kind in "iub" else np.allclose(array, want, rtol=1e-6, atol=0)
    return (first, step) if exact else None


def _combine(a, b, where):
    """One dim that two symbols each found free: their product ``c * a * b`` (a merged batch and sequence axis,
    as in ``mask.reshape(-1)``), a SymDim whose symbol is ``"a*b"``; NotFree for anything else."""
    if a == b:
        return a
    c, rest = divmod(a.scale * b.scale, a.size) if a.size else (0, 1)
    if a.offset or b.offset or a.div != 1 or b.div != 1 or a.size != b.size or rest or c < 1 \
            or "*" in a.symbol + b.symbol:
        raise NotFree(f"{where} follows both {a.symbol} and {b.symbol}")
    return SymDim("*".join(sorted((a.symbol, b.symbol))), c, 0, a.size)


def _merge(into: dict, axes: dict, where: str):
    for axis, dim in axes.items():
        into[axis] = _combine(into[axis], dim, f"{where} axis {axis}") if axis in into else dim


def _merge_attr(a, b, where):
    """Two symbols' SymDim-marked copies of one attribute, combined (``_combine`` where both mark one int)."""
    if isinstance(a, SymDim) and isinstance(b, SymDim):
        return _combine(a, b, where)
    if isinstance(a, SymDim) or isinstance(b, SymDim):
        return a if isinstance(a, SymDim) else b
    if isinstance(a, (tuple, list)):
        return type(a)(_merge_attr(x, y, where) for x, y in zip(a, b))
    if isinstance(a, dict):
        return {k: _merge_attr(a[k], b[k], where) for k in a}
    return a


def merge_found(rows: list) -> dict:
    """The per-symbol results of ``diff_free`` as one record (NotFree on a clash between two symbols)."""
    out = {"attrs": {}, "values": {}, "params": {}, "sizes": {}}
    for found in rows:
        for name, dim in found["sizes"].items():
            if name in out["sizes"]:
                raise NotFree(f"constant {name} follows both {out['sizes'][name].symbol} and {dim.symbol}")
            out["sizes"][name] = dim
        for kind in ("values", "params"):
            for name, axes in found[kind].items():
                _merge(out[kind].setdefault(name, {}), axes, name)
        for key, attrs in found["attrs"].items():
            row = out["attrs"].setdefault(key, {})
            for attr, value in attrs.items():
                row[attr] = _merge_attr(row[attr], value, f"{key}.{attr}") if attr in row else value
    return out


class _Builder:
    """New params and nodes for the constants ``apply_free`` rewrites, named after the constant."""

    def __init__(self, graph, params, values):
        self.params, self.values, self.head, self.new_values = params, values, [], {}
        self.taken = set(params) | {v.name for n in graph.nodes for v in n.outputs} | {v.name for v in graph.inputs}

    def name(self, base) -> str:
        key = fresh_name(self.taken, base)
        self.taken.add(key)
        return key

    def param(self, base, array) -> Value:
        array = np.asarray(array)
        key = self.name(base)
        self.params[key], self.new_values[key] = array, Value(key, TensorType(array.shape, str(array.dtype)))
        return self.new_values[key]

    def node(self, op, inputs, out, attrs, scope, free_axes=None) -> Value:
        """``op(inputs)`` into ``out`` (a Value, or a (base name, TensorType) for a new one)."""
        if not isinstance(out, Value):
            out = Value(self.name(out[0]), out[1])
        if free_axes:
            self.values[out.name] = dict(free_axes)
        self.head.append(Node(op, tuple(inputs), (out,), dict(attrs or {}), scope))
        return out

    def affine(self, y, scale, offset, full, scope, base, free_axes=None) -> None:
        """``full = cast(y * scale + offset)`` on a float32 ``y`` (numbers, or rows that broadcast against it),
        each step only where it changes something."""
        for op, operand, neutral in (("mul", scale, 1.0), ("add", offset, 0.0)):
            operand = np.asarray(operand, np.float32)
            if np.any(operand != neutral):
                out = y.type.with_shape(np.broadcast_shapes(y.type.shape, operand.shape))
                y = self.node(BINARY[op], [y, self.param(f"{base}_{op}", operand)], (f"{base}_{op}ed", out), {},
                              scope, free_axes)
        if full.type.dtype != "float32":
            self.node(CAST, [y], full, {"dtype": full.type.dtype}, scope)
        else:
            self.head[-1] = self.head[-1].replace(outputs=(full,))

    def count(self, axis, shape, axes, scope, base) -> Value:
        """``0, 1, 2, ...`` along ``axis`` of ``shape`` (1 elsewhere) as float32, free along ``axes``: a cumulative
        sum of ones expanded at run time, minus one."""
        size = tuple(d if k == axis else 1 for k, d in enumerate(shape))
        free = {axis: axes[axis]} if axis in axes else {}
        floats = TensorType(size, "float32")
        grown = self.node(EXPAND, [self.param(f"{base}_ones", np.ones((1,) * len(shape), np.float32))],
                          (f"{base}_ones", floats), {"shape": size}, scope, free)
        self.band_attrs[grown.name] = {"shape": tuple(free.get(k, d) for k, d in enumerate(size))}
        total = self.node(CUMSUM, [grown], (f"{base}_count", floats), {"axis": axis, "reverse": False}, scope, free)
        return self.node(BINARY["sub"], [total, self.param(f"{base}_one", np.float32(1.0))],
                         (f"{base}_index", floats), {}, scope, free)

    def band(self, band, shape, axes, full, scope, base) -> None:
        """``full = lo <= j - i <= hi`` (Note [band constants]), computed from run-time counts; the expands'
        free shapes go into ``band_attrs``."""
        a, b, lo, hi = band
        self.band_attrs = {}
        i, j = self.count(a, shape, axes, scope, f"{base}_row"), self.count(b, shape, axes, scope, f"{base}_col")
        grid = tuple(d if k in (a, b) else 1 for k, d in enumerate(shape))
        free = {k: axes[k] for k in (a, b) if k in axes}
        offset = self.node(BINARY["sub"], [j, i], (f"{base}_offset", TensorType(grid, "float32")), {}, scope, free)
        tests = [self.node(BINARY[op], [offset, self.param(f"{base}_{op}", np.float32(bound))],
                           (f"{base}_{op}", TensorType(grid, "bool")), {}, scope, free)
                 for op, bound in (("ge", lo), ("le", hi)) if bound is not None]
        if len(tests) == 2:
            self.node(BINARY["logical_and"], tests, (f"{base}_band", TensorType(grid, "bool")), {}, scope, free)
        if grid == tuple(shape):
            self.head[-1] = self.head[-1].replace(outputs=(full,))
            return
        self.node(EXPAND, [self.head[-1].outputs[0]], full, {"shape": tuple(shape)}, scope, axes)
        self.band_attrs[full.name] = {"shape": tuple(axes.get(k, d) for k, d in enumerate(shape))}


def apply_free(graph, dims: dict, found: dict):
    """``graph`` with ``found`` (merge_found) in ``meta["free"]`` and each free-sized constant rewritten as its
    one row expanded at run time. ``dims``: symbol -> {"sites": [[input, axis], ...], "min", "max", ...}."""
    params, nodes = dict(graph.params), list(graph.nodes)
    attrs, values = dict(found["attrs"]), {k: dict(v) for k, v in found["values"].items()}
    b = _Builder(graph, params, values)
    for name, axes in found["params"].items():
        array = params.pop(name)
        full = graph.param_values[name]
        scope = next(n.scope for n in nodes if full in n.inputs)
        shape = tuple(array.shape)
        free_shape = tuple(axes.get(axis, d) for axis, d in enumerate(shape))
        band = band_of(array, axes) if any(row_kind(array, a) is None for a in axes) else None
        counted = [axis for axis in axes if band is None and np.any(row_kind(array, axis)[1] != 0)]
        if band is not None:
            b.band(band, array.shape, axes, full, scope, name)
            attrs.update(b.band_attrs)
        elif not counted:  # one row repeated: broadcast at run time
            row = array[tuple(slice(0, 1) if axis in axes else slice(None) for axis in range(array.ndim))].copy()
            b.node(EXPAND, [b.param(f"{name}_row", row)], full, {"shape": shape}, scope)
            attrs[name] = {"shape": free_shape}
        else:  # start + step * i along one axis: a cumulative sum of ones, as floats (exact below 2**24)
            if len(counted) > 1:
                raise NotFree(f"stored constant {name} counts along axes {counted}, which follow free dims")
            axis = counted[0]
            start, step = (np.asarray(v, np.float32) for v in row_kind(array, axis))
            floats = full.type.with_dtype("float32")
            ones = np.ones(tuple(1 if a in axes else d for a, d in enumerate(shape)), np.float32)
            ones = b.param(f"{name}_ones", ones)
            grown = b.node(EXPAND, [ones], (f"{name}_ones", floats), {"shape": shape}, scope, axes)
            attrs[grown.name] = {"shape": free_shape}
            count = b.node(CUMSUM, [grown], (f"{name}_count", floats), {"axis": axis, "reverse": False}, scope, axes)
            b.affine(count, step, start - step, full, scope, name, axes)
        values[name] = dict(axes)
    for name, dim in found.get("sizes", {}).items():  # a scalar size: count the ones along the free axis
        params.pop(name)
        full = graph.param_values[name]
        scope = next(n.scope for n in nodes if full in n.inputs)
        if dim.div != 1:
            raise NotFree(f"stored size {name} is {dim}: a divided size is not grown from a count")
        example = (dim.size - dim.offset) // dim.scale
        free = SymDim(dim.symbol, 1, 0, example)
        row = b.node(EXPAND, [b.param(f"{name}_ones", np.ones((1,), np.float32))],
                     (f"{name}_row", TensorType((example,), "float32")), {"shape": (example,)}, scope, {0: free})
        attrs[row.name] = {"shape": (free,)}
        count = b.node(REDUCE["sum"], [row], (f"{name}_count", TensorType((), "float32")),
                       {"axes": (0,), "keepdims": False}, scope)
        b.affine(count, dim.scale, dim.offset, full, scope, name)
    param_values = {k: v for k, v in {**graph.param_values, **b.new_values}.items() if k in params}
    meta = {**graph.meta, "free": {"dims": dims, "attrs": attrs, "values": values}}
    graph = graph.replace(nodes=tuple(b.head + nodes), params=params, param_values=param_values, meta=meta)
    # Note [blocks after free dims]: meta["blocks"] holds node positions (passes/blocks.py), and the nodes
    # prepended here shift them: found again, or each block's statements would be cut off by that many nodes
    # (a decoder's first layer taking the mask and rotary glue, every layer the next one's head) and no two
    # match. set_io_layout (passes/layout), which drops boundary permutes after the passes, does the same.
    return refresh_blocks(graph)
