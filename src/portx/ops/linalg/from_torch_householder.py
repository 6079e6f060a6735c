"""ATen import rules for LAPACK's packed Householder forms: ``geqrf``, ``linalg_householder_product`` (``orgqr``)
and ``ormqr``, unrolled into elementwise ops, sums and slices (the reflector count is static), so both targets,
and TPU, get them with no IR op of their own.

A packed QR keeps reflector i's vector v_i = [0..0, 1, A[i+1:, i]] below the diagonal of column i (the unit is
implicit) and its scale tau_i apart: Q = H_1 H_2 ... H_k with H_i = I - tau_i v_i v_i^T. Applying H_i is a
rank-1 update, H X = X - (tau v) * colsum(v * X) and X H = X - rowsum(X * v^T) * (tau v^T), with no matmul.
``geqrf`` follows LAPACK's dgeqr2 / dlarfg: per column, beta = -sign(alpha) ||[alpha, x]||, tau = (beta -
alpha) / beta, v = x / (alpha - beta), and tau = 0 (no reflection, beta = alpha) when x is all zero. Real
dtypes only: complex reflectors are refused (exit 3).

Example:
    aten::linalg_householder_product(%a: f32[5x5], %tau: f32[5]) -> five rank-1 updates of a 5x5 identity
    aten::ormqr(%a, %tau, %c) {left=True, transpose=False} -> H_5 applied to %c first, H_1 last
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from .._util import kind
from ..elementwise import WHERE, emit_binary as _op
from ..elementwise.unary import UNARY
from ..reduce import REDUCE
from ..shape import CONCAT, EXPAND, RESHAPE
from ..shape.index import emit_slice

__all__ = []


def _real(call, *values):
    """Refuse complex operands (their reflectors need conjugates this unroll does not take)."""
    for value in values:
        if kind(value.type.dtype) == 3:
            call.unsupported(f"{call.node.target._schema.name} of a complex ({value.type.dtype}) matrix: only real "
                             "dtypes are converted; use linalg.qr")


def _where(call, cond, a, b):
    return call.emit(WHERE, [cond, a, b])


def _rowsum(call, x, axis_from_end):
    """Sum over axis ``-axis_from_end`` of ``x``, kept as size 1."""
    return call.emit(REDUCE["sum"], [x], {"axes": (x.type.rank - axis_from_end,), "keepdims": True})


def _mask(call, condition, shape, dtype="bool"):
    """A constant of ``condition`` (an array over one axis) shaped ``shape`` (a column or a row)."""
    return call.const(np.asarray(condition).astype(dtype).reshape(shape), "mask")


def _tau(call, tau, i):
    """tau_i as ``(..., 1, 1)``."""
    t = emit_slice(call, tau, tau.type.rank - 1, i, i + 1)
    return call.emit(RESHAPE, [t], {"shape": tau.type.shape[:-1] + (1, 1)})


def _reflector(call, a, i, row):
    """v_i of the packed ``a`` (..., m, k): a column (..., m, 1), or with ``row`` a row (..., 1, m)."""
    m, rank = a.type.shape[-2], a.type.rank
    col = emit_slice(call, a, rank - 1, i, i + 1)
    shape = (1, m) if row else (m, 1)
    if row:
        col = call.emit(RESHAPE, [col], {"shape": a.type.shape[:-2] + shape})
    rows = np.arange(m)
    return _where(call, _mask(call, rows > i, shape), col, _mask(call, rows == i, shape, a.type.dtype))


def _apply(call, x, v, t, left):
    """H x (``left``, v a column) or x H (v a row) for H = I - t v v^T."""
    scaled = _op(call, "mul", t, v)
    dots = _rowsum(call, _op(call, "mul", v, x), 2 if left else 1)
    return _op(call, "sub", x, _op(call, "mul", scaled, dots))


def _shaped(call, x):
    """``x`` broadcast to the node's output shape (when no reflector reached the batch axes)."""
    shape = call.out_type(0).shape
    return x if x.type.shape == shape else call.emit(EXPAND, [x], {"shape": shape})


