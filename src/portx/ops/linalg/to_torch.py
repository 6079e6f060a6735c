"""torch-xla emit rules for linear algebra: each op is the ``torch.linalg`` (or ``torch``) function of its name.

``lu`` and ``lu_unpack`` reach no emitter: torchax traces torch's with data-dependent slices, so
passes/legalize/decompose.py unpacks the row swaps with static shapes for both targets; ``cholesky_info``
neither (XLA's cholesky_ex gives no LAPACK info): the same pass tests the leading minors.

Example generated code:
    cholesky = torch.linalg.cholesky_ex(a)[0]
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
"""
from __future__ import annotations

from .._util import named_rule
from ..linalg import (CDIST, CHOLESKY, CHOLESKY_INVERSE, CHOLESKY_SOLVE, DET, EIGH, EIGVALSH, INV,
                      LU_FACTOR, MATRIX_EXP, PDIST, PINV, QR, SLOGDET, SOLVE, SOLVE_TRIANGULAR, SVD,
                      SVDVALS)

__all__ = []


def _call(fn, *attrs, first=False):
    """An emit rule writing ``fn(inputs..., attr=value...)``, keyword names as torch spells them (``first``: item 0
    of the result, for the ``*_ex`` forms, which return NaN/inf on a singular input as the source's decomposition
    does instead of raising; by index, as torchax returns a plain tuple)."""
    def emit(node, t):
        args = [t.ref(v) for v in node.inputs]
        args += [f"{torch_name}={t.lit(node.attrs[name])}" for name, torch_name in attrs]
        t.assign(node, f"{fn}({', '.join(args)})" + ("[0]" if first else ""))
    return emit


_RULES = {
    CHOLESKY: _call("torch.linalg.cholesky_ex", ("upper", "upper"), first=True),
    INV: _call("torch.linalg.inv_ex", first=True),
    SOLVE: _call("torch.linalg.solve_ex", first=True),
    SOLVE_TRIANGULAR: _call("torch.linalg.solve_triangular", ("upper", "upper"), ("left", "left"),
                            ("unitriangular", "unitriangular")),
    CHOLESKY_SOLVE: _call("torch.cholesky_solve", ("upper", "upper")),
    CHOLESKY_INVERSE: _call("torch.cholesky_inverse", ("upper", "upper")),
    SVD: _call("torch.linalg.svd", ("full_matrices", "full_matrices")),
    SVDVALS: _call("torch.linalg.svdvals"),
    QR: _call("torch.linalg.qr", ("mode", "mode")),
    DET: _call("torch.linalg.det"),
    SLOGDET: _call("torch.linalg.slogdet"),
    LU_FACTOR: _call("torch.linalg.lu_factor"),
    PINV: _call("torch.linalg.pinv", ("rtol", "rtol"), ("hermitian", "hermitian")),
    CDIST: _call("torch.cdist", ("p", "p")),
    PDIST: _call("torch.pdist", ("p", "p")),
    MATRIX_EXP: _call("torch.linalg.matrix_exp"),
}
for _op, _rule in _RULES.items():
    _op.emits("torch-xla")(named_rule(_rule, _op.name, "to_torch"))


@EIGH.emits("torch-xla")
def _eigh_to_torch(node, t):
    t.assign(node, f"torch.linalg.eigh({t.ref(node.inputs[0])}, UPLO={t.lit('U' if node.attrs['upper'] else 'L')})")


@EIGVALSH.emits("torch-xla")
def _eigvalsh_to_torch(node, t):
    t.assign(node, f"torch.linalg.eigvalsh({t.ref(node.inputs[0])}, UPLO={t.lit('U' if node.attrs['upper'] else 'L')})")

