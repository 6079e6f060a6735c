"""JAX import rules for window reductions (pooling).

``reduce_window_max`` is ``max_pool`` and ``reduce_window_sum`` is ``avg_pool`` (zero padding,
count_include_pad) times the window size, on the axes the window moves over: those axes are
permuted to the end and the others folded into two leading (N, C) axes, so the pool has the
shape emitters expect.

Example:
    reduce_window_max[window_dimensions=(1, 2, 2, 1), ...](%x)
      -> permute {perm=(0, 3, 1, 2)} -> max_pool {kernel=(2, 2), ...} -> permute {perm=(0, 2, 3, 1)}
"""
from __future__ import annotations

import math

from .._jax import inverse, permuted, reshaped
from .._util import kind
from ..elementwise import BINARY
from ..elementwise.unary import UNARY
from ..pool import AVG_POOL, MAX_POOL

__all__ = []


def _window_axes(call):
    """(moving axes, kernel, stride, pads, dilation) of a reduce_window, checked for what pools express."""
    p, rank = call.params, call.in_type(0).rank
    kernel, stride = tuple(p["window_dimensions"]), tuple(p["window_strides"])
    pads = tuple(tuple(int(v) for v in pair) for pair in p["padding"])
    dilation = tuple(p.get("window_dilation") or (1,) * rank)
    if any(d != 1 for d in p.get("base_dilation") or ()):
        call.unsupported("reduce_window with base (input) dilation")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        call.unsupported("reduce_window with negative padding")
    axes = [i for i in range(rank) if (kernel[i], stride[i], pads[i], dilation[i]) != (1, 1, (0, 0), 1)]
    pick = lambda seq: tuple(int(seq[i]) for i in axes)  # noqa: E731
    return axes, pick(kernel), pick(stride), tuple(pads[i] for i in axes), pick(dilation)


def _pooled(call, x, op, attrs_of):
    """Pool ``x`` over the moving axes: permute them last, fold the rest into (N, C), and undo both."""
    axes, kernel, stride, pads, dilation = _window_axes(call)
    if not axes:
        return None
    if len(axes) > 3:
        call.unsupported(f"a window over {len(axes)} axes (pools take 1 to 3)")
    others = [i for i in range(x.type.rank) if i not in axes]
    perm = others + axes
    moved = permuted(call, x, perm)
    lead = [x.type.shape[i] for i in others]
    folded = ([math.prod(lead[:-1]), lead[-1]] if lead else [1, 1]) if len(lead) != 2 else lead
    spatial = moved.type.shape[len(others):]
    y = call.emit(op, [reshaped(call, moved, (*folded, *spatial))], attrs_of(kernel, stride, pads, dilation))
    y = reshaped(call, y, (*lead, *y.type.shape[2:]))
    return permuted(call, y, inverse(perm)), math.prod(kernel)


@MAX_POOL.imports("jax", "reduce_window_max")
def _reduce_window_max_from_jax(call):
    result = _pooled(call, call.input(0), MAX_POOL,
                     lambda k, s, p, d: {"kernel": k, "stride": s, "pads": p, "dilation": d})
    return call.input(0) if result is None else result[0]


@MAX_POOL.imports("jax", "reduce_window_min")
def _reduce_window_min_from_jax(call):
    """min over a window is -max(-x); the padding value (+inf) becomes -inf on the negated input."""
    if kind(call.in_type(0).dtype) != 2:
        call.unsupported(f"reduce_window_min on {call.in_type(0).dtype}")
    x = call.input(0)
    neg = call.emit(UNARY["neg"], [x])
    window = _pooled(call, neg, MAX_POOL,
                     lambda k, s, p, d: {"kernel": k, "stride": s, "pads": p, "dilation": d})
    return x if window is None else call.emit(UNARY["neg"], [window[0]])


@AVG_POOL.imports("jax", "reduce_window_sum")
def _reduce_window_sum_from_jax(call):
    if kind(call.in_type(0).dtype) != 2:
        call.unsupported(f"reduce_window_sum on {call.in_type(0).dtype} (pools work on floats)")
    if any(d != 1 for d in call.params.get("window_dilation") or ()):
        call.unsupported("reduce_window_sum with window dilation (avg_pool has none)")
    result = _pooled(call, call.input(0), AVG_POOL,
                     lambda k, s, p, d: {"kernel": k, "stride": s, "pads": p, "count_include_pad": True})
    if result is None:
        return call.input(0)
    mean, size = result
    return call.emit(BINARY["mul"], [mean, call.scalar(size, mean.type.dtype)])
