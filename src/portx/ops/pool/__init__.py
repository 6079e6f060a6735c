"""Window pooling on NC... tensors: max_pool and avg_pool with torch's padding and divisor rules.

Note [pool padding]: torch pads max pooling with -inf and average pooling with zeros. With
``ceil_mode`` a last, partial window is kept when it starts inside the input or the left padding,
and it may reach past the right padding. Keras "same" pads differently, so the Keras rules write
explicit padding (``-inf`` for max) and a "valid" pool, using "same" only where Keras would pad
exactly as torch does. An average's divisor counts the window clipped to the padded input
(``count_include_pad``) or to the real input; where that is not the kernel size everywhere, the
rule multiplies the Keras mean by a constant map of ``kernel size / divisor``.

Adaptive pools live in ``adaptive_pool.py``.

Example IR:
    %y: float32[1x8x4x4] = max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)),
        dilation=(1, 1), ceil_mode=False}  # pool
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last, spatial_shape

__all__ = ["MAX_POOL", "AVG_POOL", "pooled_size", "avg_divisors", "check_emittable", "pool_rank",
           "values_only"]

_WINDOW = {"kernel": REQUIRED, "stride": REQUIRED, "pads": REQUIRED, "ceil_mode": False, "channels_last": False}
MAX_POOL = OpDef("max_pool", ("x",), {**_WINDOW, "dilation": REQUIRED}, family="pool",
                 doc="torch max_pool: -inf padding, (begin, end) pads per spatial axis.")
AVG_POOL = OpDef("avg_pool", ("x",), {**_WINDOW, "count_include_pad": True}, family="pool",
                 doc="torch avg_pool: zero padding; divisor per count_include_pad (Note [pool padding]).")


def pooled_size(size, k, s, pads, d=1, ceil_mode=False) -> int:
    """Output length of one axis, torch's rule: ``pooled_size(7, 3, 2, (1, 1), ceil_mode=True)`` -> 4."""
    lo, hi = pads
    span = size + lo + hi - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + lo:  # the last window would start in the right padding
        out -= 1
    return out


def _end_pad(size, k, s, lo, d, out) -> int:
    """Right padding the ``out`` windows read (may exceed the stated pad with ceil_mode)."""
    return max((out - 1) * s + d * (k - 1) + 1 - size - lo, 0)


def _out_spatial(in_spatial, kernel, stride, pads, dilation, ceil_mode) -> tuple:
    out = tuple(pooled_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in
                zip(in_spatial, kernel, stride, pads, dilation or (1,) * len(kernel)))
    if min(out) <= 0:
        raise ValueError(f"pool: output {out} from input {tuple(in_spatial)}, kernel {kernel}")
    return out


def _window_type(x, *, kernel, stride, pads, ceil_mode, dilation=None, **_):
    rank = len(kernel)
    if x.rank < rank + 1 or not len(stride) == len(pads) == len(dilation or kernel) == rank:
        raise ValueError(f"pool: kernel {kernel}, stride {stride}, pads {pads} do not fit input {x.shape}")
    return x.with_shape(x.shape[:-rank] + _out_spatial(x.shape[-rank:], kernel, stride, pads, dilation, ceil_mode))


MAX_POOL.infer(honors_channels_last(_window_type))
AVG_POOL.infer(honors_channels_last(_window_type))


def _padded_windows(x, kernel, stride, pads, dilation, out, fill):
    """Pad the trailing axes as the windows need, then yield one strided view per kernel offset."""
    rank = len(kernel)
    ends = [_end_pad(n, k, s, p[0], d, o) for n, k, s, p, d, o in
            zip(x.shape[-rank:], kernel, stride, pads, dilation, out)]
    widths = [(0, 0)] * (x.ndim - rank) + [(p[0], e) for p, e in zip(pads, ends)]
    xp = np.pad(x.astype(np.float64), widths, constant_values=fill)
    for offset in itertools.product(*[range(0, d * k, d) for k, d in zip(kernel, dilation)]):
        yield xp[(Ellipsis,) + tuple(slice(i, i + s * (o - 1) + 1, s) for i, s, o in zip(offset, stride, out))]


@MAX_POOL.reference
@honors_channels_last
def _max_pool_numpy(x, *, kernel, stride, pads, dilation, ceil_mode):
    out = _out_spatial(x.shape[-len(kernel):], kernel, stride, pads, dilation, ceil_mode)
    views = list(_padded_windows(x, kernel, stride, pads, dilation, out, -np.inf))
    return np.max(np.stack(views), axis=0).astype(x.dtype)


def avg_divisors(size, k, s, pads, out, count_include_pad):
    """Per-axis divisor of each window, as torch computes it: ``avg_divisors(5, 3, 2, (1, 1), 3, False)``."""
    starts = np.arange(out) * s - pads[0]
    ends = np.minimum(starts + k, size + pads[1])
    if count_include_pad:
        return ends - starts
    return np.minimum(ends, size) - np.maximum(starts, 0)


