"""Resize rewrites: every torch upsample mode as static IR ops a TPU runs well.

Each axis of a resize is a fixed map (Note [resize as matrices] in ``ops/resize/__init__.py``): nearest
modes are an index table, linear and cubic modes an ``(n_out, n_in)`` weight matrix. These rules
turn the tables into plain IR: a broadcast between reshapes (integer nearest up-scales), a strided
slice or a gather with constant int32 indices (any other nearest), and one matmul per axis with a
constant matrix (bilinear, bicubic, both align_corners), which XLA maps to the matrix unit. The
tables come from the same builders the resize reference uses, so the rewrite is torch's
arithmetic to float32 rounding; the property tests in tests/passes/legalize/test_rewrites.py measure it.
The op tables of both targets name these rules for ``resize``; the emitters keep only the native
forms (Note [resize native forms] in ``ops/resize/to_keras.py``).

Example:
    >>> legalize(graph, "keras-jax")   # resize {size=(8, 10), mode='linear'} on 4x5 -> two matmuls
"""
from __future__ import annotations

import numpy as np

from ...ops.resize import RESIZE, axis_maps, is_identity, repeat_factor, resized_axes, torch_upsample_kwargs
from ...ops.shape import EXPAND, RESHAPE
from ...ops.shape.index import INDEX_SELECT, SLICE
from .rewriter import contract_axes, node_rule

__all__ = ["resize_kept_as_torch_upsample", "resize_nearest_as_repeat", "resize_nearest_as_gather", "resize_linear_as_matmul",
           "resize_cubic_as_matmul"]

_HINTS = {1: ("cols",), 2: ("rows", "cols"), 3: ("depth", "rows", "cols")}


def _axes(node):
    """(n_in, n_out, scale) per resized axis, or None when the rules below do not apply."""
    x, a = node.inputs[0], node.attrs
    if not x.type.is_static or len(a["size"]) > len(_HINTS) or a.get("channels_last", False):
        return None  # the rules below index trailing axes: channels-first nodes only
    return resized_axes(node)


def _nearest_tables(node):
    """PyTorch's source index per output sample, one table per axis (None: not a nearest resize)."""
    if _axes(node) is None or not node.attrs["mode"].startswith("nearest"):
        return None
    return axis_maps(node)


@node_rule(RESIZE)
def resize_nearest_as_repeat(node, rw) -> bool:
    """Nearest resize by integer factors as a broadcast between two reshapes.

    PyTorch's nearest index for an integer up-scale f is ``i // f``: each sample repeated f times
    (keras ``UpSampling2D``'s ``ops.repeat``), which needs no gather.

    Before / after::

        %y: float32[1x2x4x9] = resize(%x: float32[1x2x2x3]) {size=(4, 9), mode='nearest', ...}
            ->
        %y_split: float32[1x2x2x1x3x1] = reshape(%x) {shape=(1, 2, 2, 1, 3, 1)}
        %y_repeat: float32[1x2x2x2x3x3] = expand(%y_split) {shape=(1, 2, 2, 2, 3, 3)}
        %y: float32[1x2x4x9] = reshape(%y_repeat) {shape=(1, 2, 4, 9)}
    """
    tables = _nearest_tables(node)
    if tables is None:
        return False
    x = node.inputs[0]
    lead, spatial = x.type.shape[:x.type.rank - len(tables)], x.type.shape[x.type.rank - len(tables):]
    factors = [repeat_factor(t, n) for t, n in zip(tables, spatial)]
    if None in factors or all(f == 1 for f in factors):
        return False
    split, repeated = list(lead), list(lead)
    for n, f in zip(spatial, factors):
        split += [n, 1] if f > 1 else [n]
        repeated += [n, f] if f > 1 else [n]
    y = rw.emit(RESHAPE, [x], {"shape": tuple(split)}, "split")
    y = rw.emit(EXPAND, [y], {"shape": tuple(repeated)}, "repeat")
    rw.result(rw.emit(RESHAPE, [y], {"shape": node.output.type.shape}, "merge"))
    return True


def _as_slice(table):
    """(start, end, step) when ``table`` is an arithmetic progression with step >= 1, else None."""
    step = int(table[1] - table[0]) if len(table) > 1 else 1
    start = int(table[0])
    if step >= 1 and np.array_equal(table, start + step * np.arange(len(table))):
        return start, start + step * (len(table) - 1) + 1, step
    return None


