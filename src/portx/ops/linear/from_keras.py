"""Keras import rules for the Dense and EinsumDense layers on inputs of any rank.

A Dense kernel is ``(in, units)``; IR linear takes torch's ``(out, in)`` weight, so the kernel is
transposed once at import. LoRA-enabled layers use Keras' merged ``kernel`` property; a quantized
layer (int8, int4, float8) is traced through Keras' own ``quantized_call`` (its input quantizer and
de-scaling included, int8 products cast to float32: linear/from_jax.py). EinsumDense goes through ``emit_einsum``
(from_keras_ops.py, Note [einsum as matmul]) with its stored kernel, so it is a ``linear`` when
the equation has no batch indices; ``...`` in its equation is spelled out for the input's rank first.

Example:
    Dense(4, activation="relu") on (1, 5, 3) -> linear(%x, %dense.weight[4x3], %dense.bias) -> relu
    EinsumDense("abc,cd->abd", (4, 8)) -> linear(%x, %einsum_dense.kernel)
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY
from ..linear import LINEAR
from ..linear.from_keras_ops import emit_einsum

__all__ = ["explicit_ellipsis"]


@LINEAR.imports("keras", "Dense")
def _dense_from_keras(call):
    """Dense(units, activation, use_bias) over the last axis."""
    layer = call.layer
    if getattr(layer, "quantization_mode", None):  # Keras' own quantized forward, traced
        return call.traced(layer.quantized_call, call.inputs[0])
    kernel = np.asarray(layer.kernel) if getattr(layer, "lora_enabled", False) else call.weight("kernel")
    weight = call.param(kernel.T, "weight")
    bias = call.param(call.weight("bias"), "bias") if layer.use_bias else None
    y = call.emit(LINEAR, [call.inputs[0], weight, bias])
    return call.activation(y, call.layer.activation)


def explicit_ellipsis(equation, rank, kernel_rank) -> str:
    """``equation`` with each ``...`` spelled out as letters it does not use, for operands of ``rank`` and
    ``kernel_rank`` (the output's ``...`` is the longest operand's): ``"...b,bc->...c"`` at rank 3 is
    ``"Aab,bc->Aac"``-like."""
    if "..." not in equation:
        return equation
    (a, b), out = equation.replace(" ", "").split("->")[0].split(","), equation.split("->")[1].strip()
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation]
    n_a = rank - len(a.replace("...", "")) if "..." in a else 0
    n_b = kernel_rank - len(b.replace("...", "")) if "..." in b else 0
    letters = "".join(spare[:max(n_a, n_b)])
    return (f"{a.replace('...', letters[len(letters) - n_a:])},{b.replace('...', letters[len(letters) - n_b:])}"
            f"->{out.replace('...', letters)}")


@LINEAR.imports("keras", "EinsumDense")
def _einsum_dense_from_keras(call):
    layer = call.layer
    if getattr(layer, "quantization_mode", None):
        return call.traced(layer.quantized_call, call.inputs[0])
    if not getattr(layer, "lora_enabled", False):
        call.weight("kernel")  # recorded as read, so that what the kernel becomes counts as trainable
    kernel = np.asarray(layer.kernel)  # the property merges LoRA
    y = emit_einsum(call, explicit_ellipsis(layer.equation, call.inputs[0].type.rank, kernel.ndim), call.inputs[0],
                    kernel=kernel)
    if layer.bias is not None:
        y = call.emit(BINARY["add"], [y, call.param(call.weight("bias"), "bias")])
    return call.activation(y, layer.get_config().get("activation"))
