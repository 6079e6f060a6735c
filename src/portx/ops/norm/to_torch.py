"""torch-xla emit rules for normalization: nn.BatchNormNd, nn.LayerNorm, nn.GroupNorm, nn.RMSNorm.

A module owns either both affine vectors or neither; where the IR has only one (a scale without
a shift), the module gets the neutral other one (ones or zeros), which computes the same.
Statistics or vectors that are computed rather than stored use the functional form.

Example generated code:
    self.bn1 = nn.BatchNorm2d(64)
    bn1 = self.bn1(conv1)
"""
from __future__ import annotations

import numpy as np

from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM, RMS_NORM

__all__ = []


def _all_stored(t, values) -> bool:
    return all(t.ownable(v) for v in values)


def _affine(w, b, shape, dtype) -> dict:
    """{"weight": ..., "bias": ...} with a neutral stand-in for the absent one; {} when both are absent."""
    if w is None and b is None:
        return {}
    return {"weight": w if w is not None else np.ones(shape, dtype),
            "bias": b if b is not None else np.zeros(shape, dtype)}


def _eps(t, eps) -> dict:
    return {} if float(eps) == 1e-5 else {"eps": float(eps)}


def _functional_args(t, values) -> str:
    return ", ".join(t.ref(v) if v is not None else "None" for v in values)


@BATCH_NORM.emits("torch-xla")
def _batch_norm_to_torch(node, t):
    x, w, b, mean, var = node.inputs
    eps, rank = node.attrs["eps"], x.type.rank
    if not _all_stored(t, node.inputs[1:]) or rank > 5:
        t.assign(node, f"F.batch_norm({t.ref(x)}, {_functional_args(t, (mean, var, w, b))}, training=False, "
                       f"eps={t.lit(float(eps))})")
        return
    channels = x.type.shape[1]
    weights = {**_affine(w, b, (channels,), mean.type.dtype), "running_mean": mean, "running_var": var,
               "num_batches_tracked": np.array(0, np.int64)}
    kwargs = {**_eps(t, eps), **({"momentum": node.attrs["momentum"]} if node.attrs["momentum"] != 0.1 else {}),
              **({"affine": False} if w is None and b is None else {})}
    t.layer(node, f"BatchNorm{max(rank - 2, 1)}d", (channels,), kwargs, weights, [x])


def _shape_arg(shape):
    shape = tuple(int(d) for d in shape)
    return shape[0] if len(shape) == 1 else shape


@LAYER_NORM.emits("torch-xla")
def _layer_norm_to_torch(node, t):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    shape, eps = tuple(node.attrs["normalized_shape"]), node.attrs["eps"]
    if not _all_stored(t, (w, b)):
        t.assign(node, f"F.layer_norm({t.ref(x)}, {t.lit(shape)}, {_functional_args(t, (w, b))}, "
                       f"eps={t.lit(float(eps))})")
        return
    kwargs = _eps(t, eps)
    if w is None and b is None:
        kwargs["elementwise_affine"] = False
    elif b is None:
        kwargs["bias"] = False
    weights = {}
    if w is not None or b is not None:
        weights = {"weight": w if w is not None else np.ones(shape, b.type.dtype),
                   **({"bias": b} if b is not None else {})}
    t.layer(node, "LayerNorm", (_shape_arg(shape),), kwargs, weights, [x])


@RMS_NORM.emits("torch-xla")
def _rms_norm_to_torch(node, t):
    x, w = (list(node.inputs) + [None])[:2]
    shape, eps = tuple(node.attrs["normalized_shape"]), float(node.attrs["eps"])
    if w is not None and not t.ownable(w):
        t.assign(node, f"F.rms_norm({t.ref(x)}, {t.lit(shape)}, {t.ref(w)}, eps={t.lit(eps)})")
        return
    kwargs = {"eps": eps, **({"elementwise_affine": False} if w is None else {})}
    t.layer(node, "RMSNorm", (_shape_arg(shape),), kwargs, {"weight": w} if w is not None else {}, [x])


def _group_norm_as_layer_norm(node, t, x, w, b):
    """F.layer_norm over each group, for the one shape torch's group_norm refuses (one value per group, batch 1)."""
    n, channels, *spatial = x.type.shape
    groups, eps, rank = int(node.attrs["groups"]), float(node.attrs["eps"]), x.type.rank
    size = channels // groups * int(np.prod(spatial, dtype=np.int64))
    expr = (f"F.layer_norm({t.ref(x)}.reshape({n}, {groups}, {size}), ({size},), eps={t.lit(eps)})"
            f".reshape({', '.join(str(d) for d in x.type.shape)})")
    channel = f"(1, -1{', 1' * (rank - 2)})"
    if w is not None:
        expr = f"{t.temp(node, expr, 'normed')} * {t.ref(w)}.reshape{channel}"
    if b is not None:
        expr = f"{expr} + {t.ref(b)}.reshape{channel}"
    t.assign(node, expr)


@GROUP_NORM.emits("torch-xla")
def _group_norm_to_torch(node, t):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    groups, eps = int(node.attrs["groups"]), node.attrs["eps"]
    if x.type.shape[0] * x.type.shape[1] // groups * int(np.prod(x.type.shape[2:], dtype=np.int64)) == 1:
        _group_norm_as_layer_norm(node, t, x, w, b)
        return
    if not _all_stored(t, (w, b)):
        t.assign(node, f"F.group_norm({t.ref(x)}, {groups}, {_functional_args(t, (w, b))}, eps={t.lit(float(eps))})")
        return
    channels = x.type.shape[1]
    kwargs = {**_eps(t, eps), **({"affine": False} if w is None and b is None else {})}
    t.layer(node, "GroupNorm", (groups, channels), kwargs, _affine(w, b, (channels,), x.type.dtype), [x])
