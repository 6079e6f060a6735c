"""Keras resizing layers (Resizing, UpSampling1D/2D/3D, keras.ops.image.resize) with Keras-on-JAX semantics.

Note [keras resize]: Keras on JAX resizes with ``jax.image.resize``: half-pixel centers, no
align_corners, and no antialiasing unless asked. Per axis that is a fixed map from ``m`` inputs
to ``n`` outputs (see Note [resize as matrices] in resize/__init__.py), built here the way JAX builds it:

- nearest picks ``floor((i + 0.5) * m / n)`` in float32, as XLA evaluates it (see
  ``keras_nearest_table``; UpSampling's ``ops.repeat`` picks ``i // f``). The IR ``resize``
  follows torch, whose ``nearest`` picks ``floor(i * m / n)``; the rule compares the tables and
  emits ``resize`` only when one of its modes gives exactly the Keras table (integer upscales,
  ``nearest_exact`` for most others), otherwise a static gather (``index_select`` with a stored
  index) per axis, which is exact by construction.
- bilinear without antialiasing (or when upscaling) is torch's ``linear`` with
  ``align_corners=False``: both sample at ``(i + 0.5) * m / n - 0.5`` and clamp at the borders
  (JAX renormalizes the edge weights, which gives the same numbers), so it becomes ``resize``.
- bicubic (Keys kernel a = -0.5 with renormalized borders, unlike torch's a = -0.75 with repeated
  borders), lanczos3/5 and antialiased downscaling have no torch mode: each axis becomes a
  ``matmul`` with JAX's own (n, m) weight matrix, which is what ``jax.image.resize`` computes too.

Example:
    >>> keras.layers.Resizing(6, 10, interpolation="nearest")   # 4x4 -> gathers or resize{nearest_exact}
"""
from __future__ import annotations

import numpy as np

from ..linear import MATMUL
from ..pad import PAD
from ..resize import RESIZE, nearest_indices
from ..shape import RESHAPE
from ..shape.index import INDEX_SELECT, SLICE

__all__ = ["keras_nearest_table", "jax_resize_matrix", "resize_like_keras"]

_F32 = np.float32


def keras_nearest_table(m: int, n: int) -> np.ndarray:
    """Source index per output of Keras' nearest resize: ``keras_nearest_table(4, 6)`` -> [0 0 1 2 2 3].

    JAX writes ``floor((i + 0.5) * m / n)``, but XLA rewrites the division into a product with
    the folded constant ``m * (1 / n)`` (each step rounded to float32), which picks other indices
    for some sizes (6 -> 37); this follows XLA, and a test checks it against jax.image.resize.
    """
    if m == n:
        return np.arange(n)
    step = _F32(_F32(m) * (_F32(1) / _F32(n)))
    return np.floor((np.arange(n, dtype=_F32) + _F32(0.5)) * step).astype(np.int64)


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return np.where(x >= 2.0, 0.0, out)


def _lanczos(radius):
    def kernel(x):
        y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1), 1)
        return np.where(x > radius, 0.0, out)
    return kernel


