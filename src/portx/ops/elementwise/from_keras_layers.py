"""Keras layers that are elementwise affine maps: Rescaling, Normalization, and keras.applications' custom layers.

Each rule writes the layer's arithmetic with stored constants, in the order Keras computes it so
float32 results agree bit for bit where the ops are exact:

- ``Rescaling``: ``x * scale + offset`` (scale/offset scalars or per-channel arrays).
- ``Normalization``: ``(x - mean) / maximum(sqrt(var), epsilon)`` (``invert``: ``mean + x * that``),
  with the adapted or given statistics already broadcast by Keras to the input's rank.
- ``LayerScale`` (ConvNeXt): ``x * gamma``; ``StochasticDepth`` (ConvNeXt): identity at inference;
  ``CustomScaleLayer`` (InceptionResNetV2): ``a + b * scale``.

Example:
    >>> keras.layers.Rescaling(1 / 255)        # -> mul(%x, %rescaling.scale)
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY
from ..elementwise.from_keras_ops import cast_to, out_dtype

__all__ = []


def _const(call, array, dtype, hint):
    return call.param(np.asarray(array, dtype=np.float32).astype(dtype), hint)


def _is_unit(array, unit) -> bool:
    return bool(np.all(np.asarray(array, dtype=np.float64) == unit))


@BINARY["mul"].imports("keras", "Rescaling")
def _rescaling_from_keras(call):
    dtype = out_dtype(call)
    x = cast_to(call, call.inputs[0], dtype)
    scale, offset = np.asarray(call.layer.scale), np.asarray(call.layer.offset)
    if not _is_unit(scale, 1):
        x = call.emit(BINARY["mul"], [x, _const(call, scale, dtype, "scale")])
    if not _is_unit(offset, 0):
        x = call.emit(BINARY["add"], [x, _const(call, offset, dtype, "offset")])
    return x


@BINARY["sub"].imports("keras", "Normalization")
def _normalization_from_keras(call):
    layer, dtype = call.layer, out_dtype(call)
    if getattr(layer, "mean", None) is None:
        call.unsupported("Normalization layer was never built or adapted (it has no mean and variance)")
    mean = np.asarray(layer.mean, dtype=np.float32)
    std = np.maximum(np.sqrt(np.asarray(layer.variance, dtype=np.float32)), np.float32(call.epsilon))
    x = cast_to(call, call.inputs[0], dtype)
    mean_v, std_v = _const(call, mean, dtype, "mean"), _const(call, std, dtype, "std")
    if layer.invert:
        return call.emit(BINARY["add"], [mean_v, call.emit(BINARY["mul"], [x, std_v])])
    return call.emit(BINARY["div"], [call.emit(BINARY["sub"], [x, mean_v]), std_v])


@BINARY["mul"].imports("keras", "LayerScale")
def _layer_scale_from_keras(call):
    gamma = call.weight(call.layer.gamma.name)  # its source path: Note [counter-named weights] (keras_jax/scopes.py)
    return call.emit(BINARY["mul"], [call.inputs[0], call.param(gamma, "gamma")])


@imports("keras", "StochasticDepth")
def _stochastic_depth_from_keras(call):
    """Drops whole residual branches while training only; inference passes the input through."""
    return call.inputs[0]


@BINARY["add"].imports("keras", "CustomScaleLayer")
def _custom_scale_from_keras(call):
    shortcut, branch = call.inputs[:2]
    scale = _const(call, call.layer.scale, branch.type.dtype, "scale")
    return call.emit(BINARY["add"], [shortcut, call.emit(BINARY["mul"], [branch, scale])])
