"""Keras-JAX emit rules for linear algebra: ``keras.ops.linalg`` where it has the op, short compositions elsewhere.

``eigh`` and ``cholesky`` read one triangle, as torch does (Keras averages A and A^T): the emitted code
mirrors that triangle first. ``lu_factor``'s pivots are 1-based, as torch's (JAX's are 0-based); ``lu``,
``lu_unpack`` and ``cholesky_info`` reach no emitter (passes/legalize/decompose.py unpacks the row swaps and tests
the leading minors for both targets). A right-side or unit-diagonal triangular
solve transposes or overwrites the diagonal around ``solve_triangular``; ``cholesky_solve`` is two triangular solves.

Example generated code:
    cholesky = ops.linalg.cholesky(a)
    u, s, vh = ops.linalg.svd(x, full_matrices=False)
"""
from __future__ import annotations

import numpy as np

from .._util import named_rule
from ..linalg import (EXPM_SQUARINGS, CDIST, CHOLESKY, CHOLESKY_INVERSE, CHOLESKY_SOLVE, DET, EIGH,
                      EIGVALSH, INV, LU_FACTOR, MATRIX_EXP, PDIST, PINV, QR, SLOGDET, SOLVE, SOLVE_TRIANGULAR, SVD,
                      SVDVALS)

__all__ = []


def _mT(expr):
    return f"ops.swapaxes({expr}, -1, -2)"


def _simple(fn, *attrs):
    def emit(node, k):
        args = [k.ref(v) for v in node.inputs] + [f"{keras}={k.lit(node.attrs[name])}" for name, keras in attrs
                                                   if node.attrs[name]]
        k.assign(node, f"{fn}({', '.join(args)})")
    return emit


_RULES = {
    INV: _simple("ops.linalg.inv"),
    SOLVE: _simple("ops.linalg.solve"),
    SVD: lambda node, k: k.assign(node, f"ops.linalg.svd({k.ref(node.inputs[0])}, "
                                        f"full_matrices={k.lit(node.attrs['full_matrices'])})"),
    SVDVALS: lambda node, k: k.assign(node, f"ops.linalg.svd({k.ref(node.inputs[0])}, compute_uv=False)"),
    QR: lambda node, k: k.assign(node, f"ops.linalg.qr({k.ref(node.inputs[0])}, mode={k.lit(node.attrs['mode'])})"),
    DET: _simple("ops.linalg.det"),
    SLOGDET: _simple("ops.slogdet"),
}
for _op, _rule in _RULES.items():
    _op.emits("keras-jax")(named_rule(_rule, _op.name, "to_keras"))


def _triangular(a, b, lower, left=True):
    """Source for X with A X = B (left) or X A = B, A triangular (``lower``)."""
    if left:
        return f"ops.linalg.solve_triangular({a}, {b}, lower={lower})"
    return _mT(f"ops.linalg.solve_triangular({_mT(a)}, {_mT(b)}, lower={not lower})")


@SOLVE_TRIANGULAR.emits("keras-jax")
def _solve_triangular_to_keras(node, k):
    a, b = (k.ref(v) for v in node.inputs)
    attrs, n = node.attrs, node.inputs[0].type.shape[-1]
    if attrs["unitriangular"]:
        a = k.temp(node, f"ops.where(ops.eye({n}, dtype='bool'), ops.ones_like({a}), {a})", "unit")
    k.assign(node, _triangular(a, b, not attrs["upper"], attrs["left"]))


@CHOLESKY_SOLVE.emits("keras-jax")
def _cholesky_solve_to_keras(node, k):
    """(L L^T) X = B: L Y = B, then L^T X = Y (U^T U for upper)."""
    b, factor = (k.ref(v) for v in node.inputs)
    lower = _mT(factor) if node.attrs["upper"] else factor
    y = k.temp(node, _triangular(lower, b, True), "half")
    k.assign(node, _triangular(_mT(lower), y, False))


@CHOLESKY_INVERSE.emits("keras-jax")
def _cholesky_inverse_to_keras(node, k):
    """inv(L)^T inv(L) (inv(U) inv(U)^T): written out, as ops.linalg.cholesky_inverse fails on a batch."""
    factor, n, upper = k.ref(node.inputs[0]), node.inputs[0].type.shape[-1], node.attrs["upper"]
    eye = f"ops.broadcast_to(ops.eye({n}, dtype={k.lit(node.inputs[0].type.dtype)}), ops.shape({factor}))"
    inverse = k.temp(node, _triangular(factor, eye, not upper), "inv")
    k.assign(node, f"ops.matmul({inverse}, {_mT(inverse)})" if upper else f"ops.matmul({_mT(inverse)}, {inverse})")


def _symmetric(node, k) -> str:
    """The symmetric matrix torch reads: the lower (or upper) triangle, mirrored."""
    x = k.ref(node.inputs[0])
    if node.attrs["upper"]:
        return k.temp(node, f"ops.add(ops.triu({x}), {_mT(f'ops.triu({x}, 1)')})", "sym")
    return k.temp(node, f"ops.add(ops.tril({x}), {_mT(f'ops.tril({x}, -1)')})", "sym")