@imports("torch", "aten::linalg_householder_product", "aten::orgqr")
def _householder_product_from_aten(call):
    """The first n columns of H_1 ... H_k: H_k applied to eye(m, n) first, H_1 last."""
    a, tau = call.arg("input", call.arg("self")), call.arg("tau", call.arg("input2"))
    _real(call, a, tau)
    m, n = a.type.shape[-2:]
    x = call.const(np.eye(m, n, dtype=a.type.dtype), "eye")
    for i in reversed(range(tau.type.shape[-1])):
        x = _apply(call, x, _reflector(call, a, i, False), _tau(call, tau, i), True)
    return _shaped(call, x)


@imports("torch", "aten::ormqr")
def _ormqr_from_aten(call):
    """Q C, Q^T C, C Q or C Q^T: the reflectors applied one by one, in the order the product takes them."""
    a, tau, c = call.arg("self"), call.arg("input2"), call.arg("input3")
    _real(call, a, tau, c)
    left, transpose = bool(call.arg("left", True)), bool(call.arg("transpose", False))
    order = range(tau.type.shape[-1])
    for i in (order if left == transpose else reversed(order)):
        c = _apply(call, c, _reflector(call, a, i, not left), _tau(call, tau, i), left)
    return _shaped(call, c)


def _column_step(call, a, j, consts):
    """One dgeqr2 step on column ``j`` of ``a`` (..., m, n): (the updated ``a``, tau_j as (..., 1, 1))."""
    m, n = a.type.shape[-2:]
    zero, one = consts
    rows, cols = np.arange(m), np.arange(n)
    below = _mask(call, rows > j, (m, 1))
    c = emit_slice(call, a, a.type.rank - 1, j, j + 1)
    alpha = emit_slice(call, c, c.type.rank - 2, j, j + 1)
    x = _where(call, below, c, zero)
    x2 = _rowsum(call, _op(call, "mul", x, x), 2)
    norm = call.emit(UNARY["sqrt"], [_op(call, "add", _op(call, "mul", alpha, alpha), x2)])
    beta = _where(call, _op(call, "ge", alpha, zero), call.emit(UNARY["neg"], [norm]), norm)
    flat = _op(call, "eq", x2, zero)  # x is zero: no reflection (tau 0, beta alpha)
    beta = _where(call, flat, alpha, beta)
    tau = _where(call, flat, zero, _op(call, "div", _op(call, "sub", beta, alpha), _where(call, flat, one, beta)))
    scale = _where(call, flat, one, _op(call, "sub", alpha, beta))
    v = _where(call, below, _op(call, "div", c, scale), _mask(call, rows == j, (m, 1), a.type.dtype))
    if j + 1 < n:
        updated = _apply(call, a, v, tau, True)
        a = _where(call, _mask(call, cols > j, (1, n)), updated, a)
    column = _where(call, below, v, _where(call, _mask(call, rows == j, (m, 1)), beta, c))
    return _where(call, _mask(call, cols == j, (1, n)), column, a), tau


@imports("torch", "aten::geqrf")
def _geqrf_from_aten(call):
    """(a, tau) as LAPACK's geqrf: R on and above the diagonal, the reflectors' tails below it."""
    a = call.arg("self")
    _real(call, a)
    dtype, batch = a.type.dtype, a.type.shape[:-2]
    consts = (call.const(np.array(0, dtype), "zero"), call.const(np.array(1, dtype), "one"))
    taus = []
    for j in range(min(a.type.shape[-2:])):
        a, tau = _column_step(call, a, j, consts)
        taus.append(tau)
    tau = call.emit(CONCAT, taus, {"axis": a.type.rank - 1}) if len(taus) > 1 else taus[0]
    return [a, call.emit(RESHAPE, [tau], {"shape": batch + (len(taus),)})]
