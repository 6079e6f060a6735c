"""Window pooling on NC... tensors: max_pool and avg_pool with torch's padding and divisor rules.

Note [pool padding]: torch pads max pooling with -inf and average pooling with zeros. With
``ceil_mode`` a last, partial window is kept when it starts inside the input or the left padding,
and it may reach past the right padding. Keras "same" pads differently, so the Keras rules write
explicit padding (``-inf`` for max) and a "valid" pool, using "same" only where Keras would pad
exactly as torch does. An average's divisor counts the window clipped to the padded input
(``count_include_pad``) or to the real input; where that is not the kernel size everywhere, the
rule multiplies the Keras mean by a constant map of ``kernel size / divisor``.

This module declares the two window pools with their shape rules and NumPy references, and the
window arithmetic the rules beside it share (``from_torch.py``, ``from_keras.py``, ``from_jax.py``,
``to_keras.py``, ``to_torch.py``). Adaptive pools are declared in ``adaptive.py``.

Example IR:
    %y: float32[1x8x4x4] = max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)),
        dilation=(1, 1), ceil_mode=False}  # pool
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last

__all__ = ["MAX_POOL", "AVG_POOL", "pooled_size", "end_pad", "avg_divisors", "divisor_map"]

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


def end_pad(size, k, s, lo, d, out) -> int:
    """Right padding the ``out`` windows read (may exceed the stated pad with ceil_mode):
    ``end_pad(7, 3, 2, 1, 1, 4)`` -> 1 (``pooled_size(7, 3, 2, (1, 1), ceil_mode=True)`` windows)."""
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
    ends = [end_pad(n, k, s, p[0], d, o) for n, k, s, p, d, o in
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


def divisor_map(in_spatial, out, kernel, stride, pads, count_include_pad):
    """torch's divisor for every output position (per-axis counts multiply):
    ``divisor_map((5,), (3,), (3,), (2,), ((1, 1),), False)`` -> ``[2, 3, 2]``."""
    per_axis = [avg_divisors(n, k, s, p, o, count_include_pad)
                for n, k, s, p, o in zip(in_spatial, kernel, stride, pads, out)]
    return math.prod(np.ix_(*per_axis))


@AVG_POOL.reference
@honors_channels_last
def _avg_pool_numpy(x, *, kernel, stride, pads, ceil_mode, count_include_pad):
    rank = len(kernel)
    out = _out_spatial(x.shape[-rank:], kernel, stride, pads, None, ceil_mode)
    total = sum(_padded_windows(x, kernel, stride, pads, (1,) * rank, out, 0.0))
    return (total / divisor_map(x.shape[-rank:], out, kernel, stride, pads, count_include_pad)).astype(x.dtype)
