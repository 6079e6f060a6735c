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

import numpy as np

from ..ir import Node, SymDim, TensorType, Value, fresh_name
from ..ops.shape import EXPAND

__all__ = ["NotFree", "diff_free", "merge_found", "apply_free"]


class NotFree(Exception):
    """The two lowerings differ in a way no free dimension explains (the message names the node)."""


def _affine(a0, a1, symbol, s0, s1, where):
    """The SymDim through (s0, a0) and (s1, a1); NotFree when the step is no whole multiple."""
    scale, rest = divmod(a1 - a0, s1 - s0)
    if rest or scale <= 0:
        raise NotFree(f"{where} changes from {a0} to {a1} when {symbol} goes from {s0} to {s1}")
    return SymDim(symbol, scale, a0 - scale * s0, a0)


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
    found = {"attrs": {}, "values": {}, "params": {}}

    def values(v0, v1, where):
        if (v0 is None) != (v1 is None):
            raise NotFree(f"{where}: an optional input is present at one size only")
        if v0 is not None:
            axes = _shape_diff(v0.type, v1.type, symbol, s0, s1, where)
            if axes:
                found["params" if g0.is_param(v0) else "values"][v0.name] = axes

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
    """A constant that follows a free dim must repeat one row along it (ones, a broadcast mask)."""
    for axis in axes:
        if not np.array_equal(array, np.broadcast_to(np.take(array, [0], axis=axis), array.shape)):
            raise NotFree(f"stored constant of shape {array.shape} varies along axis {axis}, which follows "
                          f"{symbol}, so it cannot be one row broadcast at run time")


def _merge(into: dict, axes: dict, where: str):
    for axis, dim in axes.items():
        if axis in into and into[axis] != dim:
            raise NotFree(f"{where} axis {axis} follows both {into[axis].symbol} and {dim.symbol}")
        into[axis] = dim


def _merge_attr(a, b, where):
    """Two symbols' SymDim-marked copies of one attribute, combined (NotFree where both mark one int)."""
    if isinstance(a, SymDim) and isinstance(b, SymDim):
        raise NotFree(f"{where} follows both {a.symbol} and {b.symbol} (their product cannot be free)")
    if isinstance(a, SymDim) or isinstance(b, SymDim):
        return a if isinstance(a, SymDim) else b
    if isinstance(a, (tuple, list)):
        return type(a)(_merge_attr(x, y, where) for x, y in zip(a, b))
    if isinstance(a, dict):
        return {k: _merge_attr(a[k], b[k], where) for k in a}
    return a


def merge_found(rows: list) -> dict:
    """The per-symbol results of ``diff_free`` as one record (NotFree on a clash between two symbols)."""
    out = {"attrs": {}, "values": {}, "params": {}}
    for found in rows:
        for kind in ("values", "params"):
            for name, axes in found[kind].items():
                _merge(out[kind].setdefault(name, {}), axes, name)
        for key, attrs in found["attrs"].items():
            row = out["attrs"].setdefault(key, {})
            for attr, value in attrs.items():
                row[attr] = _merge_attr(row[attr], value, f"{key}.{attr}") if attr in row else value
    return out


def apply_free(graph, dims: dict, found: dict):
    """``graph`` with ``found`` (merge_found) in ``meta["free"]`` and each free-sized constant rewritten as its
    one row expanded at run time. ``dims``: symbol -> {"sites": [[input, axis], ...], "min", "max", ...}."""
    params, nodes = dict(graph.params), list(graph.nodes)
    attrs, values = dict(found["attrs"]), {k: dict(v) for k, v in found["values"].items()}
    head, new_values = [], {}
    taken = set(params) | {v.name for n in nodes for v in n.outputs} | {v.name for v in graph.inputs}
    for name, axes in found["params"].items():
        array = params.pop(name)
        row = array[tuple(slice(0, 1) if axis in axes else slice(None) for axis in range(array.ndim))].copy()
        row_name = fresh_name(taken, f"{name}_row")
        taken.add(row_name)
        params[row_name] = row
        row_value = Value(row_name, TensorType(row.shape, str(row.dtype)))
        full = next(v for n in nodes for v in n.inputs if v is not None and v.name == name)
        scope = next(n.scope for n in nodes if full in n.inputs)
        head.append(Node(EXPAND, (row_value,), (full,), {"shape": tuple(array.shape)}, scope))
        free_shape_ = tuple(axes.get(axis, d) for axis, d in enumerate(array.shape))
        attrs[name] = {"shape": free_shape_}
        values[name] = dict(axes)
        new_values[row_name] = row_value
    param_values = {k: v for k, v in {**graph.param_values, **new_values}.items() if k in params}
    meta = {**graph.meta, "free": {"dims": dims, "attrs": attrs, "values": values}}
    return graph.replace(nodes=tuple(head + nodes), params=params, param_values=param_values, meta=meta)