@node_rule(RESIZE)
def resize_nearest_as_gather(node, rw) -> bool:
    """Any nearest resize as one static gather per axis (a strided slice where the indices allow).

    The indices are PyTorch's own: ``floor(i * in / out)`` (or ``floor(i / scale)``), which
    differs from jax.image.resize's ``floor((i + 0.5) * in / out)`` for non-integer factors.

    Before / after::

        %y: float32[1x2x3x7] = resize(%x: float32[1x2x5x5]) {size=(3, 7), mode='nearest', ...}
            ->
        %y_rows: float32[1x2x3x5] = index_select(%x, %up.src_rows) {axis=2}   # [0, 1, 3]
        %y: float32[1x2x3x7] = index_select(%y_rows, %up.src_cols) {axis=3}   # [0, 0, 1, 2, 2, 3, 4]
    """
    tables = _nearest_tables(node)
    if tables is None:
        return False
    x = node.inputs[0]
    first = x.type.rank - len(tables)
    steps = [(first + i, t) for i, t in enumerate(tables) if not is_identity(t, x.type.shape[first + i])]
    if not steps:
        return False
    y = x
    for axis, table in steps:
        hint = _HINTS[len(tables)][axis - first]
        bounds = _as_slice(table)
        if bounds is not None:
            y = rw.emit(SLICE, [y], dict(zip(("start", "end", "step"), bounds), axis=axis), hint)
        else:
            index = rw.const(table.astype(np.int32), f"src_{hint}")
            y = rw.emit(INDEX_SELECT, [y, index], {"axis": axis}, hint)
    rw.result(y)
    return True


def _interpolate_as_matmul(node, rw, mode) -> bool:
    axes = _axes(node)
    if axes is None or node.attrs["mode"] != mode:
        return False
    matrices = [None if is_identity(m, n_in) else m for (n_in, _, _), m in zip(axes, axis_maps(node))]
    if all(m is None for m in matrices):
        return False
    contract_axes(rw, node.inputs[0], matrices, _HINTS[len(axes)], node.inputs[0].type.dtype)
    return True


@node_rule(RESIZE)
def resize_linear_as_matmul(node, rw) -> bool:
    """(Bi)linear resize, either align_corners, as one matmul per axis with a constant weight matrix.

    ``rows`` and ``cols`` are torch's interpolation weights (built in float64 from torch's
    float32 source coordinates, stored in the input dtype); ``y = rows @ x @ cols^T``.

    Before / after::

        %y: float32[1x2x8x6] = resize(%x: float32[1x2x4x3]) {size=(8, 6), mode='linear', ...}
            ->
        %y_cols: float32[1x2x4x6] = matmul(%x, %up.cols)            # up.cols: float32[3x6]
        %y: float32[1x2x8x6] = matmul(%up.rows, %y_cols)           # up.rows: float32[8x4]
    """
    return _interpolate_as_matmul(node, rw, "linear")


@node_rule(RESIZE)
def resize_cubic_as_matmul(node, rw) -> bool:
    """Bicubic resize (torch's A = -0.75, clamped borders) as one matmul per axis.

    PyTorch/XLA has no bicubic lowering (CPU fallback) and TF's XLA kernel fails to compile, so
    the explicit contraction is the portable TPU form.

    Before / after::

        %y: float32[1x2x8x6] = resize(%x: float32[1x2x4x3]) {size=(8, 6), mode='cubic', ...}
            ->
        %y_cols: float32[1x2x4x6] = matmul(%x, %up.cols)
        %y: float32[1x2x8x6] = matmul(%up.rows, %y_cols)
    """
    return _interpolate_as_matmul(node, rw, "cubic")


@node_rule(RESIZE)
def resize_kept_as_torch_upsample(node, rw) -> bool:
    """Keep a 2-d nearest (integer factor) or bilinear resize that ``nn.Upsample`` computes exactly.

    PyTorch/XLA lowers ``upsample_nearest2d`` and ``upsample_bilinear2d`` (Note [XLA resize]), so
    the torch-xla table lists this rule first and the other rules only see what it leaves.

    Before / after::

        %y: float32[1x2x4x6] = resize(%x: float32[1x2x2x3]) {size=(4, 6), mode='nearest', ...}
            -> unchanged (emitted as ``nn.Upsample(scale_factor=2.0, mode="nearest")``)
    """
    return torch_upsample_kwargs(node) is not None and rw.keep()
