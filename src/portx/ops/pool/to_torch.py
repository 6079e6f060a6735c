"""torch-xla emit rules for pooling: nn.MaxPoolNd / nn.AvgPoolNd / nn.Adaptive*PoolNd where they fit.

Torch's pooling modules pad both ends alike and at most half a window. Other paddings (Keras
"same" with stride 2 pads only the end) become an explicit ``F.pad`` (``-inf`` for max, zeros
for average) and an unpadded pool; an average whose divisor then differs from torch's
(``count_include_pad``, windows clipped at the border) is rescaled by a constant map of
``kernel size / divisor`` (Note [pool padding]). Adaptive pools with uneven bins fall back to the
CPU under PyTorch/XLA, so those are constant matmuls (average) or an index gather and a max.

Example generated code:
    self.pool = nn.MaxPool2d(3, stride=2, padding=1)
    pool = self.pool(relu)
"""
from __future__ import annotations

import math

import numpy as np

from ..pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL, bin_mean_matrix, padded_bin_table
from ..pool import AVG_POOL, MAX_POOL, avg_divisors
from ..resize.to_torch import apply_axis_matrices_torch

__all__ = []


def _rank(node, rank):
    if not 1 <= rank <= 3:
        raise NotImplementedError(f"{node.where()}: PyTorch pools 1 to 3 spatial axes, not {rank}")
    return rank


def _end_pads(node, dilation):
    """(begin, end) pads the output windows read, end included (may differ from the stated pads)."""
    a, x = node.attrs, node.inputs[0]
    rank = len(a["kernel"])
    out = node.outputs[0].type.shape[-rank:]
    return tuple((lo, max((o - 1) * s + d * (k - 1) + 1 - n - lo, 0)) for n, k, s, (lo, _), d, o in
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
    per_axis = [avg_divisors(n, k, s, p, o, a["count_include_pad"])
                for n, k, s, p, o in zip(x.type.shape[-rank:], a["kernel"], a["stride"], a["pads"], out)]
    return math.prod(a["kernel"]) / math.prod(np.ix_(*per_axis))


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


@ADAPTIVE_AVG_POOL.emits("torch-xla")
def _adaptive_avg_pool_to_torch(node, t):
    if _adaptive_module(node, t, "Avg"):
        return
    x, size = node.inputs[0], node.attrs["size"]
    matrices = [None if n_in == n_out else bin_mean_matrix(n_in, n_out)
                for n_in, n_out in zip(x.type.shape[-len(size):], size)]
    apply_axis_matrices_torch(node, t, x, matrices, hints=("bin_rows", "bin_cols"))


@ADAPTIVE_MAX_POOL.emits("torch-xla")
def _adaptive_max_pool_to_torch(node, t):
    """Uneven bins: gather each bin padded to the longest by repeating its last index, then amax."""
    if _adaptive_module(node, t, "Max"):
        return
    x, size = node.inputs[0], node.attrs["size"]
    shape, expr = list(x.type.shape), t.ref(x)
    for axis in range(x.type.rank - len(size), x.type.rank):
        n_in, n_out = shape[axis], size[axis - x.type.rank + len(size)]
        if n_in == n_out:
            continue
        if expr != t.ref(x):  # one line per axis keeps the generated code readable
            expr = t.temp(node, expr, f"max_axis{axis}")
        table = padded_bin_table(n_in, n_out)
        width = table.shape[1]
        index = t.const(node, table.reshape(-1).astype("int32"), f"bins_axis{axis}")
        grouped = tuple(shape[:axis] + [n_out, width] + shape[axis + 1:])
        expr = f"torch.amax({expr}.index_select({axis}, {index}).reshape{t.lit(grouped)}, dim={axis + 1})"
        shape[axis] = n_out
    t.assign(node, expr)
