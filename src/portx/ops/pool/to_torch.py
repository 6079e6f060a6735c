"""torch-xla emit rules for pooling: nn.MaxPoolNd / nn.AvgPoolNd / nn.Adaptive*PoolNd where they fit.

Torch's pooling modules pad both ends alike and at most half a window. Other paddings (Keras
"same" with stride 2 pads only the end) become an explicit ``F.pad`` (``-inf`` for max, zeros
for average) and an unpadded pool; an average whose divisor then differs from torch's
(``count_include_pad``, windows clipped at the border) is rescaled by a constant map of
``kernel size / divisor`` (Note [pool padding]). Adaptive pools with uneven bins fall back to the
CPU under PyTorch/XLA, so legalization rewrites them first (``passes/legalize/pool.py``: constant
matmuls for average, an index gather and a max for max); this rule writes the even ones as
``nn.Adaptive*PoolNd`` and refuses any other (``Unsupported``).

Example generated code:
    self.pool = nn.MaxPool2d(3, stride=2, padding=1)
    pool = self.pool(relu)
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import Unsupported
from ..pool import AVG_POOL, MAX_POOL, divisor_map, end_pad
from ..pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL

__all__ = []


def _rank(node, rank):
    if not 1 <= rank <= 3:
        raise Unsupported(f"PyTorch pools 1 to 3 spatial axes, not {rank}")
    return rank


def _end_pads(node, dilation):
    """(begin, end) pads the output windows read, end included (may differ from the stated pads)."""
    a, x = node.attrs, node.inputs[0]
    rank = len(a["kernel"])
    out = node.outputs[0].type.shape[-rank:]
    return tuple((lo, end_pad(n, k, s, lo, d, o)) for n, k, s, (lo, _), d, o in
                 zip(x.type.shape[-rank:], a["kernel"], a["stride"], a["pads"], dilation, out))


def _window_kwargs(t, a, padding, extra) -> dict:
    kwargs = {"stride": t.compact(a["stride"])} if tuple(a["stride"]) != tuple(a["kernel"]) else {}
    return {**kwargs, **({"padding": padding} if padding != 0 else {}), **extra}


def _torch_pads_fit(a, limits) -> bool:
    """True when the pads are symmetric and within torch's half-window limit per axis."""
    return all(lo == hi and lo <= limit for (lo, hi), limit in zip(a["pads"], limits))


@MAX_POOL.emits("torch-xla")
def _max_pool_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    rank = _rank(node, len(a["kernel"]))
    dilation = tuple(a["dilation"])
    extra = {"dilation": t.compact(dilation)} if any(d != 1 for d in dilation) else {}
    src, padding = x, 0
    if _torch_pads_fit(a, [k // 2 for k in a["kernel"]]):  # max_pool1d checks the undilated kernel
        padding = t.compact(lo for lo, _ in a["pads"])
        extra.update({"ceil_mode": True} if a["ceil_mode"] else {})
    else:  # Note [pool padding]: torch's -inf border, written out
        pads = t.torch_pads(_end_pads(node, dilation))
        src = f"F.pad({t.ref(x)}, {t.lit(pads)}, value=float('-inf'))" if any(pads) else x
    kwargs = _window_kwargs(t, a, padding, extra)
    t.layer(node, f"MaxPool{rank}d", (t.compact(a["kernel"]),), kwargs, {}, [src])


def _divisor_scale(node):
    """kernel size / torch's divisor for every output position (all ones when no fix is needed)."""
    a, x = node.attrs, node.inputs[0]
    rank = len(a["kernel"])
    out = node.outputs[0].type.shape[-rank:]
    return math.prod(a["kernel"]) / divisor_map(x.type.shape[-rank:], out, a["kernel"], a["stride"], a["pads"],
                                                a["count_include_pad"])


@AVG_POOL.emits("torch-xla")
def _avg_pool_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    rank = _rank(node, len(a["kernel"]))
    cls, kernel = f"AvgPool{rank}d", (t.compact(a["kernel"]),)
    if _torch_pads_fit(a, [k // 2 for k in a["kernel"]]):
        padding = t.compact(lo for lo, _ in a["pads"])
        extra = {**({"ceil_mode": True} if a["ceil_mode"] else {}),
                 **({"count_include_pad": False} if not a["count_include_pad"] and padding != 0 else {})}
        t.layer(node, cls, kernel, _window_kwargs(t, a, padding, extra), {}, [x])
        return
    pads = t.torch_pads(_end_pads(node, (1,) * rank))
    src = f"F.pad({t.ref(x)}, {t.lit(pads)})" if any(pads) else x
    scale = _divisor_scale(node)
    if np.all(scale == 1):
        t.layer(node, cls, kernel, _window_kwargs(t, a, 0, {}), {}, [src])
        return
    pool = t.submodule(node, cls, kernel, _window_kwargs(t, a, 0, {}))
    dtype = x.type.dtype if x.type.dtype in ("float16", "float32", "float64") else "float32"
    fix = t.const(node, scale.astype(dtype), "divisor_fix")  # kernel size / torch's divisor
    t.assign(node, f"{pool}({t.ref(src)}) * {fix}")


def _adaptive_module(node, t, kind) -> bool:
    """Bins that divide the input evenly: nn.Adaptive{kind}PoolNd, which PyTorch/XLA lowers. True if written."""
    x, size = node.inputs[0], tuple(node.attrs["size"])
    if not all(n % o == 0 for n, o in zip(x.type.shape[-len(size):], size)):
        return False
    rank = _rank(node, len(size))
    t.layer(node, f"Adaptive{kind}Pool{rank}d", (t.compact(size),), {}, {}, [x])
    return True


def _uneven(node):
    x, size = node.inputs[0], node.attrs["size"]
    sizes = " x ".join(f"{n}->{o}" for n, o in zip(x.type.shape[-len(size):], size))
    return Unsupported(f"adaptive pooling {sizes} has uneven bins, which PyTorch/XLA runs on the CPU; the "
                       "legalize pass rewrites them (passes/legalize/pool.py)")


@ADAPTIVE_AVG_POOL.emits("torch-xla")
def _adaptive_avg_pool_to_torch(node, t):
    """nn.AdaptiveAvgPoolNd (even bins only: legalization rewrote uneven ones)."""
    if not _adaptive_module(node, t, "Avg"):
        raise _uneven(node)


@ADAPTIVE_MAX_POOL.emits("torch-xla")
def _adaptive_max_pool_to_torch(node, t):
    """nn.AdaptiveMaxPoolNd (even bins only: legalization rewrote uneven ones)."""
    if not _adaptive_module(node, t, "Max"):
        raise _uneven(node)
