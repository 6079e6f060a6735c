"""Keras import rule for Dense on inputs of any rank.

A Dense kernel is ``(in, units)``; IR linear takes torch's ``(out, in)`` weight, so the kernel is
transposed once at import. LoRA-enabled layers use Keras' merged ``kernel`` property; quantized
kernels (int8, float8, int4) are refused.

Example:
    Dense(4, activation="relu") on (1, 5, 3) -> linear(%x, %dense.weight[4x3], %dense.bias) -> relu
"""
from __future__ import annotations

import numpy as np

from ..linear import LINEAR

__all__ = []


@LINEAR.imports("keras", "Dense")
def _dense_from_keras(call):
    """Dense(units, activation, use_bias) over the last axis."""
    layer = call.layer
    if getattr(layer, "quantization_mode", None):
        call.unsupported(f"quantized Dense ({layer.quantization_mode})")
    kernel = np.asarray(layer.kernel) if getattr(layer, "lora_enabled", False) else call.weight("kernel")
    weight = call.param(np.ascontiguousarray(kernel.T), "weight")
    bias = call.param(call.weight("bias"), "bias") if layer.use_bias else None
    y = call.emit(LINEAR, [call.inputs[0], weight, bias])
    return call.activation(y, call.layer.activation)
