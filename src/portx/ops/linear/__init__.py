"""Dense algebra: linear (x @ W.T + b, torch weight layout) and batched matmul.

Example IR:
    %y: float32[1x4] = linear(%x, %fc.weight, %fc.bias) {}  # fc
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef, TensorType
from .._util import broadcast_shapes, promote
from ..elementwise import BINARY, scalar_const

__all__ = ["LINEAR", "MATMUL"]

LINEAR = OpDef("linear", ("x", "weight", "bias?"), family="linear",
               doc="y = x @ weight.T + bias over the last axis; weight is (out, in).")


@LINEAR.infer
def _linear_type(x, weight, bias=None):
    if weight.rank != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: input {x.shape} does not match weight {weight.shape}")
    return x.with_shape(x.shape[:-1] + (weight.shape[0],))


@LINEAR.reference
def _linear_numpy(x, weight, bias=None):
    y = x.astype(np.float64) @ weight.astype(np.float64).T
    return (y if bias is None else y + bias).astype(x.dtype)


@LINEAR.emits("keras-jax")
def _linear_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None])[:3]
    # Dense needs stored arrays and an input of rank >= 2; anything else is a plain matmul.
    if not k.is_param(w) or (b is not None and not k.is_param(b)) or x.type.rank < 2:
        expr = f"ops.matmul({k.ref(x)}, ops.transpose({k.ref(w)}))"
        k.assign(node, expr if b is None else f"ops.add({expr}, {k.ref(b)})")
        return
    weights = [k.param(w).T] + ([k.param(b)] if b is not None else [])
    k.layer(node, "Dense", {"units": int(w.type.shape[0]), "use_bias": b is not None}, [x], weights)


@LINEAR.imports("torch", "aten::linear")
def _linear_from_aten(call):
    return call.emit(LINEAR, [call.arg("input"), call.arg("weight"), call.arg("bias")])


@LINEAR.imports("torch", "aten::addmm")
def _addmm_from_aten(call):
    """beta * self + alpha * (mat1 @ mat2), as matmul and elementwise ops.

    As in torch, beta == 0 ignores ``self`` entirely (its NaN and Inf do not propagate).
    """
    y = call.emit(MATMUL, [call.arg("mat1"), call.arg("mat2")])
    alpha, beta = call.arg("alpha", 1), call.arg("beta", 1)
    if alpha != 1:
        y = call.emit(BINARY["mul"], [y, scalar_const(call, alpha, y)])
    if beta == 0:
        return y
    bias = call.arg("self")
    if beta != 1:
        bias = call.emit(BINARY["mul"], [bias, scalar_const(call, beta, bias)])
    return call.emit(BINARY["add"], [y, bias])


MATMUL = OpDef("matmul", ("a", "b"), family="linear", doc="NumPy matmul semantics (batched, broadcast).")


@MATMUL.infer
def _matmul_type(a, b):
    if a.rank < 1 or b.rank < 1:
        raise ValueError("matmul needs rank >= 1 operands")
    sa = (1,) + a.shape if a.rank == 1 else a.shape
    sb = b.shape + (1,) if b.rank == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise ValueError(f"matmul: {a.shape} @ {b.shape} do not align")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    shape = batch + (sa[-2],) * (a.rank > 1) + (sb[-1],) * (b.rank > 1)
    return TensorType(shape, promote(a, b))


@MATMUL.reference
def _matmul_numpy(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.result_type(a, b))


@MATMUL.emits("keras-jax")
def _matmul_to_keras(node, k):
    """A matrix times a batch of matrices is written as a batch times a batch: jnp.matmul would
    contract it as ``M @ x`` and transpose the result, where a broadcast M needs no transpose."""
    a, b = node.inputs
    left = k.ref(a)
    if a.type.rank == 2 and b.type.rank > 2:
        left = f"ops.broadcast_to({left}, {k.lit(tuple(b.type.shape[:-2]) + tuple(a.type.shape))})"
    k.assign(node, f"ops.matmul({left}, {k.ref(b)})")


@MATMUL.imports("torch", "aten::matmul", "aten::bmm", "aten::mm")
def _matmul_from_aten(call):
    return call.emit(MATMUL, [call.arg("self"), call.arg("other", call.arg("mat2"))])
