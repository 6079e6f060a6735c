"""JAX import rules for linear algebra: the primitives ``keras.ops.linalg`` and ``jnp.linalg`` trace to.

Outputs follow JAX's order (``svd``: s, u, vh; ``eigh``: vectors, then values; ``lu``: lu, 0-based pivots,
permutation). ``custom_linear_solve`` (``jnp.linalg.solve`` / ``inv``) is the IR ``solve`` of its matvec
matrix when the matvec is JAX's own ``A @ x`` (a vector) or ``(A @ x^T)^T`` (rows of vectors, as ``vmap``
writes a matrix right-hand side); its ``lu`` operand is then left unread and dropped as dead code.

Example:
    triangular_solve[left_side=True lower=True transpose_a=False unit_diagonal=False](%a, %b)
        -> solve_triangular(%a, %b) {upper=False, left=True, unitriangular=False}
"""
from __future__ import annotations

from .._jax import permuted, reshaped
from ..elementwise import BINARY, CAST
from ...ir import imports
from ..linalg import CHOLESKY, EIGH, EIGVALSH, LU, LU_FACTOR, QR, SOLVE, SOLVE_TRIANGULAR, SVD, SVDVALS
from ..reduce import ARGMAX

__all__ = []


def _mT(call, x):
    return permuted(call, x, tuple(range(x.type.rank - 2)) + (x.type.rank - 1, x.type.rank - 2))


@CHOLESKY.imports("jax", "cholesky")
def _cholesky_from_jax(call):
    """The lower factor (JAX leaves the upper triangle unspecified; the IR's is zero)."""
    return call.emit(CHOLESKY, [call.input(0)], {"upper": False})


@SOLVE_TRIANGULAR.imports("jax", "triangular_solve")
def _triangular_solve_from_jax(call):
    p = call.params
    if p.get("conjugate_a") and "complex" in call.in_type(0).dtype:
        call.unsupported("triangular_solve with conjugate_a on a complex matrix")
    a, upper = call.input(0), not p["lower"]
    if p["transpose_a"]:
        a, upper = _mT(call, a), not upper
    attrs = {"upper": upper, "left": bool(p["left_side"]), "unitriangular": bool(p["unit_diagonal"])}
    return call.emit(SOLVE_TRIANGULAR, [a, call.input(1)], attrs)


@SVD.imports("jax", "svd")
def _svd_from_jax(call):
    if call.params.get("subset_by_index") not in (None, (0, min(call.in_type(0).shape[-2:]))):
        call.unsupported("svd with subset_by_index")
    if not call.params["compute_uv"]:
        return [call.emit(SVDVALS, [call.input(0)])]
    u, s, vh = call.emit(SVD, [call.input(0)], {"full_matrices": bool(call.params["full_matrices"])})
    return [s, u, vh]


@EIGH.imports("jax", "eigh")
def _eigh_from_jax(call):
    if not call.params.get("sort_eigenvalues", True) or call.params.get("subset_by_index") is not None:
        call.unsupported("eigh with unsorted eigenvalues or subset_by_index")
    x, upper = call.input(0), not call.params["lower"]
    values, vectors = call.emit(EIGH, [x], {"upper": upper})
    return [vectors, values]


@EIGVALSH.imports("jax", "eigvalsh")
def _eigvalsh_from_jax(call):
    return call.emit(EIGVALSH, [call.input(0)], {"upper": not call.params.get("lower", True)})


@QR.imports("jax", "qr")
def _qr_from_jax(call):
    if call.params.get("pivoting"):
        call.unsupported("qr with pivoting")
    mode = "complete" if call.params["full_matrices"] else "reduced"
    return call.emit(QR, [call.input(0)], {"mode": mode})


@LU_FACTOR.imports("jax", "lu")
def _lu_from_jax(call):
    """(lu, 0-based pivots, permutation); the permutation is read off P of ``lu`` (dead code when unread)."""
    x = call.input(0)
    lu, pivots = call.emit(LU_FACTOR, [x])
    zero_based = call.emit(BINARY["sub"], [pivots, call.scalar(1, "int32")])
    p, _, _ = call.emit(LU, [x])
    perm = call.emit(ARGMAX, [_mT(call, p)], {"axis": x.type.rank - 1})
    return [lu, zero_based, call.emit(CAST, [perm], {"dtype": call.out_type(2).dtype})]


def _matvec_form(jaxpr, a_rank, b_rank):
    """"vector" for ``A @ x``, "rows" for ``(A @ x^T)^T``, else None (only JAX's own solve matvecs); a stack
    of matrices (``keras.ops.inv`` / ``solve`` on (N, n, n)) batches both over the leading dims."""
    eqns = [e for e in jaxpr.eqns if e.primitive.name != "reduce_sum" or e.params.get("axes")]
    if not eqns or eqns[0].primitive.name != "dot_general" or eqns[0].invars[0] is not jaxpr.invars[0]:
        return None
    (lhs_c, rhs_c), (lhs_b, rhs_b) = eqns[0].params["dimension_numbers"]
    batch = tuple(range(a_rank - 2))
    if a_rank < 2 or tuple(lhs_c) != (a_rank - 1,) or tuple(lhs_b) != batch or tuple(rhs_b) != batch:
        return None
    if b_rank == a_rank - 1 and len(eqns) == 1 and tuple(rhs_c) == (b_rank - 1,):
        return "vector"
    swap = batch + (a_rank - 1, a_rank - 2)
    if b_rank == a_rank and tuple(rhs_c) == (b_rank - 1,) and len(eqns) == 2 and \
            eqns[1].primitive.name == "transpose" and tuple(eqns[1].params["permutation"]) == swap:
        return "rows"
    return None


@SOLVE.imports("jax", "custom_linear_solve")
def _custom_linear_solve_from_jax(call):
    matvec = call.params["jaxprs"].matvec
    n_consts = sum(call.params["const_lengths"])
    if call.params["const_lengths"].matvec != 1 or call.arity != n_consts + 1:
        call.unsupported("custom_linear_solve other than jnp.linalg.solve's (one matrix, one right-hand side)")
    a, b = call.input(0), call.input(n_consts)
    form = _matvec_form(getattr(matvec, "jaxpr", matvec), a.type.rank, b.type.rank)
    if form is None:
        call.unsupported("custom_linear_solve with a matvec other than a matrix product")
    if form == "vector":
        x = call.emit(SOLVE, [a, reshaped(call, b, b.type.shape + (1,))])
        return reshaped(call, x, b.type.shape)
    return _mT(call, call.emit(SOLVE, [a, _mT(call, b)]))


@imports("jax", "eig")
def _eig_from_jax(call):
    call.unsupported("non-symmetric eig: complex results, and XLA lowers it on CPU only (not TPU); use "
                     "keras.ops.linalg.eigh for a symmetric matrix")
