"""Normalization (NC... layout): batch_norm with running statistics, layer_norm, group_norm, rms_norm.

This module declares the four ops with their shape rules and NumPy references; the rules live
beside it in ``from_torch.py``, ``from_keras.py``, ``to_keras.py`` and ``to_torch.py``. Instance
norm has no op of its own: with batch statistics it is group_norm with one group per channel, and
with running statistics it is batch_norm. Batch norm without running statistics
(track_running_stats=False) is batch_norm fed by mean and var nodes. Every op computes
``x * rsqrt(var + eps) * gamma + beta`` with the biased variance.

Example IR:
    %y: float32[1x8x4x4] = batch_norm(%x, %bn.weight, %bn.bias, %bn.running_mean, %bn.running_var)
        {eps=1e-05}  # bn
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last

__all__ = ["BATCH_NORM", "LAYER_NORM", "GROUP_NORM", "RMS_NORM", "channel_shape"]


def channel_shape(rank):
    """Shape that broadcasts a per-channel vector over an NC... tensor of ``rank`` dims.

    Example: ``channel_shape(4) == (1, -1, 1, 1)``.
    """
    return (1, -1) + (1,) * (rank - 2)


def _affine(y, weight, bias, shape):
    """``y * weight + bias`` with either factor absent; vectors reshaped to ``shape``."""
    if weight is not None:
        y = y * weight.astype(np.float64).reshape(shape)
    if bias is not None:
        y = y + bias.astype(np.float64).reshape(shape)
    return y


def _normalize_numpy(x, axes, eps):
    """(x - mean) / sqrt(biased var + eps) over ``axes``, in float64."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x64 - mean) / np.sqrt(var + eps)


def _check_vectors(op, shape, *vectors):
    for v in vectors:
        if v is not None and tuple(v.shape) != tuple(shape):
            raise ValueError(f"{op}: parameter of shape {v.shape} does not match {tuple(shape)}")


# -- batch_norm --------------------------------------------------------------------------------
BATCH_NORM = OpDef("batch_norm", ("x", "weight?", "bias?", "mean", "var"),
                   {"eps": 1e-5, "momentum": 0.1, "channels_last": False},
                   family="norm", doc="Inference batch norm over axis 1 (the last axis with channels_last) "
                                      "with stored statistics (torch eval mode); ``momentum`` is torch's "
                                      "(the running statistics' update weight when training; Keras' is 1 - it).")


@BATCH_NORM.infer
@honors_channels_last
def _batch_norm_type(x, weight, bias, mean, var, *, eps, momentum=0.1):
    if x.rank < 2:
        raise ValueError(f"batch_norm needs an (N, C, ...) input, got {x.shape}")
    _check_vectors("batch_norm", (x.shape[1],), weight, bias, mean, var)
    return x


@BATCH_NORM.reference
@honors_channels_last
def _batch_norm_numpy(x, weight, bias, mean, var, *, eps, momentum=0.1):
    shape = channel_shape(x.ndim)
    y = (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.astype(np.float64).reshape(shape) + eps)
    return _affine(y, weight, bias, shape).astype(x.dtype)


# -- layer_norm and rms_norm ---------------------------------------------------------------------
def _trailing_axes(x, normalized_shape):
    n = len(normalized_shape)
    if tuple(x.shape[x.rank - n:]) != tuple(normalized_shape) or n > x.rank:
        raise ValueError(f"normalized_shape {tuple(normalized_shape)} does not end input shape {x.shape}")
    return tuple(range(x.rank - n, x.rank))


LAYER_NORM = OpDef("layer_norm", ("x", "weight?", "bias?"), {"normalized_shape": REQUIRED, "eps": 1e-5},
                   family="norm", doc="Normalize over the trailing axes given by normalized_shape.")


@LAYER_NORM.infer
def _layer_norm_type(x, weight=None, bias=None, *, normalized_shape, eps):
    _trailing_axes(x, normalized_shape)
    _check_vectors("layer_norm", normalized_shape, weight, bias)
    return x


@LAYER_NORM.reference
def _layer_norm_numpy(x, weight=None, bias=None, *, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    return _affine(_normalize_numpy(x, axes, eps), weight, bias, tuple(normalized_shape)).astype(x.dtype)


RMS_NORM = OpDef("rms_norm", ("x", "weight?"), {"normalized_shape": REQUIRED, "eps": REQUIRED}, family="norm",
                 doc="x * rsqrt(mean(x**2) + eps) * weight over the trailing normalized_shape axes.")


@RMS_NORM.infer
def _rms_norm_type(x, weight=None, *, normalized_shape, eps):
    _trailing_axes(x, normalized_shape)
    _check_vectors("rms_norm", normalized_shape, weight)
    return x


@RMS_NORM.reference
def _rms_norm_numpy(x, weight=None, *, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 ** 2).mean(axis=axes, keepdims=True) + eps)
    return _affine(y, weight, None, tuple(normalized_shape)).astype(x.dtype)


# -- group_norm (and instance norm) --------------------------------------------------------------
GROUP_NORM = OpDef("group_norm", ("x", "weight?", "bias?"), {"groups": REQUIRED, "eps": 1e-5, "channels_last": False},
                   family="norm", doc="Normalize each group of C/groups channels over its channels and spatial axes.")


@GROUP_NORM.infer
@honors_channels_last
def _group_norm_type(x, weight=None, bias=None, *, groups, eps):
    if x.rank < 2 or x.shape[1] % groups:
        raise ValueError(f"group_norm: {groups} groups do not divide the channels of {x.shape}")
    _check_vectors("group_norm", (x.shape[1],), weight, bias)
    return x


@GROUP_NORM.reference
@honors_channels_last
def _group_norm_numpy(x, weight=None, bias=None, *, groups, eps):
    n, c = x.shape[:2]
    grouped = x.reshape((n, groups, -1))
    y = _normalize_numpy(grouped, (2,), eps).reshape(x.shape)
    return _affine(y, weight, bias, channel_shape(x.ndim)).astype(x.dtype)
