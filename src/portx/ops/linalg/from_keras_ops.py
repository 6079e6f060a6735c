"""keras.ops.linalg in functional graphs (``ops.linalg.cholesky(x)``, ``ops.linalg.svd(x)``) -> IR.

Keras (on JAX) averages A and A^T before ``cholesky`` and ``eigh`` where the IR ops read one triangle, so
the rules average too; ``lu_factor``'s pivots are 0-based in Keras and 1-based in the IR; a rank-1
right-hand side of ``solve`` is a vector. ``ops.slogdet`` is
left out: Keras records its sign as 0-d for a batch (its ``compute_output_spec``), which no IR type matches. ``pinv``'s default cutoff is JAX's, 10 * max(m, n) * eps.

Example:
    >>> keras.ops.linalg.solve_triangular(a, b, lower=True)   # -> solve_triangular(%a, %b) {upper=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY
from ..linalg import (CHOLESKY, CHOLESKY_INVERSE, DET, EIGH, INV, LU_FACTOR, PINV, QR, SOLVE, SOLVE_TRIANGULAR, SVD,
                      SVDVALS)
from ..shape import PERMUTE, RESHAPE

__all__ = []


def _averaged(call, x):
    """(A + A^T) / 2, as jnp.linalg.cholesky and eigh compute first."""
    perm = tuple(range(x.type.rank - 2)) + (x.type.rank - 1, x.type.rank - 2)
    total = call.emit(BINARY["add"], [x, call.emit(PERMUTE, [x], {"perm": perm})])
    return call.emit(BINARY["mul"], [total, call.const(np.array(0.5, x.type.dtype), "half")])


@CHOLESKY.imports("keras", "ops.Cholesky")
def _cholesky_from_keras(call):
    return call.emit(CHOLESKY, [_averaged(call, call.inputs[0])], {"upper": bool(call.layer.upper)})


@EIGH.imports("keras", "ops.Eigh")
def _eigh_from_keras(call):
    return call.emit(EIGH, [_averaged(call, call.inputs[0])], {"upper": False})


@CHOLESKY_INVERSE.imports("keras", "ops.CholeskyInverse")
def _cholesky_inverse_from_keras(call):
    return call.emit(CHOLESKY_INVERSE, [call.inputs[0]], {"upper": bool(call.layer.upper)})


@imports("keras", "ops.Inv", "ops.Det")
def _unary_linalg_from_keras(call):
    op = {"Inv": INV, "Det": DET}[type(call.layer).__name__]
    return call.emit(op, [call.inputs[0]])


@LU_FACTOR.imports("keras", "ops.LuFactor")
def _lu_factor_from_keras(call):
    lu, pivots = call.emit(LU_FACTOR, [call.inputs[0]])
    return [lu, call.emit(BINARY["sub"], [pivots, call.const(np.array(1, np.int32), "one")])]


@QR.imports("keras", "ops.Qr")
def _qr_from_keras(call):
    if call.layer.mode not in ("reduced", "complete"):
        call.unsupported(f"qr(mode={call.layer.mode!r}): only reduced and complete")
    return call.emit(QR, [call.inputs[0]], {"mode": call.layer.mode})


@SOLVE.imports("keras", "ops.Solve")
def _solve_from_keras(call):
    a, b = call.inputs[:2]
    if b.type.rank != 1:
        return call.emit(SOLVE, [a, b])
    x = call.emit(SOLVE, [a, call.emit(RESHAPE, [b], {"shape": b.type.shape + (1,)})])
    return call.emit(RESHAPE, [x], {"shape": b.type.shape})


@SOLVE_TRIANGULAR.imports("keras", "ops.SolveTriangular")
def _solve_triangular_from_keras(call):
    return call.emit(SOLVE_TRIANGULAR, call.inputs[:2], {"upper": not call.layer.lower})


@SVD.imports("keras", "ops.SVD")
def _svd_from_keras(call):
    if not call.layer.compute_uv:
        return call.emit(SVDVALS, [call.inputs[0]])
    return call.emit(SVD, [call.inputs[0]], {"full_matrices": bool(call.layer.full_matrices)})


@PINV.imports("keras", "ops.Pinv")
def _pinv_from_keras(call):
    x, rcond = call.inputs[0], call.layer.rcond
    rtol = 10 * max(x.type.shape[-2:]) * float(np.finfo(np.float32).eps) if rcond is None else float(rcond)
    return call.emit(PINV, [x], {"rtol": rtol})
