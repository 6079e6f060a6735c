"""Linear algebra on the last two axes: factorizations (cholesky, qr, svd, eigh, lu), solvers, inverses,
determinants and pairwise distances, with torch's semantics and output order.

Every op works on a batch of matrices ``(..., m, n)``. Multi-output ops list their outputs in torch's order
(``svd``: U, S, Vh; ``eigh``: eigenvalues ascending, then eigenvectors; ``qr``: Q, R; ``slogdet``: sign,
logabsdet; ``lu_factor``: LU, pivots as 1-based int32 row swaps, LAPACK's; ``lu``: P, L, U with A = P L U).
``solve`` and ``solve_triangular`` take a matrix right-hand side ``b`` (a vector is made a one-column
matrix by the import rules). The ``*_ex`` variants' error checks are dropped (Note [effect tokens] in
frontends/torch/training.py): an input outside the domain (a singular or non-positive-definite matrix) gives
NaN/inf instead of an error, in source and target alike on JAX. Their ``info`` output is 0, but
``cholesky_ex``'s, which callers test: ``cholesky_info`` computes LAPACK's (declared an error status, so
verification replaces inputs it flags).

Factorizations are unique only up to signs (the columns of U, V, Q and the eigenvectors); tests compare
what is unique (reconstructions, singular values, absolute values), and ``EIGH`` declares its eigenvectors
``sign_free`` (ir/opdef.py), so verification compares a model's eigenvector outputs column by column up to sign.

Example IR:
    %l: float32[2x3x3] = cholesky(%a) {upper=False}
    %u: float32[4x4], %s: float32[4], %vh: float32[4x4] = svd(%x) {full_matrices=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import broadcast_shapes

__all__ = ["CHOLESKY", "CHOLESKY_INFO", "INV", "SOLVE", "SOLVE_TRIANGULAR", "CHOLESKY_SOLVE", "CHOLESKY_INVERSE", "SVD", "SVDVALS",
           "EIGH", "EIGVALSH", "QR", "DET", "SLOGDET", "LU_FACTOR", "LU", "PINV", "CDIST", "PDIST", "MATRIX_EXP", "LU_UNPACK",
           "EXPM_SQUARINGS", "lu_numpy",
           "pivot_matrix"]


def _op(name, inputs, attrs=None, outputs=1, doc=""):
    return OpDef(name, inputs, attrs or {}, outputs=outputs, family="linalg", doc=doc)


CHOLESKY = _op("cholesky", ("x",), {"upper": False},
               doc="L with A = L L^T, reading the lower triangle (upper: U with A = U^T U, reading the upper one)")
CHOLESKY_INFO = _op("cholesky_info", ("x",), {"upper": False},
                    doc="LAPACK potrf's info (int32, per matrix) for the symmetric matrix read from one triangle: 0 "
                        "when it is positive definite, else the order k of its first leading minor that is not")
CHOLESKY_INFO.status_outputs = (0,)  # nonzero: the input is outside cholesky's domain (verification/domain.py)
INV = _op("inv", ("x",), doc="the inverse of each square matrix")
SOLVE = _op("solve", ("a", "b"), doc="X with A X = B; batch axes broadcast")
SOLVE_TRIANGULAR = _op("solve_triangular", ("a", "b"), {"upper": REQUIRED, "left": True, "unitriangular": False},
                       doc="X with A X = B (left) or X A = B, reading one triangle of A (unit diagonal if asked)")
CHOLESKY_SOLVE = _op("cholesky_solve", ("b", "l"), {"upper": False}, doc="X with (L L^T) X = B from the factor L")
CHOLESKY_INVERSE = _op("cholesky_inverse", ("l",), {"upper": False}, doc="(L L^T)^-1 from the factor L")
SVD = _op("svd", ("x",), {"full_matrices": False}, outputs=3, doc="U, S (descending), Vh with A = U diag(S) Vh")
SVDVALS = _op("svdvals", ("x",), doc="singular values, descending")
EIGH = _op("eigh", ("x",), {"upper": False}, outputs=2,
           doc="eigenvalues (ascending) and eigenvectors of the symmetric matrix read from one triangle")
EIGH.sign_free = {1: -2}  # each eigenvector (a column) is defined up to its sign: LAPACK and XLA pick differently
EIGVALSH = _op("eigvalsh", ("x",), {"upper": False}, doc="eigenvalues (ascending) of a symmetric matrix")
QR = _op("qr", ("x",), {"mode": "reduced"}, outputs=2, doc="Q, R with A = Q R (mode reduced or complete)")
DET = _op("det", ("x",), doc="determinant")
SLOGDET = _op("slogdet", ("x",), outputs=2, doc="sign and log|det|")
LU_FACTOR = _op("lu_factor", ("x",), outputs=2, doc="packed LU and 1-based int32 pivots (LAPACK getrf)")
LU = _op("lu", ("x",), outputs=3, doc="P, L, U with A = P L U (partial pivoting)")
LU_UNPACK = _op("lu_unpack", ("lu", "pivots"), outputs=3, doc="P, L, U from lu_factor's packed LU and pivots")
PINV = _op("pinv", ("x",), {"rtol": REQUIRED, "hermitian": False},
           doc="Moore-Penrose pseudo-inverse; singular values <= rtol*max dropped (hermitian: of the lower triangle)")
CDIST = _op("cdist", ("x1", "x2"), {"p": 2.0}, doc="p-norm distance between each row of x1 and each row of x2")
PDIST = _op("pdist", ("x",), {"p": 2.0}, doc="p-norm distances of the pairs i < j of rows of an (N, M) matrix")
MATRIX_EXP = _op("matrix_exp", ("x",), doc="exp(A) = sum A^k / k!, by scaling and squaring")
#: most squarings the Keras form of matrix_exp does (1-norms up to 2**20; beyond, the result is not exp(A))
EXPM_SQUARINGS = 20


def _matrix(x, op, square=False):
    if x.rank < 2 or (square and x.shape[-1] != x.shape[-2]):
        raise ValueError(f"{op}: expected {'square ' if square else ''}matrices (..., m, n), got {x.shape}")
    return x.shape[:-2], x.shape[-2], x.shape[-1]


def _square_rule(op):
    def rule(x, **_):
        _matrix(x, op.name, square=True)
        return x
    rule.__name__ = f"_{op.name}_type"
    return op.infer(rule)


for _op_def in (CHOLESKY, INV, CHOLESKY_INVERSE, MATRIX_EXP):
    _square_rule(_op_def)


@CHOLESKY_INFO.infer
def _cholesky_info_type(x, *, upper):
    batch, _, _ = _matrix(x, "cholesky_info", square=True)
    return x.with_shape(batch).with_dtype("int32")


@SOLVE.infer
def _solve_type(a, b):
    batch, n, _ = _matrix(a, "solve", square=True)
    bb, rows, k = _matrix(b, "solve")
    if rows != n:
        raise ValueError(f"solve: A is {n}x{n} but B has {rows} rows")
    return b.with_shape(broadcast_shapes(batch, bb) + (n, k))


@CHOLESKY_SOLVE.infer
def _cholesky_solve_type(b, l, *, upper):
    return _solve_type(l, b)


@SOLVE_TRIANGULAR.infer
def _solve_triangular_type(a, b, *, upper, left, unitriangular):
    batch, n, _ = _matrix(a, "solve_triangular", square=True)
    bb, rows, cols = _matrix(b, "solve_triangular")
    if (rows if left else cols) != n:
        raise ValueError(f"solve_triangular: A is {n}x{n}, B is {rows}x{cols} (left={left})")
    return b.with_shape(broadcast_shapes(batch, bb) + (rows, cols))


@SVD.infer
def _svd_type(x, *, full_matrices):
    batch, m, n = _matrix(x, "svd")
    k = min(m, n)
    return [x.with_shape(batch + (m, m if full_matrices else k)), x.with_shape(batch + (k,)),
            x.with_shape(batch + (n if full_matrices else k, n))]


@SVDVALS.infer
def _svdvals_type(x):
    batch, m, n = _matrix(x, "svdvals")
    return x.with_shape(batch + (min(m, n),))


@EIGH.infer
def _eigh_type(x, *, upper):
    batch, n, _ = _matrix(x, "eigh", square=True)
    return [x.with_shape(batch + (n,)), x]


@EIGVALSH.infer
def _eigvalsh_type(x, *, upper):
    return _eigh_type(x, upper=upper)[0]


@QR.infer
def _qr_type(x, *, mode):
    batch, m, n = _matrix(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode {mode!r} is not reduced or complete")
    k = m if mode == "complete" else min(m, n)
    return [x.with_shape(batch + (m, k)), x.with_shape(batch + (k, n))]


@DET.infer
def _det_type(x):
    batch, _, _ = _matrix(x, "det", square=True)
    return x.with_shape(batch)


@SLOGDET.infer
def _slogdet_type(x):
    return [_det_type(x)] * 2


@LU_FACTOR.infer
def _lu_factor_type(x):
    batch, m, n = _matrix(x, "lu_factor")
    return [x, x.with_shape(batch + (min(m, n),)).with_dtype("int32")]


@LU.infer
def _lu_type(x):
    batch, m, n = _matrix(x, "lu")
    k = min(m, n)
    return [x.with_shape(batch + (m, m)), x.with_shape(batch + (m, k)), x.with_shape(batch + (k, n))]


@LU_UNPACK.infer
def _lu_unpack_type(lu, pivots):
    return _lu_type(lu)


@PINV.infer
def _pinv_type(x, *, rtol, hermitian):
    batch, m, n = _matrix(x, "pinv")
    return x.with_shape(batch + (n, m))


@CDIST.infer
def _cdist_type(x1, x2, *, p):
    b1, rows1, cols1 = _matrix(x1, "cdist")
    b2, rows2, cols2 = _matrix(x2, "cdist")
    if cols1 != cols2:
        raise ValueError(f"cdist: rows of {cols1} and {cols2} features")
    return x1.with_shape(broadcast_shapes(b1, b2) + (rows1, rows2))


@PDIST.infer
def _pdist_type(x, *, p):
    if x.rank != 2:
        raise ValueError(f"pdist: expected an (N, M) matrix, got {x.shape}")
    n = x.shape[0]
    return x.with_shape((n * (n - 1) // 2,))


# -- NumPy references (float64, cast back) --------------------------------------------------------------
def _nan_on_error(fn, arrays, attrs):
    """``fn`` of the arrays; NaN where NumPy refuses (a singular or non-positive-definite matrix), as the
    converted models return there instead of raising."""
    try:
        return fn(*arrays, **attrs)
    except np.linalg.LinAlgError:
        out = fn(*[np.eye(a.shape[-1]) * np.ones_like(a) if a.ndim >= 2 and a.shape[-1] == a.shape[-2] else a
                   for a in arrays], **attrs)
        return [np.full_like(o, np.nan) for o in out] if isinstance(out, (list, tuple)) else np.full_like(out, np.nan)


def _f64(fn):
    def reference(*arrays, **attrs):
        out = _nan_on_error(fn, [np.asarray(a, np.float64) for a in arrays], attrs)
        dtype = arrays[0].dtype
        return [np.asarray(o).astype(o.dtype if o.dtype.kind == "i" else dtype) for o in out] \
            if isinstance(out, (list, tuple)) else np.asarray(out).astype(dtype)
    reference.__name__ = f"{fn.__name__}_numpy"
    return reference


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _triangle(a, upper, unit=False):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t = t * (1 - np.eye(n)) + np.eye(n)
    return t


def lu_numpy(a):
    """(packed LU, 1-based int32 pivots) of a batch of matrices by partial pivoting, as LAPACK getrf."""
    a = np.array(a, np.float64)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    flat, piv = a.reshape((-1, m, n)), np.zeros((int(np.prod(batch, dtype=int)), min(m, n)), np.int32)
    for b, lu in enumerate(flat):
        for j in range(min(m, n)):
            p = j + int(np.argmax(np.abs(lu[j:, j])))
            piv[b, j] = p + 1
            lu[[j, p]] = lu[[p, j]]
            if lu[j, j] != 0:
                lu[j + 1:, j] /= lu[j, j]
                lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return flat.reshape(a.shape), piv.reshape(batch + (min(m, n),))


def _plu(a):
    return _unpack(*lu_numpy(a))


def _unpack(lu, piv):
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    return pivot_matrix(piv, m), lower, upper


def pivot_matrix(pivots, m):
    """P (float64, ``(..., m, m)``) of 1-based LAPACK ``pivots`` (``(..., k)``) of an m-row matrix: the row swaps
    applied to ``arange(m)`` in order give perm with A[perm] = L U, so A = P L U with P = one_hot(perm)^T."""
    piv = np.asarray(pivots, np.int64)
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    for j in range(piv.shape[-1]):
        rows = piv[..., j] - 1
        pj, pr = perm[..., j].copy(), np.take_along_axis(perm, rows[..., None], -1)[..., 0]
        perm[..., j] = pr
        np.put_along_axis(perm, rows[..., None], pj[..., None], -1)
    return np.swapaxes(np.eye(m)[perm], -1, -2)


def _pairs(x1, x2, p):
    d = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == np.inf:
        return d.max(-1)
    if p == 0:
        return (d != 0).sum(-1).astype(np.float64)
    return (d ** p).sum(-1) ** (1.0 / p)


def _pinv(x, rtol, hermitian):
    x = _mirrored(x, False) if hermitian else x
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    keep = s > rtol * s.max(-1, keepdims=True)
    inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return _mT(vh) @ (inv[..., :, None] * _mT(u))


def _expm(x):
    norm = np.abs(x).sum(-2).max(-1)
    s = np.clip(np.ceil(np.log2(np.maximum(norm, 1e-300))), 0, None)
    scaled, eye = x / (2.0 ** s)[..., None, None], np.eye(x.shape[-1])
    total = eye + scaled / 30
    for j in range(29, 0, -1):
        total = eye + scaled @ total / j
    for i in range(int(s.max(initial=0))):
        total = np.where((i < s)[..., None, None], total @ total, total)
    return total


def _mirrored(x, upper):
    """The symmetric matrix of one triangle of ``x`` (what torch's cholesky, eigh and pinv(hermitian) read)."""
    return np.triu(x) + _mT(np.triu(x, 1)) if upper else np.tril(x) + _mT(np.tril(x, -1))


def _cholesky_info(x, upper):
    """potrf's info: the order of the first leading minor of the mirrored triangle that is not positive definite."""
    sym = _mirrored(x, upper)
    n = sym.shape[-1]
    flat = sym.reshape((-1, n, n))
    info = np.zeros(len(flat), np.int32)
    for b, a in enumerate(flat):
        info[b] = next((k for k in range(1, n + 1) if not np.all(np.linalg.eigvalsh(a[:k, :k]) > 0)), 0)
    return info.reshape(sym.shape[:-2])


def _right_solve(a, b, left):
    return np.linalg.solve(a, b) if left else _mT(np.linalg.solve(_mT(a), _mT(b)))


_REFERENCES = {
    CHOLESKY: lambda x, upper: _mT(np.linalg.cholesky(_mirrored(x, True))) if upper else np.linalg.cholesky(x),
    CHOLESKY_INFO: _cholesky_info,
    INV: np.linalg.inv,
    SOLVE: np.linalg.solve,
    SOLVE_TRIANGULAR: lambda a, b, upper, left, unitriangular: _right_solve(_triangle(a, upper, unitriangular), b,
                                                                            left),
    CHOLESKY_SOLVE: lambda b, l, upper: np.linalg.solve(_mT(l) @ l if upper else l @ _mT(l), b),
    CHOLESKY_INVERSE: lambda l, upper: np.linalg.inv(_mT(l) @ l if upper else l @ _mT(l)),
    SVD: lambda x, full_matrices: list(np.linalg.svd(x, full_matrices=full_matrices)),
    SVDVALS: lambda x: np.linalg.svd(x, compute_uv=False),
    EIGH: lambda x, upper: list(np.linalg.eigh(x, UPLO="U" if upper else "L")),
    EIGVALSH: lambda x, upper: np.linalg.eigvalsh(x, UPLO="U" if upper else "L"),
    QR: lambda x, mode: list(np.linalg.qr(x, mode=mode)),
    DET: np.linalg.det,
    SLOGDET: lambda x: list(np.linalg.slogdet(x)),
    LU_FACTOR: lambda x: list(lu_numpy(x)),
    LU: lambda x: list(_plu(x)),
    LU_UNPACK: lambda lu, pivots: list(_unpack(lu, pivots)),
    PINV: _pinv,
    CDIST: lambda x1, x2, p: _pairs(x1, x2, p),
    PDIST: lambda x, p: _pairs(x, x, p)[np.triu_indices(x.shape[0], 1)],
    MATRIX_EXP: _expm,
}
for _op_def, _fn in _REFERENCES.items():
    _fn.__name__ = _op_def.name
    _op_def.reference(_f64(_fn))
