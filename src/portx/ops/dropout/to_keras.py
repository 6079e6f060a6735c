"""keras-jax emit rule for dropout: a ``layers.Dropout`` (with a ``noise_shape`` for a shared mask).

Example generated code:
    drop = layers.Dropout(0.1, name='drop')(fc)
    drop2d = layers.Dropout(0.2, noise_shape=(None, 1, 1, None), name='drop2d')(conv)
"""
from __future__ import annotations

from ..dropout import DROPOUT

__all__ = []


@DROPOUT.emits("keras-jax")
def _dropout_to_keras(node, k):
    """A Dropout layer on a float32 KerasTensor; elsewhere (a constant, another dtype) the identity."""
    x = node.inputs[0]
    if not k.layer_ready(node):
        k.assign(node, k.ref(x))
        return
    kwargs = {"rate": float(node.attrs["rate"])}
    if node.attrs["axes"]:
        shared = {a % x.type.rank for a in node.attrs["axes"]}
        kwargs["noise_shape"] = tuple(1 if i in shared else None for i in range(x.type.rank))
    k.layer(node, "Dropout", kwargs, [x])
