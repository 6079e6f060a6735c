"""Resize (torch ``upsample_*``): nearest, nearest-exact, (bi)linear and (bi)cubic on 1 or 2 spatial axes.

Note [resize as matrices]: every mode is separable, so each spatial axis is a fixed map from
``n_in`` source samples to ``n_out`` outputs. Nearest modes are an index table (a gather, or a
repeat when the table is ``arange(n_in * f) // f``); linear and cubic modes are an ``(n_out, n_in)``
weight matrix, applied as ``rows @ x @ cols`` with two matmuls. That is exact to float32 rounding
against torch, and it is what a TPU runs on its matrix unit. The tables are built here with
torch's own float32 coordinate arithmetic (``area_pixel_compute_source_index``,
``nearest_idx``): PyTorch nearest picks ``floor(dst * in / out)`` (or ``floor(dst / scale)`` when
a scale factor was given), while keras/JAX resize picks ``floor((dst + 0.5) * in / out)``; the two
agree only for integer upscales, so non-integer nearest is always a gather here.

This module declares the op with its shape rule and NumPy reference, and builds those tables for
everyone: the rules beside it (``from_torch.py``, ``from_keras.py``, ``to_keras.py``,
``to_torch.py``) and the legalize rewrites (``passes/legalize/resize.py``).

Example IR:
    %y: float32[1x3x16x16] = resize(%x) {size=(16, 16), mode="linear", align_corners=False,
        scales=(2.0, 2.0)}  # up
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last

__all__ = ["torch_upsample_kwargs", "RESIZE", "MODES", "nearest_indices", "repeat_factor", "linear_matrix", "cubic_matrix", "axis_matrix",
           "resized_axes", "axis_maps", "is_identity"]

MODES = ("nearest", "nearest_exact", "linear", "cubic")

RESIZE = OpDef("resize", ("x",), {"size": REQUIRED, "mode": REQUIRED, "align_corners": False, "scales": None,
                                  "channels_last": False}, family="resize",
               doc="torch upsample semantics on the trailing len(size) axes (the axes before the last with "
                   "channels_last); scales are the scale factors torch maps coordinates with (None: in/out).")

_CUBIC_A = -0.75  # torch's bicubic coefficient (Keys kernel)


def _coord_scale(n_in, n_out, scale, align_corners):
    """Source step per output step, in float32 as torch computes it (area_pixel_compute_scale)."""
    if align_corners:
        return np.float32(n_in - 1) / np.float32(n_out - 1) if n_out > 1 else np.float32(0)
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n_in) / np.float32(n_out)


def nearest_indices(n_in, n_out, scale=None, exact=False):
    """Source index of each output sample: ``nearest_indices(3, 6)`` -> ``[0, 0, 1, 1, 2, 2]``."""
    dst = np.arange(n_out)
    if not exact and n_out == n_in:
        return dst
    if not exact and n_out == 2 * n_in:  # torch special-cases both sizes without float math
        return dst >> 1
    step = _coord_scale(n_in, n_out, scale, False)
    if exact:  # torch: floorf((dst + 0.5) * scale), the product in double, rounded to float
        src = ((dst + 0.5) * np.float64(step)).astype(np.float32)
    else:
        src = dst.astype(np.float32) * step
    return np.minimum(np.floor(src).astype(np.int64), n_in - 1)


def _source_coords(n_in, n_out, scale, align_corners, cubic):
    step = _coord_scale(n_in, n_out, scale, align_corners)
    dst = np.arange(n_out, dtype=np.float32)
    if align_corners:
        return step * dst
    src = step * (dst + np.float32(0.5)) - np.float32(0.5)
    return src if cubic else np.maximum(src, np.float32(0))  # linear clamps negatives to 0; cubic not


def _floor_and_fraction(src, n_in):
    """torch's guard_index_and_lambda: index clamped to n_in - 1, fraction clamped to [0, 1]."""
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    return i0, np.clip(src - i0.astype(np.float32), 0, 1).astype(np.float32)


def linear_matrix(n_in, n_out, scale=None, align_corners=False):
    """(n_out, n_in) linear interpolation weights: ``linear_matrix(2, 4) @ [0, 1]`` -> ``[0, .25, .75, 1]``."""
    if n_in == n_out:  # torch copies an axis whose size does not change, whatever the scale
        return np.eye(n_in)
    i0, frac = _floor_and_fraction(_source_coords(n_in, n_out, scale, align_corners, False), n_in)
    matrix = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(matrix, (rows, i0), (np.float32(1) - frac).astype(np.float64))
    np.add.at(matrix, (rows, np.minimum(i0 + 1, n_in - 1)), frac.astype(np.float64))
    return matrix


def _cubic_near(t):  # |t| <= 1
    return ((_CUBIC_A + 2) * t - (_CUBIC_A + 3)) * t * t + 1


def _cubic_far(t):  # 1 < |t| < 2
    return ((_CUBIC_A * t - 5 * _CUBIC_A) * t + 8 * _CUBIC_A) * t - 4 * _CUBIC_A


def cubic_matrix(n_in, n_out, scale=None, align_corners=False):
    """(n_out, n_in) bicubic weights (A = -0.75, border samples repeated), as torch's upsample_bicubic2d."""
    i0, t = _floor_and_fraction(_source_coords(n_in, n_out, scale, align_corners, True), n_in)
    t = t.astype(np.float64)
    weights = (_cubic_far(t + 1), _cubic_near(t), _cubic_near(1 - t), _cubic_far(2 - t))
    matrix = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    for j, w in enumerate(weights):
        np.add.at(matrix, (rows, np.clip(i0 - 1 + j, 0, n_in - 1)), w)
    return matrix