def _divisor_map(in_spatial, out, kernel, stride, pads, count_include_pad):
    """torch's divisor for every output position (per-axis counts multiply)."""
    per_axis = [avg_divisors(n, k, s, p, o, count_include_pad)
                for n, k, s, p, o in zip(in_spatial, kernel, stride, pads, out)]
    return math.prod(np.ix_(*per_axis))


@AVG_POOL.reference
@honors_channels_last
def _avg_pool_numpy(x, *, kernel, stride, pads, ceil_mode, count_include_pad):
    rank = len(kernel)
    out = _out_spatial(x.shape[-rank:], kernel, stride, pads, None, ceil_mode)
    total = sum(_padded_windows(x, kernel, stride, pads, (1,) * rank, out, 0.0))
    return (total / _divisor_map(x.shape[-rank:], out, kernel, stride, pads, count_include_pad)).astype(x.dtype)


def _keras_padding(in_shape, out, kernel, stride, pads):
    """The Keras padding ("valid" or "same") whose windows are torch's, or None when neither is."""
    from ..conv import keras_same_pads  # same layer; conv owns Keras's "same" rule
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
    return tuple((p[0], _end_pad(n, k, s, p[0], d, o)) for n, k, s, p, d, o in
                 zip(sizes, a["kernel"], a["stride"], a["pads"], dilation, out))


def _pool_kwargs(node, padding):
    a = node.attrs
    return {"pool_size": tuple(a["kernel"]), "strides": tuple(a["stride"]), "padding": padding,
            "data_format": "channels_last" if a.get("channels_last", False) else "channels_first"}


def check_emittable(node, spatial_rank):
    """Keras pooling layers need (N, C, 1-3 spatial axes); NotImplementedError otherwise."""
    if not node.inputs[0].type.rank - 2 == spatial_rank in (1, 2, 3):
        raise NotImplementedError(f"{node.where()}: pooling is emitted for N, C + 1-3 spatial axes only")


@MAX_POOL.emits("keras-jax")
def _max_pool_to_keras(node, k):
    check_emittable(node, len(node.attrs["kernel"]))
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
    check_emittable(node, len(node.attrs["kernel"]))
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
    scale = math.prod(a["kernel"]) / _divisor_map(sizes, out, a["kernel"], a["stride"], a["pads"],
                                                  a["count_include_pad"])
    scale = scale[..., None] if last else scale  # broadcast over the trailing channel axis
    if np.all(scale == 1):
        k.layer(node, cls, _pool_kwargs(node, "valid"), [source])
        return
    mean = k.sublayer(node, cls, _pool_kwargs(node, "valid"), [source])
    dtype = x.type.dtype if x.type.dtype in ("float16", "float32", "float64") else "float32"
    fix = k.const(node, scale.astype(dtype), "divisor_fix")  # kernel size / torch's divisor
    k.assign(node, f"ops.multiply({mean}, {fix})")


# -- torch import rules ------------------------------------------------------------------


def _spatial(value, rank, default=None):
    """torch's int[N] arguments: a bare int or one-element list means every axis; [] is ``default``."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return default
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) for v in (value * rank if len(value) == 1 else value))


def _window_attrs(call, rank):
    kernel = _spatial(call.arg("kernel_size"), rank)
    x = call.arg("self")
    if x.type.rank != rank + 2:
        call.unsupported(f"unbatched input {x.type.shape}: add a batch dimension before pooling")
    return x, {"kernel": kernel, "stride": _spatial(call.arg("stride"), rank, kernel),
               "pads": tuple((p, p) for p in _spatial(call.arg("padding", 0), rank)),
               "ceil_mode": bool(call.arg("ceil_mode", False))}


def pool_rank(call) -> int:
    """Spatial rank from the ATen name: 1 for ``*1d*`` ops, else 2."""
    return 1 if call.node.target._schema.name.endswith(("1d", "1d_with_indices")) else 2


def values_only(call, value):
    """For ops returning (values, indices): refuse when the indices are read, else ``[values, None]``."""
    if len(call.node.target._schema.returns) == 1:
        return value
    if call.output_read(1):
        call.unsupported("the indices output of max pooling is used (only the values are supported)")
    return [value, None]  # Note [unused outputs] in frontends/torch.py


@MAX_POOL.imports("torch", "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool1d_with_indices",
                  "aten::max_pool2d_with_indices")
def _max_pool_from_aten(call):
    rank = pool_rank(call)
    x, attrs = _window_attrs(call, rank)
    attrs["dilation"] = _spatial(call.arg("dilation", 1), rank)
    return values_only(call, call.emit(MAX_POOL, [x], attrs))


@AVG_POOL.imports("torch", "aten::avg_pool1d", "aten::avg_pool2d")
def _avg_pool_from_aten(call):
    if call.arg("divisor_override") is not None:
        call.unsupported("avg_pool2d with divisor_override")
    x, attrs = _window_attrs(call, pool_rank(call))
    attrs["count_include_pad"] = bool(call.arg("count_include_pad", True))
    return call.emit(AVG_POOL, [x], attrs)

