"""Keras import rules for the Dense and EinsumDense layers on inputs of any rank.

A Dense kernel is ``(in, units)``; IR linear takes torch's ``(out, in)`` weight, so the kernel is
transposed once at import. LoRA-enabled layers use Keras' merged ``kernel`` property; quantized
kernels (int8, float8, int4) are refused. EinsumDense goes through ``emit_einsum``
(from_keras_ops.py, Note [einsum as matmul]) with its stored kernel, so it is a ``linear`` when
the equation has no batch indices.

Example:
    Dense(4, activation="relu") on (1, 5, 3) -> linear(%x, %dense.weight[4x3], %dense.bias) -> relu
    EinsumDense("abc,cd->abd", (4, 8)) -> linear(%x, %einsum_dense.kernel)
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY
from ..linear import LINEAR
from ..linear.from_keras_ops import emit_einsum

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


@LINEAR.imports("keras", "EinsumDense")
def _einsum_dense_from_keras(call):
    layer = call.layer
    if getattr(layer, "quantization_mode", None):
        call.unsupported(f"quantized EinsumDense ({layer.quantization_mode})")
    if not getattr(layer, "lora_enabled", False):
        call.weight("kernel")  # recorded as read, so that what the kernel becomes counts as trainable
    y = emit_einsum(call, layer.equation, call.inputs[0], kernel=np.asarray(layer.kernel))  # property merges LoRA
    if layer.bias is not None:
        y = call.emit(BINARY["add"], [y, call.param(call.weight("bias"), "bias")])
    return call.activation(y, layer.get_config().get("activation"))