_KERNELS = {"bilinear": lambda x: np.maximum(0, 1 - np.abs(x)), "bicubic": _keys_cubic,
            "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0)}


def jax_resize_matrix(method: str, m: int, n: int, antialias: bool) -> np.ndarray:
    """The (n, m) weights jax.image.resize applies on one axis (``compute_weight_mat``, float32)."""
    inv_scale = _F32(1.0 / (n / m))  # JAX divides Python floats, then uses the result as a float32
    kernel_scale = max(inv_scale, _F32(1.0)) if antialias else _F32(1.0)
    sample_f = (np.arange(n, dtype=_F32) + _F32(0.5)) * inv_scale - _F32(0.5)
    x = np.abs(sample_f[None, :] - np.arange(m, dtype=_F32)[:, None]) / kernel_scale
    weights = _KERNELS[method](x.astype(_F32)).astype(_F32)
    total = weights.sum(axis=0, keepdims=True, dtype=_F32)
    weights = np.where(np.abs(total) > 1000.0 * np.finfo(_F32).eps, weights / np.where(total != 0, total, 1), 0)
    inside = (sample_f >= -0.5) & (sample_f <= m - 0.5)
    return np.where(inside[None, :], weights, 0).astype(_F32).T


def _torch_nearest_mode(tables, sizes):
    """(mode, scales) of an IR ``resize`` whose index tables equal ``tables``, or None."""
    pairs = [(m, len(t)) for m, t in zip(sizes, tables)]
    for mode, scales in (("nearest", None), ("nearest", tuple(float(n) / m for m, n in pairs)),
                         ("nearest_exact", None)):
        if all(np.array_equal(nearest_indices(m, n, None if scales is None else scales[i], mode == "nearest_exact"),
                              t) for i, ((m, n), t) in enumerate(zip(pairs, tables))):
            return mode, scales
    return None


def _channels_first(call, x, channels_last, perm_back=False):
    if not channels_last:
        return x
    return call.to_channels_last(x) if perm_back else call.to_channels_first(x)


def _gather_nearest(call, x, axes, tables, channels_last):
    """Nearest resize: IR ``resize`` when a torch mode matches, else one stored-index gather per axis."""
    sizes = [x.type.shape[a] for a in axes]
    found = _torch_nearest_mode(tables, sizes) if len(axes) <= 2 else None
    if found is not None:
        mode, scales = found
        y = call.emit(RESIZE, [_channels_first(call, x, channels_last)],
                      {"size": tuple(len(t) for t in tables), "mode": mode, "scales": scales})
        return _channels_first(call, y, channels_last, perm_back=True)
    for axis, table, size in zip(axes, tables, sizes):
        if not np.array_equal(table, np.arange(size)):
            index = call.param(np.asarray(table, dtype=np.int64), f"rows{axis}")
            x = call.emit(INDEX_SELECT, [x, index], {"axis": axis})
    return x


def _apply_axis_matrix(call, x, axis, matrix):
    """``matrix`` (n, m) applied on ``axis``: a matmul, with reshapes around it unless it is the last axis."""
    shape = x.type.shape
    if axis == len(shape) - 1:
        return call.emit(MATMUL, [x, call.param(np.ascontiguousarray(matrix.T).astype(x.type.dtype),
                                                f"weights{axis}_t")])
    weights = call.param(matrix.astype(x.type.dtype), f"weights{axis}")
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1:]))
    flat = call.emit(RESHAPE, [x], {"shape": (outer, shape[axis], inner)})
    y = call.emit(MATMUL, [weights, flat])
    return call.emit(RESHAPE, [y], {"shape": shape[:axis] + (matrix.shape[0],) + shape[axis + 1:]})


def resize_like_keras(call, x, size, method, antialias=False, channels_last=True):
    """``jax.image.resize`` of the two (or one or three) spatial axes of ``x`` to ``size`` (Note [keras resize])."""
    rank = x.type.rank
    axes = tuple(range(rank - 1 - len(size), rank - 1)) if channels_last else tuple(range(rank - len(size), rank))
    sizes = [x.type.shape[a] for a in axes]
    if method == "nearest":
        return _gather_nearest(call, x, axes, [keras_nearest_table(m, n) for m, n in zip(sizes, size)], channels_last)
    if method not in _KERNELS:
        call.unsupported(f"interpolation {method!r} (supported: nearest, {', '.join(_KERNELS)})")
    if x.type.dtype not in ("float32", "float64", "float16", "bfloat16"):
        call.unsupported(f"{method} resize of a {x.type.dtype} tensor (Keras rounds and saturates it)")
    downscale = any(n < m for m, n in zip(sizes, size))
    if method == "bilinear" and (not antialias or not downscale) and len(axes) <= 2:
        y = call.emit(RESIZE, [_channels_first(call, x, channels_last)], {"size": tuple(size), "mode": "linear"})
        return _channels_first(call, y, channels_last, perm_back=True)
    for axis, m, n in zip(axes, sizes, size):
        if m != n:  # JAX skips axes whose size does not change
            x = _apply_axis_matrix(call, x, axis, jax_resize_matrix(method, m, n, antialias))
    return x


