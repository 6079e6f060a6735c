"""Keras import rules for BatchNormalization, LayerNormalization and GroupNormalization.

IR batch_norm and group_norm normalize over axis 1 (channels first); a Keras layer with its
feature axis elsewhere (``axis=-1`` on NHWC) is moved there and back with permutes, which the
layout pass cancels. LayerNormalization over any set of axes permutes them to the end for IR
layer_norm (trailing ``normalized_shape``); ``rms_scaling=True`` is Keras' variance-based scaling
(``x * rsqrt(var + eps) * gamma``, no centering), composed from reductions.

Example:
    BatchNormalization() on (1, 4, 4, 8) -> permute -> batch_norm {eps=0.001} -> permute
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY
from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM
from ..reduce import VAR
from ..shape import PERMUTE
from ..elementwise.unary import UNARY

__all__ = ["move_axis_perm", "inverse_perm"]


def move_axis_perm(rank, axes, to_end=False) -> tuple:
    """Permutation that moves ``axes`` to position 1 (or to the end), keeping the others in order."""
    rest = [a for a in range(rank) if a not in axes]
    if to_end:
        return tuple(rest) + tuple(axes)
    return (rest[0],) + tuple(axes) + tuple(rest[1:])


def inverse_perm(perm) -> tuple:
    """The permutation that undoes ``perm``."""
    return tuple(int(i) for i in np.argsort(perm))


def _permuted(call, x, perm, fn):
    """``fn`` applied to ``x`` permuted by ``perm``, permuted back (no permutes for the identity)."""
    if tuple(perm) == tuple(range(len(perm))):
        return fn(x)
    y = fn(call.emit(PERMUTE, [x], {"perm": tuple(perm)}))
    return call.emit(PERMUTE, [y], {"perm": inverse_perm(perm)})


def _optional(call, flag, name, hint):
    return call.param(call.weight(name), hint) if flag and call.has_weight(name) else None


def _feature_axis(call, x) -> int:
    axis = call.layer.axis
    axis = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
    if isinstance(axis, (list, tuple)):
        call.unsupported(f"normalization over several feature axes {tuple(axis)}")
    return int(axis) % x.type.rank


def _channels_first(call, x, fn):
    """``fn`` on ``x`` with the layer's feature axis moved to position 1."""
    axis = _feature_axis(call, x)
    if axis == 1:
        return fn(x)
    if axis == x.type.rank - 1:
        return call.to_channels_last(fn(call.to_channels_first(x)))
    return _permuted(call, x, move_axis_perm(x.type.rank, (axis,)), fn)


@BATCH_NORM.imports("keras", "BatchNormalization")
def _batch_norm_from_keras(call):
    """Batch norm with the moving statistics; center/scale may drop beta/gamma; Keras' momentum m is torch's 1 - m."""
    layer = call.layer
    gamma = _optional(call, layer.scale, "gamma", "weight")
    beta = _optional(call, layer.center, "beta", "bias")
    mean = call.param(call.weight("moving_mean"), "running_mean")
    var = call.param(call.weight("moving_variance"), "running_var")
    return _channels_first(call, call.inputs[0],
                           lambda x: call.emit(BATCH_NORM, [x, gamma, beta, mean, var],
                                               {"eps": float(layer.epsilon), "momentum": round(1 - layer.momentum, 12)}))


def _rms_scaled(call, x, axes, gamma, eps):
    """Keras ``rms_scaling``: x * rsqrt(var(x) + eps) * gamma over ``axes`` (trailing here)."""
    var = call.emit(VAR, [x], {"axes": axes, "keepdims": True, "correction": 0.0})
    inv = call.emit(UNARY["rsqrt"], [call.emit(BINARY["add"], [var, call.const(np.array(eps, np.float32), "eps")])])
    y = call.emit(BINARY["mul"], [x, inv])
    return y if gamma is None else call.emit(BINARY["mul"], [y, gamma])


@LAYER_NORM.imports("keras", "LayerNormalization")
def _layer_norm_from_keras(call):
    """layer_norm over the layer's axes (moved to the end when they are not trailing)."""
    layer, x = call.layer, call.inputs[0]
    rank = x.type.rank
    axes = sorted(int(a) % rank for a in (layer.axis if isinstance(layer.axis, (list, tuple)) else [layer.axis]))
    gamma = _optional(call, layer.scale, "gamma", "weight")
    beta = _optional(call, layer.center and not layer.rms_scaling, "beta", "bias")
    perm = move_axis_perm(rank, axes, to_end=True)
    if gamma is not None and gamma.type.rank != len(axes):
        call.unsupported(f"gamma of shape {gamma.type.shape} for axes {tuple(axes)}")
    shape = tuple(x.type.shape[a] for a in axes)
    eps = float(layer.epsilon)

    def normalize(v):
        if layer.rms_scaling:
            return _rms_scaled(call, v, tuple(range(rank - len(axes), rank)), gamma, eps)
        return call.emit(LAYER_NORM, [v, gamma, beta], {"normalized_shape": shape, "eps": eps})
    return _permuted(call, x, perm, normalize)


@GROUP_NORM.imports("keras", "GroupNormalization")
def _group_norm_from_keras(call):
    """group_norm on the feature axis moved to position 1 (Keras' channel groups are contiguous like torch's)."""
    layer = call.layer
    gamma = _optional(call, layer.scale, "gamma", "weight")
    beta = _optional(call, layer.center, "beta", "bias")
    attrs = {"groups": int(layer.groups), "eps": float(layer.epsilon)}
    return _channels_first(call, call.inputs[0], lambda x: call.emit(GROUP_NORM, [x, gamma, beta], attrs))
