"""ATen import rules for linear algebra: what ``torch.linalg.*`` and friends reach after ``torch.export``.

The solvers export as their ``*_ex`` forms plus an error check (Note [effect tokens] in
frontends/torch/training.py): ``info`` is a zeros constant when read, and the LU / pivots outputs of
``_linalg_solve_ex`` and ``_linalg_det`` are a ``lu_factor`` node when read. A vector right-hand side is a
one-column matrix in the IR; ``left=False`` (X A = B) solves the transposed system. ``addmv`` and
``addbmm`` are matmul and elementwise ops, as ``addmm`` is (ops/linear/from_torch.py).

``lu_unpack``'s P reads only the pivots: with stored pivots it is a stored constant, not an output of a node that
also reads the (computed) LU, since a target cannot return a node output no input reaches as a model output
(Keras: every output must be a KerasTensor; targets/constants.py judges liveness per node, not per output).

``linalg_cholesky_ex``'s info, when read, is computed (``cholesky_info``: LAPACK's, which a caller tests); the other
solvers' is zeros.

Example:
    aten::linalg_cholesky_ex(%a) -> cholesky(%a) {upper=False}, cholesky_info(%a) {upper=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY, scalar_const
from ..linalg import (LU_UNPACK, CDIST, CHOLESKY, CHOLESKY_INFO, CHOLESKY_INVERSE, CHOLESKY_SOLVE, DET, EIGH, EIGVALSH, INV, LU, LU_FACTOR,
                      MATRIX_EXP, PDIST, PINV, QR, SLOGDET, SOLVE, SOLVE_TRIANGULAR, SVD, SVDVALS, pivot_matrix)
from ..linear import MATMUL
from ..reduce import REDUCE
from ..shape import PERMUTE, RESHAPE

__all__ = []


def _mT(call, x):
    """``x`` with its last two axes swapped."""
    perm = tuple(range(x.type.rank - 2)) + (x.type.rank - 1, x.type.rank - 2)
    return call.emit(PERMUTE, [x], {"perm": perm})


def _info(call, index):
    """The ``info`` output of a ``*_ex`` op: int32 zeros of the batch shape (None when nothing reads it)."""
    if not call.output_read(index):
        return None
    out = call.out_type(index)
    return call.const(np.zeros(out.shape, np.int32), "info")


def _lu_outputs(call, a, first):
    """Outputs ``first`` and ``first + 1`` (LU, pivots) of ``_linalg_solve_ex`` / ``_linalg_det``, if read."""
    if not (call.output_read(first) or call.output_read(first + 1)):
        return [None, None]
    return call.emit(LU_FACTOR, [a])


@CHOLESKY.imports("torch", "aten::linalg_cholesky_ex", "aten::linalg_cholesky", "aten::cholesky")
def _cholesky_from_aten(call):
    x, attrs = call.arg("self"), {"upper": bool(call.arg("upper", False))}
    factor = call.emit(CHOLESKY, [x], attrs)
    if not call.node.target._schema.name.endswith("_ex"):
        return factor
    return [factor, call.emit(CHOLESKY_INFO, [x], attrs) if call.output_read(1) else None]


@INV.imports("torch", "aten::linalg_inv_ex", "aten::linalg_inv", "aten::inverse")
def _inv_from_aten(call):
    inverse = call.emit(INV, [call.arg("A", call.arg("self"))])
    return [inverse, _info(call, 1)] if call.node.target._schema.name.endswith("_ex") else inverse


def _solve(call, a, b, left):
    """X with A X = B (left) or X A = B, for a matrix or (torch's rule) a vector ``b``."""
    vector = b.type.rank == 1 or (b.type.rank == a.type.rank - 1 and b.type.shape == a.type.shape[:-1])
    if vector:
        b = call.emit(RESHAPE, [b], {"shape": b.type.shape + (1,) if left else b.type.shape[:-1] + (1,) + b.type.shape[-1:]})
    x = call.emit(SOLVE, [a, b]) if left else _mT(call, call.emit(SOLVE, [_mT(call, a), _mT(call, b)]))
    return call.emit(RESHAPE, [x], {"shape": call.out_type(0).shape}) if vector else x


@SOLVE.imports("torch", "aten::_linalg_solve_ex", "aten::linalg_solve_ex", "aten::linalg_solve")
def _solve_from_aten(call):
    """``_linalg_solve_ex`` gives (result, LU, pivots, info); ``linalg_solve_ex`` (result, info)."""
    a, name = call.arg("A"), call.node.target._schema.name
    x = _solve(call, a, call.arg("B"), bool(call.arg("left", True)))
    if name == "aten::_linalg_solve_ex":
        return [x] + _lu_outputs(call, a, 1) + [_info(call, 3)]
    return [x, _info(call, 1)] if name.endswith("_ex") else x


@SOLVE_TRIANGULAR.imports("torch", "aten::linalg_solve_triangular")
def _solve_triangular_from_aten(call):
    attrs = {"upper": bool(call.arg("upper")), "left": bool(call.arg("left", True)),
             "unitriangular": bool(call.arg("unitriangular", False))}
    return call.emit(SOLVE_TRIANGULAR, [call.arg("self"), call.arg("B")], attrs)


@SOLVE_TRIANGULAR.imports("torch", "aten::triangular_solve")
def _triangular_solve_from_aten(call):
    """``torch.triangular_solve(b, A, upper=True, transpose=False)``: (solution, a copy of A)."""
    a, upper = call.arg("A"), bool(call.arg("upper", True))
    if call.arg("transpose", False):
        a, upper = _mT(call, a), not upper
    x = call.emit(SOLVE_TRIANGULAR, [a, call.arg("self")],
                  {"upper": upper, "unitriangular": bool(call.arg("unitriangular", False))})
    return [x, call.arg("A")]


@CHOLESKY_SOLVE.imports("torch", "aten::cholesky_solve")
def _cholesky_solve_from_aten(call):
    return call.emit(CHOLESKY_SOLVE, [call.arg("self"), call.arg("input2")], {"upper": bool(call.arg("upper", False))})


@CHOLESKY_INVERSE.imports("torch", "aten::cholesky_inverse")
def _cholesky_inverse_from_aten(call):
    return call.emit(CHOLESKY_INVERSE, [call.arg("self")], {"upper": bool(call.arg("upper", False))})


@SVD.imports("torch", "aten::_linalg_svd")
def _svd_from_aten(call):
    """(U, S, Vh); ``compute_uv=False`` (svdvals, matrix norms, cond, rank) reads only S."""
    x = call.arg("A")
    if not call.arg("compute_uv", True) or not (call.output_read(0) or call.output_read(2)):
        return [None, call.emit(SVDVALS, [x]), None]
    return call.emit(SVD, [x], {"full_matrices": bool(call.arg("full_matrices", True))})


@EIGH.imports("torch", "aten::_linalg_eigh")
def _eigh_from_aten(call):
    x, upper = call.arg("A"), call.arg("UPLO", "L") == "U"
    if not call.arg("compute_v", True) or not call.output_read(1):
        return [call.emit(EIGVALSH, [x], {"upper": upper}), None]
    return call.emit(EIGH, [x], {"upper": upper})


@QR.imports("torch", "aten::linalg_qr")
def _qr_from_aten(call):
    """Modes reduced and complete; mode "r" gives an empty Q, which nothing can read."""
    mode = call.arg("mode", "reduced")
    q, r = call.emit(QR, [call.arg("A")], {"mode": "reduced" if mode == "r" else mode})
    return [None if mode == "r" else q, r]


@DET.imports("torch", "aten::_linalg_det", "aten::linalg_det", "aten::det")
def _det_from_aten(call):
    a = call.arg("A", call.arg("self"))
    det = call.emit(DET, [a])
    return [det] + _lu_outputs(call, a, 1) if call.node.target._schema.name == "aten::_linalg_det" else det


@SLOGDET.imports("torch", "aten::_linalg_slogdet", "aten::linalg_slogdet", "aten::slogdet")
def _slogdet_from_aten(call):
    a = call.arg("A", call.arg("self"))
    sign, logabsdet = call.emit(SLOGDET, [a])
    return [sign, logabsdet] + _lu_outputs(call, a, 2) if call.node.target._schema.name == "aten::_linalg_slogdet" \
        else [sign, logabsdet]


@LU_FACTOR.imports("torch", "aten::linalg_lu_factor_ex", "aten::linalg_lu_factor")
def _lu_factor_from_aten(call):
    if not call.arg("pivot", True):
        call.unsupported("lu_factor(pivot=False): LU without pivoting is CUDA-only in torch and has no JAX form")
    lu, pivots = call.emit(LU_FACTOR, [call.arg("A")])
    return [lu, pivots, _info(call, 2)] if call.node.target._schema.name.endswith("_ex") else [lu, pivots]


@LU.imports("torch", "aten::linalg_lu")
def _lu_from_aten(call):
    if not call.arg("pivot", True):
        call.unsupported("linalg.lu(pivot=False): LU without pivoting is CUDA-only in torch and has no JAX form")
    return call.emit(LU, [call.arg("A")])


@LU_UNPACK.imports("torch", "aten::lu_unpack")
def _lu_unpack_from_aten(call):
    if not (call.arg("unpack_data", True) and call.arg("unpack_pivots", True)):
        call.unsupported("lu_unpack without unpack_data or unpack_pivots (empty outputs)")
    lu, pivots = call.arg("LU_data"), call.arg("LU_pivots")
    p, lower, upper = call.emit(LU_UNPACK, [lu, pivots])
    known = call.constant(pivots)
    if known is not None:  # P reads only the pivots: stored pivots (a buffer) make it a constant, stored as one
        p = call.const(pivot_matrix(known, lu.type.shape[-2]).astype(lu.type.dtype), "p")
    return [p, lower, upper]


@LU_UNPACK.imports("torch", "aten::linalg_lu_solve")
def _lu_solve_from_aten(call):
    """X with A X = B from A = P L U: U^-1 L^-1 P^T B, or with ``adjoint`` (A^T X = B) P L^-T U^-T B;
    ``left=False`` (X A = B) solves A^T X^T = B^T, the other of the two."""
    p, lower, upper = call.emit(LU_UNPACK, [call.arg("LU"), call.arg("pivots")])
    adjoint, left, b = bool(call.arg("adjoint", False)), bool(call.arg("left", True)), call.arg("B")
    if not left:
        b, adjoint = _mT(call, b), not adjoint
    if adjoint:
        y = call.emit(SOLVE_TRIANGULAR, [_mT(call, upper), b], {"upper": False})
        z = call.emit(SOLVE_TRIANGULAR, [_mT(call, lower), y], {"upper": True, "unitriangular": True})
        x = call.emit(MATMUL, [p, z])
    else:
        y = call.emit(SOLVE_TRIANGULAR, [lower, call.emit(MATMUL, [_mT(call, p), b])],
                      {"upper": False, "unitriangular": True})
        x = call.emit(SOLVE_TRIANGULAR, [upper, y], {"upper": True})
    return x if left else _mT(call, x)


@PINV.imports("torch", "aten::linalg_pinv")
def _pinv_from_aten(call):
    """torch's cutoff: rtol * largest singular value, rtol = eps * max(m, n) unless given (atol must be 0)."""
    x, atol, rtol = call.arg("self"), call.arg("atol"), call.arg("rtol")
    if any(hasattr(v, "type") and call.constant(v) is None for v in (atol, rtol)):
        call.unsupported("pinv with atol/rtol computed at run time: only a fixed cutoff is converted")
    atol, rtol = (call.constant(v) if hasattr(v, "type") else v for v in (atol, rtol))
    if atol is not None and float(np.max(atol)) != 0.0:
        call.unsupported("pinv with atol: only a relative cutoff (rtol) is converted")
    if rtol is None:
        rtol = np.finfo(np.dtype(x.type.dtype) if x.type.dtype != "bfloat16" else np.float32).eps * max(x.type.shape[-2:])
    elif np.ndim(rtol) != 0:
        call.unsupported("pinv with a per-matrix rtol tensor: only one number is converted")
    return call.emit(PINV, [x], {"rtol": float(rtol), "hermitian": bool(call.arg("hermitian", False))})


@MATRIX_EXP.imports("torch", "aten::linalg_matrix_exp", "aten::matrix_exp")
def _matrix_exp_from_aten(call):
    return call.emit(MATRIX_EXP, [call.arg("self")])


@CDIST.imports("torch", "aten::_cdist_forward", "aten::cdist")
def _cdist_from_aten(call):
    return call.emit(CDIST, [call.arg("x1"), call.arg("x2")], {"p": float(call.arg("p", 2.0))})


@PDIST.imports("torch", "aten::_pdist_forward", "aten::pdist")
def _pdist_from_aten(call):
    return call.emit(PDIST, [call.arg("self", call.arg("input"))], {"p": float(call.arg("p", 2.0))})


def _scaled_sum(call, product, bias):
    """beta * bias + alpha * product, skipping factors of 1 and a beta of 0 (as torch does)."""
    alpha, beta = call.arg("alpha", 1), call.arg("beta", 1)
    if alpha != 1:
        product = call.emit(BINARY["mul"], [product, scalar_const(call, alpha, product)])
    if beta == 0:
        return product
    if beta != 1:
        bias = call.emit(BINARY["mul"], [bias, scalar_const(call, beta, bias)])
    return call.emit(BINARY["add"], [product, bias])


@imports("torch", "aten::addmv")
def _addmv_from_aten(call):
    """beta * self + alpha * (mat @ vec)."""
    return _scaled_sum(call, call.emit(MATMUL, [call.arg("mat"), call.arg("vec")]), call.arg("self"))


@imports("torch", "aten::addbmm")
def _addbmm_from_aten(call):
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b])."""
    product = call.emit(MATMUL, [call.arg("batch1"), call.arg("batch2")])
    total = call.emit(REDUCE["sum"], [product], {"axes": (0,), "keepdims": False})
    return _scaled_sum(call, total, call.arg("self"))


@imports("torch", "aten::linalg_ldl_factor_ex", "aten::linalg_ldl_factor", "aten::linalg_ldl_solve",
         "aten::linalg_eig", "aten::linalg_eigvals")
def _refused_linalg_from_aten(call):
    """Ops no target can express: named with the reason (exit 3) instead of an unknown op."""
    name = call.node.target._schema.name
    reasons = {"ldl": "LDL^T (Bunch-Kaufman) factorization has no JAX/Keras form; use linalg.cholesky (for SPD "
                      "input) or linalg.lu_factor", "eig": "non-symmetric eig gives complex results and XLA lowers it "
                      "on CPU only (not TPU); use linalg.eigh for a symmetric matrix"}
    call.unsupported(next(why for key, why in reasons.items() if key in name))
