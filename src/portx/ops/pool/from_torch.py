"""Torch import rules for pooling: aten::max_pool*, aten::avg_pool* and aten::adaptive_*_pool*.

ATen gives kernel, stride, padding and dilation as an int or one int per spatial axis (an empty
stride means the kernel); the IR stores one value per axis and (begin, end) pad pairs. The indices
of ``max_pool*d_with_indices`` are built from plain ops (Note [max pool indices] in ``indices.py``);
so are those of ``adaptive_max_pool*d`` (up to ``MAX_TAPS`` positions per bin). An unbatched input (C, *spatial) gets a
batch axis of 1 around the pool, since the IR's pools read (N, C, *spatial). ``divisor_override``
is the count_include_pad average times a constant map of ``torch's divisor / override``.

Example:
    aten::max_pool2d(x, [3, 3], [2, 2], [1, 1]) ->
    max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), ceil_mode=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY
from ..pool import AVG_POOL, MAX_POOL, divisor_map
from ..pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL
from ..pool.indices import adaptive_max_pool_indices, max_pool_indices
from ..shape import RESHAPE

__all__ = []


def _spatial(value, rank, default=None):
    """torch's int[N] arguments: a bare int or one-element list means every axis; [] is ``default``."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return default
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) for v in (value * rank if len(value) == 1 else value))


def _batched_input(call, rank):
    """The pooled input as (N, C, *spatial) with ``rank`` spatial axes: an unbatched (C, *spatial) one gets N = 1."""
    x = call.arg("self")
    if x.type.rank == rank + 1:
        return call.emit(RESHAPE, [x], {"shape": (1,) + tuple(x.type.shape)})
    if x.type.rank != rank + 2:
        call.unsupported(f"input {x.type.shape} is not (N, C) or (C,) plus {rank} spatial axes")
    return x


def _unbatched(call, values):
    """Each Value of ``values`` reshaped to torch's recorded output shape (drops the batch axis added above)."""
    return [v if v is None or v.type.shape == call.out_type(i).shape else
            call.emit(RESHAPE, [v], {"shape": call.out_type(i).shape}) for i, v in enumerate(values)]


def _window_attrs(call, rank):
    kernel = _spatial(call.arg("kernel_size"), rank)
    x = _batched_input(call, rank)
    return x, {"kernel": kernel, "stride": _spatial(call.arg("stride"), rank, kernel),
               "pads": tuple((p, p) for p in _spatial(call.arg("padding", 0), rank)),
               "ceil_mode": bool(call.arg("ceil_mode", False))}


def _pool_rank(call) -> int:
    """Spatial rank from the ATen name: ``max_pool3d_with_indices`` -> 3."""
    name = call.node.target._schema.name.replace("_with_indices", "")
    return int(name[-2])


def _outputs(call, values):
    """One Value, or the (values, indices) list of an op that returns both."""
    values = _unbatched(call, values)
    return values[0] if len(call.node.target._schema.returns) == 1 else values


@MAX_POOL.imports("torch", "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::max_pool1d_with_indices",
                  "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices")
def _max_pool_from_aten(call):
    """Values, and torch's flat indices where they are read (Note [max pool indices])."""
    rank = _pool_rank(call)
    x, attrs = _window_attrs(call, rank)
    attrs["dilation"] = _spatial(call.arg("dilation", 1), rank)
    values = call.emit(MAX_POOL, [x], attrs)
    indices = None
    if len(call.node.target._schema.returns) == 2 and call.output_read(1):
        indices = max_pool_indices(call, x, attrs["kernel"], attrs["stride"], attrs["pads"], attrs["dilation"],
                                   values.type.shape[-rank:])
    return _outputs(call, [values, indices])


@AVG_POOL.imports("torch", "aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d")
def _avg_pool_from_aten(call):
    rank, override = _pool_rank(call), call.arg("divisor_override")
    x, attrs = _window_attrs(call, rank)
    attrs["count_include_pad"] = bool(call.arg("count_include_pad", True)) or override is not None
    y = call.emit(AVG_POOL, [x], attrs)
    if override is not None:  # sum / override = (count_include_pad mean) * (its divisor / override)
        scale = divisor_map(x.type.shape[-rank:], y.type.shape[-rank:], attrs["kernel"], attrs["stride"],
                            attrs["pads"], True) / float(override)
        fix = call.const(scale.astype(y.type.dtype)) if np.ptp(scale) else call.const(
            np.asarray(scale.flat[0], dtype=y.type.dtype))
        y = call.emit(BINARY["mul"], [y, fix])
    return _outputs(call, [y])


def _adaptive_from_aten(call, op):
    rank = _pool_rank(call)
    x = _batched_input(call, rank)
    size = tuple(call.out_type(0).shape[-rank:])  # torch has resolved None entries of output_size
    values, indices = call.emit(op, [x], {"size": size}), None
    if len(call.node.target._schema.returns) == 2 and call.output_read(1):
        indices = adaptive_max_pool_indices(call, x, size)
    return _outputs(call, [values, indices])


@ADAPTIVE_AVG_POOL.imports("torch", "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d", "aten::adaptive_avg_pool3d", "aten::_adaptive_avg_pool3d")
def _adaptive_avg_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_AVG_POOL)


@ADAPTIVE_MAX_POOL.imports("torch", "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d",
                           "aten::adaptive_max_pool3d")
def _adaptive_max_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_MAX_POOL)


_REFUSED = {"aten::fractional_max_pool2d": "fractional max pooling draws its pooling regions at random per call; "
                                           "there is no keras.ops form: use max_pool2d or adaptive_max_pool2d",
            "aten::fractional_max_pool3d": "fractional max pooling draws its pooling regions at random per call; "
                                           "there is no keras.ops form: use max_pool3d or adaptive_max_pool3d",
            "aten::max_pool2d_with_indices_backward": "a gradient (backward) op: convert the forward model; the "
                                                      "target's autodiff gives its gradient"}


@imports("torch", *_REFUSED)
def _refused_pool_from_aten(call):
    """Pooling ops no target can express: named with the reason (exit 3) instead of an unknown op."""
    call.unsupported(_REFUSED[call.node.target._schema.name])
