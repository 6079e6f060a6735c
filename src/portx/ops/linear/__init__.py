"""Dense algebra: linear (x @ W.T + b, torch weight layout) and batched matmul.

This module declares the OpDefs with their shape rules and NumPy references; the rules for each
source and target are beside it (``from_torch.py``, ``to_keras.py``, ``from_keras.py`` for Dense and
EinsumDense, ``from_keras_ops.py`` for ``ops.einsum`` / ``ops.matmul``, ``from_jax.py``, ``to_torch.py``).

Example IR:
    %y: float32[1x4] = linear(%x, %fc.weight, %fc.bias) {}  # fc
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef, TensorType
from .._util import broadcast_shapes, promote

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
    # one 2-D product: a 3-D x would make NumPy run one small product per leading index (50x slower on a ViT)
    y = (x.reshape(-1, x.shape[-1]).astype(np.float64) @ weight.astype(np.float64).T).reshape(
        x.shape[:-1] + (weight.shape[0],))
    return (y if bias is None else y + bias).astype(x.dtype)


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