@CHOLESKY.emits("keras-jax")
def _cholesky_to_keras(node, k):
    """torch reads one triangle (upper=True: the upper); Keras averages A and A^T, so it is mirrored first."""
    sym = _symmetric(node, k)
    k.assign(node, f"ops.linalg.cholesky({sym}{', upper=True' if node.attrs['upper'] else ''})")


@PINV.emits("keras-jax")
def _pinv_to_keras(node, k):
    """hermitian: torch reads the lower triangle, so it is mirrored first."""
    x = _symmetric(node.replace(attrs={"upper": False}), k) if node.attrs["hermitian"] else k.ref(node.inputs[0])
    k.assign(node, f"ops.linalg.pinv({x}, rcond={k.lit(node.attrs['rtol'])})")


@EIGH.emits("keras-jax")
def _eigh_to_keras(node, k):
    k.assign(node, f"ops.linalg.eigh({_symmetric(node, k)})")


@EIGVALSH.emits("keras-jax")
def _eigvalsh_to_keras(node, k):
    k.assign(node, f"ops.linalg.eigh({_symmetric(node, k)})[0]")


@LU_FACTOR.emits("keras-jax")
def _lu_factor_to_keras(node, k):
    factors = k.temp(node, f"ops.linalg.lu_factor({k.ref(node.inputs[0])})", "lu")
    k.assign(node, f"{factors}[0], ops.add({factors}[1], 1)")


def _distances(k, x1, x2, p) -> str:
    """Source for the p-norm distances between the rows of x1 and of x2 (..., P, R)."""
    diff = f"ops.abs(ops.subtract(ops.expand_dims({x1}, -2), ops.expand_dims({x2}, -3)))"
    if p == float("inf"):
        return f"ops.max({diff}, axis=-1)"
    if p == 0:
        return f"ops.sum(ops.cast(ops.not_equal({diff}, 0), 'float32'), axis=-1)"
    if p == 1:
        return f"ops.sum({diff}, axis=-1)"
    if p == 2:
        return f"ops.sqrt(ops.sum(ops.square({diff}), axis=-1))"
    return f"ops.power(ops.sum(ops.power({diff}, {k.lit(p)}), axis=-1), {k.lit(1.0 / p)})"


@CDIST.emits("keras-jax")
def _cdist_to_keras(node, k):
    k.assign(node, _distances(k, k.ref(node.inputs[0]), k.ref(node.inputs[1]), node.attrs["p"]))


@PDIST.emits("keras-jax")
def _pdist_to_keras(node, k):
    """All distances, then the pairs i < j in row-major order (a constant index table)."""
    x, n = k.ref(node.inputs[0]), node.inputs[0].type.shape[0]
    table = k.temp(node, _distances(k, x, x, node.attrs["p"]), "table")
    rows, cols = np.triu_indices(n, 1)
    pairs = k.const(node, (rows * n + cols).astype(np.int32), "pairs")
    k.assign(node, f"ops.take(ops.reshape({table}, (-1,)), {pairs})")


@MATRIX_EXP.emits("keras-jax")
def _matrix_exp_to_keras(node, k):
    """Scaling and squaring: X = A / 2**s with s = ceil(log2 |A|_1) clipped to [0, EXPM_SQUARINGS], so |X|_1 <= 1;
    exp(X) by Taylor's series to degree 18 (Horner), then squared s times (``where`` keeps the shapes static)."""
    x, n, dtype = k.ref(node.inputs[0]), node.inputs[0].type.shape[-1], k.lit(node.inputs[0].type.dtype)
    norm = f"ops.max(ops.sum(ops.abs({x}), axis=-2), axis=-1)"
    s = k.temp(node, f"ops.clip(ops.ceil(ops.log2(ops.maximum({norm}, 1e-30))), 0, {EXPM_SQUARINGS})", "s")
    scaled = k.temp(node, f"ops.divide({x}, ops.power(2.0, {s})[..., None, None])", "scaled")
    eye = k.temp(node, f"ops.eye({n}, dtype={dtype})", "eye")
    total = k.temp(node, f"ops.add({eye}, ops.divide({scaled}, 18.0))", "taylor")
    for j in range(17, 0, -1):
        total = k.temp(node, f"ops.add({eye}, ops.divide(ops.matmul({scaled}, {total}), {float(j)}))", "taylor")
    for i in range(EXPM_SQUARINGS - 1):
        total = k.temp(node, f"ops.where(ops.less({float(i)}, {s})[..., None, None], ops.matmul({total}, {total}), "
                             f"{total})", "square")
    k.assign(node, f"ops.where(ops.less({float(EXPM_SQUARINGS - 1)}, {s})[..., None, None], "
                   f"ops.matmul({total}, {total}), {total})")