def _crop_or_pad(call, x, target, channels_last, crop, pad, fill_value):
    """Keras' crop_to_aspect_ratio (central static slice) / pad_to_aspect_ratio (constant bands)."""
    rank = x.type.rank
    h_axis, w_axis = (rank - 3, rank - 2) if channels_last else (rank - 2, rank - 1)
    height, width = x.type.shape[h_axis], x.type.shape[w_axis]
    th, tw = target
    if crop:
        ch = max(min(height, int(float(width * th) / tw)), 1)
        cw = max(min(width, int(float(height * tw) / th)), 1)
        for axis, keep, full in ((h_axis, ch, height), (w_axis, cw, width)):
            start = int(float(full - keep) / 2)
            if keep != full:
                x = call.emit(SLICE, [x], {"axis": axis, "start": start, "end": start + keep, "step": 1})
    elif pad:
        ph, pw = max(height, int(float(width * th) / tw)), max(width, int(float(height * tw) / th))
        hs, ws = int(float(ph - height) / 2), int(float(pw - width) / 2)
        pads = [(0, 0)] * rank
        if hs > 0:
            pads[h_axis] = (hs, hs)
        elif ws > 0:
            pads[w_axis] = (ws, ws)
        if hs > 0 or ws > 0:
            x = call.emit(PAD, [x], {"pads": tuple(pads), "mode": "constant", "value": float(fill_value)})
    return x


def _image_resize(call, size, source):
    """Shared body of Resizing and ops.image.resize; ``source`` holds the Keras attributes."""
    x = call.inputs[0]
    channels_last = getattr(source, "data_format", "channels_last") != "channels_first"
    if getattr(source, "fill_mode", "constant") != "constant":
        call.unsupported(f"fill_mode {source.fill_mode!r} (Keras on JAX only supports 'constant')")
    x = _crop_or_pad(call, x, size, channels_last, source.crop_to_aspect_ratio, source.pad_to_aspect_ratio,
                     getattr(source, "fill_value", 0.0))
    y = resize_like_keras(call, x, tuple(int(s) for s in size), source.interpolation.lower(),
                          bool(source.antialias), channels_last)
    return y


@RESIZE.imports("keras", "Resizing")
def _resizing_from_keras(call):
    return _image_resize(call, (call.layer.height, call.layer.width), call.layer)


@RESIZE.imports("keras", "ops.Resize")
def _image_resize_from_keras(call):
    return _image_resize(call, tuple(call.layer.size), call.layer)


@RESIZE.imports("keras", "UpSampling1D", "UpSampling2D", "UpSampling3D")
def _upsampling_from_keras(call):
    """UpSampling repeats (``ops.repeat``) for nearest, and resizes by the factors for other modes."""
    layer, x = call.layer, call.inputs[0]
    factors = (layer.size,) if isinstance(layer.size, int) else tuple(layer.size)
    channels_last = getattr(layer, "data_format", "channels_last") != "channels_first"
    rank = x.type.rank
    axes = tuple(range(1, rank - 1)) if channels_last else tuple(range(2, rank))
    sizes = [x.type.shape[a] for a in axes]
    interpolation = getattr(layer, "interpolation", "nearest").lower()
    if interpolation == "nearest":
        tables = [np.arange(m * f) // f for m, f in zip(sizes, factors)]
        return _gather_nearest(call, x, axes, tables, channels_last)
    return resize_like_keras(call, x, tuple(m * f for m, f in zip(sizes, factors)), interpolation, False,
                             channels_last)
