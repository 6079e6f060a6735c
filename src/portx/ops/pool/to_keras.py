"""Keras emit rules for pooling: MaxPooling/AveragePooling layers, and Global* / even windows for adaptive pools.

The window pools follow Note [pool padding] in ``pool/__init__.py``: Keras "same" only where Keras
pads exactly as torch, else torch's border written out (``-inf`` for max, ``ZeroPadding`` for
average) and a "valid" pool; an average whose divisor is not the kernel size everywhere is the
Keras mean times a constant ``divisor_fix`` map. Keras pools have no dilation, so a dilated max
pool is the max of one strided slice per kernel tap.

Adaptive pools reach this rule with even bins only: legalization rewrites uneven ones first
(``passes/legalize/pool.py``: a bin-mean matmul, or a padded gather and a max), so global bins are
``Global*Pooling`` and evenly divided ones a plain pooling window; anything else is ``Unsupported``.

Example generated code:
    pool = layers.MaxPooling2D(3, strides=2, padding='same', data_format='channels_first', name='pool')(relu)
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import Unsupported
from .._util import spatial_shape
from ..conv import keras_same_pads
from ..pool import AVG_POOL, MAX_POOL, divisor_map, end_pad
from ..pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL

__all__ = []


def _keras_padding(in_shape, out, kernel, stride, pads):
    """The Keras padding ("valid" or "same") whose windows are torch's, or None when neither is."""
    if all(tuple(p) == (0, 0) for p in pads) and list(out) == [(n - k) // s + 1 for n, k, s in
                                                               zip(in_shape, kernel, stride)]:
        return "valid"
    same = [tuple(p) == keras_same_pads(n, k, s, 1) and o == -(-n // s)
            for n, k, s, p, o in zip(in_shape, kernel, stride, pads, out)]
    return "same" if all(same) else None


def _sizes(node):
    """(input, output) spatial sizes of a pooling node, in either layout."""
    last = node.attrs.get("channels_last", False)
    return spatial_shape(node.inputs[0].type.shape, last), spatial_shape(node.outputs[0].type.shape, last)


def _with_batch_and_channel(node, spatial_pairs) -> tuple:
    """(begin, end) pairs for every axis: ``spatial_pairs`` placed around (0, 0) for N and C."""
    if node.attrs.get("channels_last", False):
        return ((0, 0),) + tuple(spatial_pairs) + ((0, 0),)
    return ((0, 0), (0, 0)) + tuple(spatial_pairs)


def _explicit_pads(node):
    a = node.attrs
    sizes, out = _sizes(node)
    dilation = a.get("dilation") or (1,) * len(out)
    return tuple((p[0], end_pad(n, k, s, p[0], d, o)) for n, k, s, p, d, o in
                 zip(sizes, a["kernel"], a["stride"], a["pads"], dilation, out))


def _pool_kwargs(node, padding):
    a = node.attrs
    return {"pool_size": tuple(a["kernel"]), "strides": tuple(a["stride"]), "padding": padding,
            "data_format": "channels_last" if a.get("channels_last", False) else "channels_first"}


def _check_emittable(node, spatial_rank):
    """Keras pooling layers need (N, C, 1-3 spatial axes); ``Unsupported`` otherwise."""
    if not node.inputs[0].type.rank - 2 == spatial_rank in (1, 2, 3):
        raise Unsupported(f"Keras pools (N, C) plus 1 to 3 spatial axes, not a rank-{node.inputs[0].type.rank} "
                          f"input over {spatial_rank} axes")


@MAX_POOL.emits("keras-jax")
def _max_pool_to_keras(node, k):
    _check_emittable(node, len(node.attrs["kernel"]))
    x, a = node.inputs[0], node.attrs
    rank, (sizes, out) = len(a["kernel"]), _sizes(node)
    padding = None if any(d != 1 for d in a["dilation"]) else \
        _keras_padding(sizes, out, a["kernel"], a["stride"], a["pads"])
    source = x
    if padding is None:  # Note [pool padding]: torch's -inf border, then plain windows
        pads = _with_batch_and_channel(node, _explicit_pads(node))
        source = k.temp(node, f"ops.pad({k.ref(x)}, {k.lit(pads)}, constant_values=float('-inf'))", "padded")
    if any(d != 1 for d in a["dilation"]):
        _dilated_max_to_keras(node, k, source)
        return
    k.layer(node, f"MaxPooling{rank}D", _pool_kwargs(node, padding or "valid"), [source])


def _dilated_max_to_keras(node, k, padded):
    """Keras pools have no dilation: the max of one strided slice per kernel tap."""
    a, out = node.attrs, _sizes(node)[1]
    names = "ijl"[:len(out)]
    parts = ", ".join(f"{v}:{v} + {s * (o - 1) + 1}" + (f":{s}" if s > 1 else "")
                      for v, s, o in zip(names, a["stride"], out))
    window = f"[:, {parts}, :]" if a.get("channels_last", False) else f"[:, :, {parts}]"
    loops = " ".join(f"for {v} in {k.lit(tuple(range(0, d * kk, d)))}"
                     for v, kk, d in zip(names, a["kernel"], a["dilation"]))
    k.assign(node, f"ops.max(ops.stack([{padded}{window} {loops}]), axis=0)")


@AVG_POOL.emits("keras-jax")
def _avg_pool_to_keras(node, k):
    _check_emittable(node, len(node.attrs["kernel"]))
    x, a = node.inputs[0], node.attrs
    rank, (sizes, out) = len(a["kernel"]), _sizes(node)
    last = a.get("channels_last", False)
    padding = _keras_padding(sizes, out, a["kernel"], a["stride"], a["pads"])
    cls = f"AveragePooling{rank}D"
    if padding == "valid" or (padding == "same" and not a["count_include_pad"]):  # Keras "same" skips pads
        k.layer(node, cls, _pool_kwargs(node, padding), [x])
        return
    pads = _explicit_pads(node)
    source = k.pad_value(node, x, pads, last) if any(p != (0, 0) for p in pads) else x
    scale = math.prod(a["kernel"]) / divisor_map(sizes, out, a["kernel"], a["stride"], a["pads"],
                                                 a["count_include_pad"])
    scale = scale[..., None] if last else scale  # broadcast over the trailing channel axis
    if np.all(scale == 1):
        k.layer(node, cls, _pool_kwargs(node, "valid"), [source])
        return
    mean = k.sublayer(node, cls, _pool_kwargs(node, "valid"), [source], hint="mean")
    dtype = x.type.dtype if x.type.dtype in ("float16", "float32", "float64") else "float32"
    fix = k.const(node, scale.astype(dtype), "divisor_fix")  # kernel size / torch's divisor
    k.assign(node, f"ops.multiply({mean}, {fix})")


def _adaptive_as_keras_pool(node, k, kind) -> bool:
    """Global or evenly divided bins are a plain Keras pooling layer; True when written."""
    x, size = node.inputs[0], node.attrs["size"]
    last = node.attrs.get("channels_last", False)
    rank, in_spatial = len(size), spatial_shape(x.type.shape, last)
    fmt = "channels_last" if last else "channels_first"
    if all(n == 1 for n in size):
        k.layer(node, f"Global{kind}Pooling{rank}D", {"keepdims": True, "data_format": fmt}, [x])
        return True
    if all(n % o == 0 for n, o in zip(in_spatial, size)):
        window = tuple(n // o for n, o in zip(in_spatial, size))
        k.layer(node, f"{kind}Pooling{rank}D", {"pool_size": window, "strides": window, "padding": "valid",
                                                "data_format": fmt}, [x])
        return True
    return False


def _uneven(node):
    sizes = " x ".join(f"{n}->{o}" for n, o in zip(_sizes(node)[0], node.attrs["size"]))
    return Unsupported(f"adaptive pooling {sizes} has uneven bins, which no Keras layer pools; the legalize "
                       "pass rewrites them (passes/legalize/pool.py)")


@ADAPTIVE_AVG_POOL.emits("keras-jax")
def _adaptive_avg_pool_to_keras(node, k):
    """GlobalAveragePooling or AveragePooling (even bins only: legalization rewrote uneven ones)."""
    _check_emittable(node, len(node.attrs["size"]))
    if not _adaptive_as_keras_pool(node, k, "Average"):
        raise _uneven(node)


@ADAPTIVE_MAX_POOL.emits("keras-jax")
def _adaptive_max_pool_to_keras(node, k):
    """GlobalMaxPooling or MaxPooling (even bins only: legalization rewrote uneven ones)."""
    _check_emittable(node, len(node.attrs["size"]))
    if not _adaptive_as_keras_pool(node, k, "Max"):
        raise _uneven(node)
