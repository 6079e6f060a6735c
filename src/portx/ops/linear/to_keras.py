"""Keras-JAX emit rules for linear (a ``Dense`` layer when the weights are stored) and matmul (``ops.matmul``).

Dense needs stored arrays and an input of rank >= 2; a computed weight or bias, or a 1-d input,
is written as ``ops.matmul`` with a transposed weight instead.

Example generated code:
    head = layers.Dense(10, name='head')(pool)
    scores = ops.matmul(q, k_t)
"""
from __future__ import annotations

from ..linear import LINEAR, MATMUL

__all__ = []


@LINEAR.emits("keras-jax")
def _linear_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None])[:3]
    # Dense needs stored arrays and an input of rank >= 2; anything else is a plain matmul.
    if not (k.ownable(w) and k.ownable(b)) or x.type.rank < 2:
        expr = f"ops.matmul({k.ref(x)}, ops.transpose({k.ref(w)}))"
        k.assign(node, expr if b is None else f"ops.add({expr}, {k.ref(b)})")
        return
    weights = [k.param(w).T] + ([k.param(b)] if b is not None else [])
    kwargs = {"units": int(w.type.shape[0]), "use_bias": b is not None}
    if w.type.dtype != "float32" and w.type.dtype == node.outputs[0].type.dtype:
        kwargs["dtype"] = w.type.dtype  # a bfloat16 checkpoint stays bfloat16 (the float32 policy would widen it)
    k.layer(node, "Dense", kwargs, [x], weights)


@MATMUL.emits("keras-jax")
def _matmul_to_keras(node, k):
    """A matrix times a batch of matrices is written as a batch times a batch: jnp.matmul would
    contract it as ``M @ x`` and transpose the result, where a broadcast M needs no transpose."""
    a, b = node.inputs
    left = k.ref(a)
    if a.type.rank == 2 and b.type.rank > 2:
        left = k.free_expr(node, "broadcast_to", left, k.graph.free_shape(b)[:-2] + tuple(a.type.shape))
    k.assign(node, f"ops.matmul({left}, {k.ref(b)})")
