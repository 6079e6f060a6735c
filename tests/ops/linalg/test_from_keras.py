"""keras.ops.linalg in subclassed models, traced through the JAX frontend, to both targets.

Sign-ambiguous factors (QR, SVD, eigh) are checked through what is unique: reconstructions, singular values
and eigenvalues, absolute values.
"""
import keras
import numpy as np
import pytest

from portx.errors import UnsupportedOps
from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.ir import validate
from portx.verification.compare import run_reference
from tests.support.harness import compare_outputs, emit_and_run

TOL = 1e-4


def _spd(n=3, seed=0):
    a = np.random.default_rng(seed).normal(size=(n, n)).astype("float32")
    return (a @ a.T + n * np.eye(n)).astype("float32")


class _Linalg(keras.Model):
    """One keras.ops.linalg function on a square input (and a fixed right-hand side)."""

    def __init__(self, which, **kwargs):
        super().__init__(**kwargs)
        self.which = which

    def call(self, x):
        ops, la = keras.ops, keras.ops.linalg
        rhs = ops.reshape(ops.arange(8, dtype="float32"), (4, 2)) / 8.0
        if self.which == "cholesky":
            return la.cholesky(x)
        if self.which == "solve_triangular":
            return la.solve_triangular(ops.tril(x), rhs, lower=True)
        if self.which == "solve":
            return la.solve(x, rhs)
        if self.which == "solve_vector":
            return la.solve(x, rhs[:, 0])
        if self.which == "inv":
            return la.inv(x)
        if self.which == "svd":
            u, s, vh = la.svd(x, full_matrices=False)
            return ops.matmul(u * s[None, :], vh), s, ops.abs(u)
        if self.which == "eigh":
            w, v = la.eigh(x)
            return ops.matmul(v * w[None, :], ops.transpose(v)), w, ops.abs(v)
        if self.which == "qr":
            q, r = la.qr(x)
            return ops.matmul(q, r), ops.abs(r)
        if self.which == "eig":
            return ops.real(la.eig(x)[0])
        if self.which in _MORE:
            return _MORE[self.which](x)
        lu, pivots = la.lu_factor(x)
        return lu, pivots


_MORE = {
    "det": keras.ops.linalg.det, "slogdet": keras.ops.slogdet, "pinv": keras.ops.linalg.pinv,
    "cholesky_inverse": lambda x: keras.ops.linalg.cholesky_inverse(keras.ops.linalg.cholesky(x)),
    "svdvals": lambda x: keras.ops.linalg.svd(x, compute_uv=False),
    "norm_2": lambda x: keras.ops.linalg.norm(x, ord=2), "norm_nuc": lambda x: keras.ops.linalg.norm(x, ord="nuc"),
    "matrix_rank": keras.ops.linalg.matrix_rank, "lstsq": lambda x: keras.ops.linalg.lstsq(x, x[:, :2]),
    # a stack of matrices: custom_linear_solve's matvec batched over the leading dim
    "inv_batched": lambda x: keras.ops.linalg.inv(keras.ops.stack([x, x + keras.ops.eye(4)])),
    "solve_batched": lambda x: keras.ops.linalg.solve(keras.ops.stack([x, 2 * x]),
                                                      keras.ops.stack([x[:, :2], x[:, 1:3]])),
}
CASES = ["cholesky", "solve_triangular", "solve", "solve_vector", "inv", "svd", "eigh", "qr", "lu_factor", *_MORE]


@pytest.mark.parametrize("which", CASES)
def test_keras_ops_linalg(target, which):
    model, x = _Linalg(which), _spd(4)
    want = [np.asarray(y) for y in keras.tree.flatten(model(x))]
    graph = validate(lower_keras_subclassed(model, [x]))
    env = run_reference(graph, [x])
    compare_outputs(target, graph, want, [env[v] for v in graph.outputs], TOL, TOL, "keras (reference)")
    got, _ = emit_and_run(graph, [x], target)
    compare_outputs(target, graph, want, got, TOL, TOL, "keras")


def test_keras_ops_eig_is_refused_with_its_reason():
    with pytest.raises(UnsupportedOps, match="symmetric"):
        lower_keras_subclassed(_Linalg("eig"), [_spd()])


def test_keras_ops_linalg_in_a_functional_model(target):
    from tests.support.keras_harness import check_keras_model
    x, la = keras.Input((3, 3), batch_size=2), keras.ops.linalg
    outs = [la.inv(x), la.cholesky(x), la.det(x), la.solve(x, x), la.solve_triangular(x, x, lower=True),
            la.svd(x, compute_uv=False), *la.lu_factor(x), la.pinv(x), la.eigh(x)[0], keras.ops.abs(la.qr(x)[1])]
    spd = np.stack([_spd(seed=0), _spd(seed=1)])
    graph = check_keras_model(keras.Model(x, outs), spd, target=target, atol=TOL, rtol=TOL, randomize=False)
    assert {"inv", "cholesky", "det", "solve", "solve_triangular", "svdvals", "lu_factor", "pinv", "eigh", "qr"} <= \
        {n.op.name for n in graph.nodes}
