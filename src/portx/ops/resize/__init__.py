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

Example IR:
    %y: float32[1x3x16x16] = resize(%x) {size=(16, 16), mode="linear", align_corners=False,
        scales=(2.0, 2.0)}  # up
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last

__all__ = ["RESIZE", "MODES", "nearest_indices", "repeat_factor", "linear_matrix", "cubic_matrix", "axis_matrix",
           "apply_axis_matrices"]

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


def apply_axis_matrices(node, k, x, matrices, hints=("rows", "cols")):
    """Write ``y = rows @ x @ cols`` for the last one or two axes (see Note [resize as matrices]).

    ``matrices`` holds an (n_out, n_in) array or None (identity) per spatial axis.
    """
    dtype = x.type.dtype if x.type.dtype in ("float32", "float64") else "float32"
    expr = k.ref(x)
    if matrices[-1] is not None:
        expr = f"ops.matmul({expr}, {k.const(node, matrices[-1].T.astype(dtype), hints[-1])})"
    if len(matrices) == 2 and matrices[0] is not None:
        expr = f"ops.matmul({k.const(node, matrices[0].astype(dtype), hints[0])}, {expr})"
    if dtype != x.type.dtype:
        expr = f"ops.cast({expr}, {k.lit(x.type.dtype)})"
    k.assign(node, expr)


def repeat_factor(indices, n_in):
    """f when ``indices`` is ``arange(n_in * f) // f`` (every sample repeated f times), else None:
    ``repeat_factor(np.array([0, 0, 1, 1]), 2) == 2``."""
    f, rest = divmod(len(indices), n_in)
    return f if f and not rest and np.array_equal(indices, np.arange(len(indices)) // f) else None


def _nearest_to_keras(node, k, x, tables):
    last = node.attrs.get("channels_last", False)
    first = 1 if last else 2  # the first spatial axis
    factors = [repeat_factor(idx, x.type.shape[first + i]) for i, idx in enumerate(tables)]
    if len(tables) == 2 and None not in factors and factors != [1, 1]:
        k.layer(node, "UpSampling2D", {"size": tuple(factors), "data_format": "channels_last" if last else
                                       "channels_first", "interpolation": "nearest"}, [x])
        return
    expr = k.ref(x)
    for i, (idx, f) in enumerate(zip(tables, factors)):
        if f is None:
            hint = ("src_rows", "src_cols")[i + 2 - len(tables)]
            expr = f"ops.take({expr}, {k.const(node, idx.astype('int32'), hint)}, axis={first + i})"
        elif f > 1:
            expr = f"ops.repeat({expr}, {f}, axis={first + i})"
    k.assign(node, expr)


@RESIZE.emits("keras-jax")
def _resize_to_keras(node, k):
    x, a = node.inputs[0], node.attrs
    if x.type.rank not in (3, 4) or len(a["size"]) != x.type.rank - 2:
        raise NotImplementedError(f"{node.where()}: resize is emitted for NCW / NCHW (NWC / NHWC) inputs only")
    first = 1 if a.get("channels_last", False) else 2
    axes = [(x.type.shape[first + i], n_out, _axis_scale(a["scales"], i)) for i, n_out in enumerate(a["size"])]
    if a["mode"].startswith("nearest"):
        tables = [nearest_indices(*axis, exact=a["mode"] == "nearest_exact") for axis in axes]
        _nearest_to_keras(node, k, x, tables)
        return
    if a.get("channels_last", False):  # the matrices below contract the trailing axes
        k.via_channels_first(node, _resize_to_keras)
        return
    matrices = [axis_matrix(a["mode"], *axis, a["align_corners"]) for axis in axes]
    matrices = [None if m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(len(m))) else m for m in matrices]
    apply_axis_matrices(node, k, x, matrices)


_ATEN_MODES = {"aten::upsample_nearest1d": "nearest", "aten::upsample_nearest2d": "nearest",
               "aten::_upsample_nearest_exact1d": "nearest_exact", "aten::_upsample_nearest_exact2d": "nearest_exact",
               "aten::upsample_linear1d": "linear", "aten::upsample_bilinear2d": "linear",
               "aten::upsample_bicubic2d": "cubic"}


def _torch_scales(call, rank):
    """Scale factors as torch's kernel sees them: from ``scale_factors`` (.vec) or ``scales_h/_w``."""
    given = call.arg("scale_factors")
    if given is None:
        given = [call.arg("scales")] if rank == 1 else [call.arg("scales_h"), call.arg("scales_w")]
    scales = tuple(float(s) if s is not None and s > 0 else None for s in given)
    return None if all(s is None for s in scales) else scales


@RESIZE.imports("torch", *_ATEN_MODES)
def _resize_from_aten(call):
    """All upsample overloads: ``.vec`` (output_size or scale_factors) and the plain per-axis form."""
    mode = _ATEN_MODES[call.node.target._schema.name]
    x = call.arg("input", call.arg("self"))
    size = tuple(call.out_type(0).shape[2:])  # torch's own floor(in * scale) when only scales were given
    align = bool(call.arg("align_corners", False)) and not mode.startswith("nearest")
    scales = None if align else _torch_scales(call, len(size))  # align_corners ignores scale factors
    return call.emit(RESIZE, [x], {"size": size, "mode": mode, "align_corners": align, "scales": scales})
