"""Torch import rules for pooling: aten::max_pool*, aten::avg_pool* and aten::adaptive_*_pool*.

ATen gives kernel, stride, padding and dilation as an int or one int per spatial axis (an empty
stride means the kernel); the IR stores one value per axis and (begin, end) pad pairs. Ops that
also return indices (``max_pool2d_with_indices``, ``adaptive_max_pool2d``) import when only the
values are read. Unbatched inputs are refused: the IR's pools read (N, C, *spatial).

Example:
    aten::max_pool2d(x, [3, 3], [2, 2], [1, 1]) ->
    max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), ceil_mode=False}
"""
from __future__ import annotations

from ..pool import AVG_POOL, MAX_POOL
from ..pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL

__all__ = []


def _spatial(value, rank, default=None):
    """torch's int[N] arguments: a bare int or one-element list means every axis; [] is ``default``."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return default
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) for v in (value * rank if len(value) == 1 else value))


def _batched_input(call, rank):
    """The pooled input, refused unless it is (N, C, *spatial) with ``rank`` spatial axes."""
    x = call.arg("self")
    if x.type.rank != rank + 2:
        call.unsupported(f"unbatched input {x.type.shape}: add a batch dimension before pooling")
    return x


def _window_attrs(call, rank):
    kernel = _spatial(call.arg("kernel_size"), rank)
    x = _batched_input(call, rank)
    return x, {"kernel": kernel, "stride": _spatial(call.arg("stride"), rank, kernel),
               "pads": tuple((p, p) for p in _spatial(call.arg("padding", 0), rank)),
               "ceil_mode": bool(call.arg("ceil_mode", False))}


def _pool_rank(call) -> int:
    """Spatial rank from the ATen name: 1 for ``*1d*`` ops, else 2."""
    return 1 if call.node.target._schema.name.endswith(("1d", "1d_with_indices")) else 2


def _values_only(call, value):
    """For ops returning (values, indices): refuse when the indices are read, else ``[values, None]``."""
    if len(call.node.target._schema.returns) == 1:
        return value
    if call.output_read(1):
        call.unsupported("the indices output of max pooling is used (only the values are supported)")
    return [value, None]  # Note [unused outputs] in frontends/torch.py


@MAX_POOL.imports("torch", "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool1d_with_indices",
                  "aten::max_pool2d_with_indices")
def _max_pool_from_aten(call):
    rank = _pool_rank(call)
    x, attrs = _window_attrs(call, rank)
    attrs["dilation"] = _spatial(call.arg("dilation", 1), rank)
    return _values_only(call, call.emit(MAX_POOL, [x], attrs))


@AVG_POOL.imports("torch", "aten::avg_pool1d", "aten::avg_pool2d")
def _avg_pool_from_aten(call):
    if call.arg("divisor_override") is not None:
        call.unsupported("avg_pool2d with divisor_override")
    x, attrs = _window_attrs(call, _pool_rank(call))
    attrs["count_include_pad"] = bool(call.arg("count_include_pad", True))
    return call.emit(AVG_POOL, [x], attrs)


def _adaptive_from_aten(call, op):
    x = _batched_input(call, _pool_rank(call))
    size = tuple(call.out_type(0).shape[2:])  # torch has resolved None entries of output_size
    return _values_only(call, call.emit(op, [x], {"size": size}))


@ADAPTIVE_AVG_POOL.imports("torch", "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d")
def _adaptive_avg_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_AVG_POOL)


@ADAPTIVE_MAX_POOL.imports("torch", "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d")
def _adaptive_max_pool_from_aten(call):
    return _adaptive_from_aten(call, ADAPTIVE_MAX_POOL)