def axis_matrix(mode, n_in, n_out, scale=None, align_corners=False):
    """The (n_out, n_in) weight matrix of one axis for "linear" or "cubic"."""
    build = linear_matrix if mode == "linear" else cubic_matrix
    return build(n_in, n_out, scale, align_corners)


@RESIZE.infer
@honors_channels_last
def _resize_type(x, *, size, mode, align_corners, scales):
    if mode not in MODES:
        raise ValueError(f"resize: mode {mode!r} is not one of {MODES}")
    if not 1 <= len(size) <= x.rank - 2 or (scales is not None and len(scales) != len(size)):
        raise ValueError(f"resize: size {size} / scales {scales} do not fit input {x.shape}")
    return x.with_shape(x.shape[:x.rank - len(size)] + tuple(size))


def _axis_scale(scales, i):
    return None if scales is None else scales[i]


@RESIZE.reference
@honors_channels_last
def _resize_numpy(x, *, size, mode, align_corners, scales):
    y = x if mode.startswith("nearest") else x.astype(np.float64)
    for i, n_out in enumerate(size):
        axis = x.ndim - len(size) + i
        n_in, scale = x.shape[axis], _axis_scale(scales, i)
        if mode.startswith("nearest"):
            y = np.take(y, nearest_indices(n_in, n_out, scale, mode == "nearest_exact"), axis=axis)
        else:
            matrix = axis_matrix(mode, n_in, n_out, scale, align_corners)
            y = np.moveaxis(np.tensordot(matrix, y, axes=([1], [axis])), 0, axis)
    return y.astype(x.dtype)


def repeat_factor(indices, n_in):
    """f when ``indices`` is ``arange(n_in * f) // f`` (every sample repeated f times), else None:
    ``repeat_factor(np.array([0, 0, 1, 1]), 2) == 2``."""
    f, rest = divmod(len(indices), n_in)
    return f if f and not rest and np.array_equal(indices, np.arange(len(indices)) // f) else None


def resized_axes(node) -> list:
    """(n_in, n_out, scale) per resized axis of a resize ``node``, in the node's own layout.

    Example: ``[(4, 8, 2.0), (5, 10, 2.0)]`` for ``size=(8, 10), scales=(2.0, 2.0)`` on a (1, 3, 4, 5) input.
    """
    x, a = node.inputs[0], node.attrs
    size = tuple(getattr(n, "size", n) for n in a["size"])  # a free size (a SymDim) at the example's value:
    # the maps and the layer form are the example's; verification checks them at other sizes (Note [free dims])
    end = x.type.rank - (1 if a.get("channels_last", False) else 0)
    scales = a["scales"] or (None,) * len(size)
    return [(x.type.shape[end - len(size) + i], n_out, s) for i, (n_out, s) in enumerate(zip(size, scales))]


def axis_maps(node) -> list:
    """torch's map of each resized axis (Note [resize as matrices]): an index table for the nearest
    modes, an (n_out, n_in) weight matrix for linear and cubic. ``[array([0, 0, 1, 1])]`` for 1-d x2 nearest."""
    a = node.attrs
    if a["mode"].startswith("nearest"):
        return [nearest_indices(*axis, exact=a["mode"] == "nearest_exact") for axis in resized_axes(node)]
    return [axis_matrix(a["mode"], *axis, a["align_corners"]) for axis in resized_axes(node)]


def is_identity(table, n_in) -> bool:
    """True for an axis map that copies an axis of ``n_in`` samples: ``arange(n_in)`` or the identity matrix.

    Example: ``is_identity(nearest_indices(4, 3), 4)`` is False (a crop), though the table is ``[0, 1, 2]``.
    """
    if table.ndim == 1:
        return np.array_equal(table, np.arange(n_in))
    return table.shape == (n_in, n_in) and np.array_equal(table, np.eye(n_in))


def _nearest_scale(maps, axes):
    """nn.Upsample's ``scale_factor`` when every table is an integer repeat it computes itself, else None."""
    factors = [repeat_factor(m, n_in) for m, (n_in, _, _) in zip(maps, axes)]
    if None in factors or factors == [1, 1] or not all(
            np.array_equal(m, nearest_indices(n_in, n_in * f, float(f))) for m, (n_in, _, _), f in
            zip(maps, axes, factors)):
        return None
    scale = tuple(float(f) for f in factors)
    return scale[0] if scale[0] == scale[1] else scale


def torch_upsample_kwargs(node) -> dict | None:
    """nn.Upsample arguments for a 2-d resize of an NCHW tensor, or None where it has no such form.

    Used by the torch-xla emit rule and by the legalize rule that keeps such resizes (Note [XLA resize]).
    """
    maps, axes = axis_maps(node), resized_axes(node)
    a = node.attrs
    if len(axes) != 2 or node.inputs[0].type.rank != 4:
        return None
    if a["mode"].startswith("nearest"):
        scale = _nearest_scale(maps, axes)
        return None if scale is None else {"scale_factor": scale, "mode": "nearest"}
    if a["mode"] == "linear" and all(np.array_equal(m, axis_matrix("linear", n_in, n_out, None, a["align_corners"]))
                                     for m, (n_in, n_out, _) in zip(maps, axes)):
        return {"size": tuple(a["size"]), "mode": "bilinear", "align_corners": bool(a["align_corners"])}
    return None
