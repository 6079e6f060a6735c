"""Keras emit rules for normalization: BatchNormalization, LayerNormalization, GroupNormalization, RMSNormalization.

Each op maps to the Keras layer with the same arithmetic (``x * rsqrt(var + eps) * gamma + beta``,
biased variance); weights or statistics that are computed rather than stored fall back to
``keras.ops`` (``ops.batch_normalization``, ``ops.layer_normalization``, ``ops.rms_normalization``)
or, for group norm, to a GroupNormalization layer without affine vectors and explicit ops after it.

Example generated code:
    bn = layers.BatchNormalization(axis=1, epsilon=1e-05, name='bn')(x)
"""
from __future__ import annotations

import numpy as np

from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM, RMS_NORM, channel_shape

__all__ = []


def _all_params(k, values):
    return all(k.ownable(v) for v in values)


def _keras_axis(axes, rank):
    """``-1`` for the usual last-axis case, else the list of axes Keras expects."""
    return -1 if axes == (rank - 1,) else list(axes)


@BATCH_NORM.emits("keras-jax")
def _batch_norm_to_keras(node, k):
    x, w, b, mean, var = node.inputs
    eps = float(node.attrs["eps"])
    axis = -1 if node.attrs.get("channels_last", False) else 1
    if _all_params(k, node.inputs[1:]):
        weights = [k.param(v) for v in (w, b, mean, var) if v is not None]
        momentum = round(1 - node.attrs["momentum"], 12)  # Keras weighs the old statistics, torch the batch's
        k.layer(node, "BatchNormalization", {"axis": axis, "epsilon": eps, "momentum": momentum, "center": b is not None,
                                             "scale": w is not None}, [x], weights)
        return
    scale, offset = (k.ref(v) if v is not None else "None" for v in (w, b))
    if w is None and b is not None:  # symbolic ops.batch_normalization fails on an offset without a scale
        scale = f"ops.ones_like({k.ref(mean)})"
    k.assign(node, f"ops.batch_normalization({k.ref(x)}, {k.ref(mean)}, {k.ref(var)}, axis={axis}, "
                   f"offset={offset}, scale={scale}, epsilon={k.lit(eps)})")


@LAYER_NORM.emits("keras-jax")
def _layer_norm_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    eps = float(node.attrs["eps"])
    axis = _keras_axis(tuple(range(x.type.rank - len(node.attrs["normalized_shape"]), x.type.rank)), x.type.rank)
    if _all_params(k, (w, b)):
        weights = [k.param(v) for v in (w, b) if v is not None]
        k.layer(node, "LayerNormalization", {"axis": axis, "epsilon": eps, "center": b is not None,
                                             "scale": w is not None}, [x], weights)
        return
    gamma, beta = (k.ref(v) if v is not None else "None" for v in (w, b))
    k.assign(node, f"ops.layer_normalization({k.ref(x)}, {gamma}, {beta}, axis={k.lit(axis)}, "
                   f"epsilon={k.lit(eps)})")


@RMS_NORM.emits("keras-jax")
def _rms_norm_to_keras(node, k):
    x, w = (list(node.inputs) + [None])[:2]
    shape = tuple(node.attrs["normalized_shape"])
    eps = float(node.attrs["eps"])
    axis = _keras_axis(tuple(range(x.type.rank - len(shape), x.type.rank)), x.type.rank)
    if k.ownable(w):
        # RMSNormalization always owns a scale; torch's elementwise_affine=False is a scale of ones.
        scale = k.param(w) if w is not None else np.ones(shape, dtype=x.type.dtype)
        k.layer(node, "RMSNormalization", {"axis": axis, "epsilon": eps}, [x], [scale])
        return
    k.assign(node, f"ops.rms_normalization({k.ref(x)}, scale={k.ref(w)}, axis={k.lit(axis)}, epsilon={k.lit(eps)})")


@GROUP_NORM.emits("keras-jax")
def _group_norm_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    last = node.attrs.get("channels_last", False)
    kwargs = {"groups": int(node.attrs["groups"]), "axis": -1 if last else 1, "epsilon": float(node.attrs["eps"])}
    if _all_params(k, (w, b)):
        weights = [k.param(v) for v in (w, b) if v is not None]
        k.layer(node, "GroupNormalization", {**kwargs, "center": b is not None, "scale": w is not None}, [x], weights)
        return
    expr = k.sublayer(node, "GroupNormalization", {**kwargs, "center": False, "scale": False}, [x], hint="normed")
    shape = k.lit(channel_shape(x.type.rank))
    for v, fn in ((w, "multiply"), (b, "add")):  # a per-channel vector broadcasts as it is when C is last
        if v is not None:
            expr = f"ops.{fn}({expr}, {k.ref(v) if last else f'ops.reshape({k.ref(v)}, {shape})'})"
    k.assign(node, expr)
