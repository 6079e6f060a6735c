"""Fuzz families for layer-like ops: conv, conv_transpose, pooling, resize, normalization, reductions.

Used by ``fuzz_families.py``; each builder is ``build(b, x)`` on a ``fuzz_graphs.Builder``.
Windows are drawn per spatial axis so that every output length is positive, the way the torch
import rules see them (symmetric pooling pads at most half the effective kernel, output_padding
below stride or dilation).

Example:
    >>> name, accepts, build = LAYER_FAMILIES[0]
"""
from __future__ import annotations

import numpy as np

from portx.ops.pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL
from portx.ops.conv import CONV, CONV_TRANSPOSE
from portx.ops.norm import BATCH_NORM, GROUP_NORM, LAYER_NORM, RMS_NORM
from portx.ops.pool import AVG_POOL, MAX_POOL
from portx.ops.reduce import ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, SOFTMAX, STD, VAR, VECTOR_NORM
from portx.ops.resize import RESIZE
from tests.support.fuzz_graphs import is_float, is_int

__all__ = ["LAYER_FAMILIES"]


def _divisor(b, n):
    return b.pick([g for g in range(1, n + 1) if n % g == 0])


def _bias(b, n):
    return [b.stored((n,), hint=".bias")] if b.flag() else []


def _conv(b, x):
    """N-d conv: groups, stride 1-3, dilation 1-2, asymmetric pads (as torch padding='same' makes)."""
    n, c, *sizes = x.type.shape
    groups = _divisor(b, c)
    stride, dilation, pads, kernel = [], [], [], []
    for size in sizes:
        s, d, lo, hi = b.int(1, 3), b.int(1, 2), b.int(0, 2), b.int(0, 2)
        kernel.append(b.int(1, min(3, (size + lo + hi - 1) // d + 1)))
        stride.append(s), dilation.append(d), pads.append((lo, hi))
    out = groups * b.int(1, 3)
    w = b.weight((out, c // groups, *kernel))
    attrs = {"stride": tuple(stride), "pads": tuple(pads), "dilation": tuple(dilation), "groups": groups}
    return b.emit(CONV, [x, w] + _bias(b, out), attrs)


def _conv_transpose(b, x):
    """N-d transposed conv; output_padding below max(stride, dilation) as torch requires."""
    n, c, *sizes = x.type.shape
    groups = _divisor(b, c)
    attrs = {"stride": [], "padding": [], "output_padding": [], "dilation": [], "groups": groups}
    kernel = []
    for size in sizes:
        s, d, k = b.int(1, 3), b.int(1, 2), b.int(1, 3)
        op = b.int(0, max(s, d) - 1)
        p = b.int(0, 2)
        if (size - 1) * s - 2 * p + d * (k - 1) + op + 1 <= 0:
            p = 0
        for key, v in zip(("stride", "padding", "output_padding", "dilation"), (s, p, op, d)):
            attrs[key].append(v)
        kernel.append(k)
    attrs = {key: tuple(v) if isinstance(v, list) else v for key, v in attrs.items()}
    og = b.int(1, 3)
    w = b.weight((c, og, *kernel))
    return b.emit(CONV_TRANSPOSE, [x, w] + _bias(b, og * groups), attrs)


def _max_pool_pad(k, d, is_max):
    """torch's limit: padding at most half the (effective) kernel."""
    return ((k - 1) * d + 1) // 2 if is_max else k // 2


def _pool(b, x):
    """max_pool (with dilation) or avg_pool (count_include_pad), torch's padding limits."""
    is_max = b.flag()
    kernel, stride, pads, dilation = [], [], [], []
    for size in x.type.shape[2:]:
        d = b.int(1, 2) if is_max else 1
        k = b.int(1, 3)
        p = b.int(0, _max_pool_pad(k, d, is_max))
        while d * (k - 1) + 1 > size + 2 * p:  # the window must fit the padded input
            k -= 1
            p = min(p, _max_pool_pad(k, d, is_max))
        kernel.append(k), stride.append(b.int(1, 3)), pads.append((p, p)), dilation.append(d)
    attrs = {"kernel": tuple(kernel), "stride": tuple(stride), "pads": tuple(pads), "ceil_mode": b.flag()}
    if is_max:
        return b.emit(MAX_POOL, [x], {**attrs, "dilation": tuple(dilation)}, exact=True)
    return b.emit(AVG_POOL, [x], {**attrs, "count_include_pad": b.flag()})


def _adaptive_pool(b, x):
    size = tuple(b.int(1, 6) for _ in x.type.shape[2:])
    return b.emit(b.pick([ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL]), [x], {"size": size})


def _resize(b, x):
    """torch upsample: sizes, or scale factors with torch's floor(in * scale) sizes."""
    sizes = x.type.shape[2:]
    mode = b.pick(["nearest", "nearest_exact", "linear"] + (["cubic"] if len(sizes) == 2 else []))
    align = mode in ("linear", "cubic") and b.flag()
    scales = None
    if not align and b.flag():
        scales = tuple(b.pick([0.5, 0.75, 1.5, 2.0, 2.5, 3.0]) for _ in sizes)
        if any(int(n * s) < 1 for n, s in zip(sizes, scales)):
            scales = None
    size = tuple(int(n * s) for n, s in zip(sizes, scales)) if scales else tuple(b.int(1, 8) for _ in sizes)
    return b.emit(RESIZE, [x], {"size": size, "mode": mode, "align_corners": align, "scales": scales})


def _eps(b, stored_stats=False):
    """eps; at least 1e-3 where the statistics are computed. Values that are all equal along the
    normalized axes (tile, expand, upsampling make them) have a float32 mean off by an ulp, which
    ``1 / sqrt(eps)`` amplifies to ~1e-4 at eps=1e-5: float32 behaviour, not a conversion error."""
    return b.pick([1e-5, 1e-3, 0.1] if stored_stats else [1e-3, 0.01, 0.1])


def _optional_vectors(b, shape, count):
    """``count`` optional affine vectors: absent, stored, or (sometimes) computed, i.e. graph inputs."""
    def vector(i):
        choice = b.int(0, 4)
        if choice == 0:
            return b.input(shape)  # a computed weight: the keras.ops form instead of a layer
        return b.param(b.data(shape), ".weight" if i == 0 else ".bias") if choice > 2 else None
    return [vector(i) for i in range(count)]


def _batch_norm(b, x):
    """Stored statistics, or batch statistics as mean / var nodes (track_running_stats=False)."""
    c, stored = x.type.shape[1], b.flag()
    if stored:
        stats = [b.param(b.data((c,)), ".running_mean"), b.param(np.abs(b.data((c,))) + 0.1, ".running_var")]
    else:
        axes = {"axes": (0,) + tuple(range(2, x.type.rank)), "keepdims": False}
        stats = [b.emit(REDUCE["mean"], [x], axes), b.emit(VAR, [x], {**axes, "correction": 0.0})]
    return b.emit(BATCH_NORM, [x] + _optional_vectors(b, (c,), 2) + stats, {"eps": _eps(b, stored)})


def _layer_norm(b, x):
    """layer_norm or rms_norm over 1..rank trailing axes."""
    shape = x.type.shape[x.type.rank - b.int(1, x.type.rank):]
    if b.flag():
        weight, bias = _optional_vectors(b, shape, 2)
        return b.emit(LAYER_NORM, [x, weight, bias], {"normalized_shape": shape, "eps": _eps(b)})
    rms = {"normalized_shape": shape, "eps": _eps(b, stored_stats=True)}  # no mean to cancel
    return b.emit(RMS_NORM, [x] + _optional_vectors(b, shape, 1), rms)


def _group_norm(b, x):
    c = x.type.shape[1]
    return b.emit(GROUP_NORM, [x] + _optional_vectors(b, (c,), 2), {"groups": _divisor(b, c), "eps": _eps(b)})


def _reduce(b, x):
    """sum/mean/prod/amax/amin/any/all/logsumexp, var/std, vector_norm over a drawn axis set."""
    rank = x.type.rank
    axes, keepdims = b.axes(rank), b.flag()
    count = int(np.prod([x.type.shape[a] for a in axes]))
    names = ["sum", "amax", "amin", "any", "all"] + (["prod"] if count <= 12 else [])
    if is_float(x):
        names += ["mean", "logsumexp", "var", "std", "vector_norm"]
    name = b.pick(names)
    attrs = {"axes": axes, "keepdims": keepdims}
    if name in ("var", "std"):
        correction = b.pick([0.0, 1.0]) if count > 1 else 0.0
        return b.emit(VAR if name == "var" else STD, [x], {**attrs, "correction": correction})
    if name == "vector_norm":
        return b.emit(VECTOR_NORM, [x], {**attrs, "ord": b.pick([2.0, 1.0, 3.0, 0.5, 0.0, np.inf, -np.inf])})
    return b.emit(REDUCE[name], [x], attrs, exact=name in ("amax", "amin", "any", "all"))


def _argmax(b, x):
    """argmax/argmin of exact values (a rounding difference would move the index)."""
    axis = b.pick([None] + list(range(x.type.rank)))
    return b.emit(b.pick([ARGMAX, ARGMIN]), [x], {"axis": axis, "keepdims": b.flag()}, exact=True)


def _softmax(b, x):
    return b.emit(b.pick([SOFTMAX, LOG_SOFTMAX]), [x], {"axis": b.int(0, x.type.rank - 1)})


def _conv_batch_norm(b, x):
    """conv then batch_norm with stored statistics: the pattern fold_batch_norm rewrites."""
    y = _conv(b, x)
    c = y.type.shape[1]
    stats = [b.param(b.data((c,)), ".running_mean"), b.param(np.abs(b.data((c,))) + 0.1, ".running_var")]
    return b.emit(BATCH_NORM, [y] + _optional_vectors(b, (c,), 2) + stats, {"eps": _eps(b, stored_stats=True)})


def _spatial(b, v):
    return is_float(v) and v.type.rank in (3, 4)


def _float_rank(low):
    return lambda b, v: is_float(v) and v.type.rank >= low


LAYER_FAMILIES = [
    ("pool", _spatial, _pool),
    ("resize", _spatial, _resize),
    ("conv", lambda b, v: is_float(v) and 3 <= v.type.rank <= 5, _conv),
    ("conv_transpose", lambda b, v: is_float(v) and 3 <= v.type.rank <= 5, _conv_transpose),
    ("adaptive_pool", _spatial, _adaptive_pool),
    ("conv_batch_norm", lambda b, v: is_float(v) and 3 <= v.type.rank <= 5, _conv_batch_norm),
    ("batch_norm", _float_rank(2), _batch_norm),
    ("layer_norm", _float_rank(1), _layer_norm),
    ("group_norm", _float_rank(2), _group_norm),
    ("reduce", lambda b, v: v.type.rank >= 1 and v.type.dtype in ("float32", "int32", "int64", "bool"), _reduce),
    ("argmax", lambda b, v: v.type.rank >= 1 and v in b.exact and (is_float(v) or is_int(v)), _argmax),
    ("softmax", _float_rank(1), _softmax),
]
