"""Reductions, argmax/argmin, var/std and softmax: torch -> IR -> NumPy reference and both targets' emitted models."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


def _ints(*shape, dtype=torch.int64):
    return lambda: torch.randint(-5, 6, shape, dtype=dtype)


def _bools(*shape):
    return lambda: torch.randn(shape) > 0


# (function, inputs: shapes of normal floats or tensor factories, IR ops expected)
CASES = [
    pytest.param(lambda x: x.mean(), [(2, 3, 4)], ["mean"], id="mean-all"),
    pytest.param(lambda x: x.mean((1, 2), keepdim=True), [(2, 3, 4)], ["mean"], id="mean-dims-keepdim"),
    pytest.param(lambda x: x.mean(-1), [(2, 3, 4)], ["mean"], id="mean-last"),
    pytest.param(lambda x: x.sum(1), [(2, 3, 4)], ["sum"], id="sum-dim"),
    pytest.param(lambda x: x.sum(), [(2, 3, 4)], ["sum"], id="sum-all"),
    pytest.param(lambda x: x.sum((0, 2), keepdim=True), [(2, 3, 4)], ["sum"], id="sum-dims-keepdim"),
    pytest.param(lambda x: (x > 0).sum(-1), [(2, 3, 4)], ["sum"], id="sum-bool-is-int64"),
    pytest.param(lambda x: x.sum(1), [_ints(2, 3, dtype=torch.int32)], ["sum"], id="sum-int32-is-int64"),
    pytest.param(lambda x: x.sum(1, dtype=torch.float32), [_ints(2, 3)], ["cast", "sum"], id="sum-dtype-casts"),
    pytest.param(lambda x: x.prod(1), [(2, 3, 4)], ["prod"], id="prod-dim"),
    pytest.param(lambda x: x.prod(), [_ints(2, 3)], ["prod"], id="prod-int-all"),
    pytest.param(lambda x: x.amax((1, 2)), [(2, 3, 4)], ["amax"], id="amax-dims"),
    pytest.param(lambda x: x.amin(0, keepdim=True), [(2, 3, 4)], ["amin"], id="amin-keepdim"),
    pytest.param(lambda x: x.max(), [(2, 3, 4)], ["amax"], id="max-all"),
    pytest.param(lambda x: x.min(), [_ints(5, 2)], ["amin"], id="min-all-int"),
    pytest.param(lambda x: x.max(1), [(2, 3, 4)], ["amax", "argmax"], id="max-dim-values-indices"),
    pytest.param(lambda x: x.min(-1, keepdim=True), [(2, 3, 4)], ["amin", "argmin"], id="min-dim-keepdim"),
    pytest.param(lambda x: x.max(1)[1], [_ints(4, 6)], ["argmax"], id="max-dim-indices-only-int"),
    pytest.param(lambda x: x.max(1)[0], [(4, 6)], ["amax"], id="max-dim-values-only"),
    pytest.param(lambda x, y: torch.max(x, y), [(2, 3), (2, 3)], ["maximum"], id="max-other"),
    pytest.param(lambda x, y: torch.min(x, y), [(2, 3), (3,)], ["minimum"], id="min-other-broadcast"),
    pytest.param(lambda x: x.argmax(1), [(2, 3, 4)], ["argmax"], id="argmax-dim"),
    pytest.param(lambda x: x.argmax(), [(2, 3, 4)], ["argmax"], id="argmax-flat"),
    pytest.param(lambda x: x.argmin(-1, keepdim=True), [(2, 3, 4)], ["argmin"], id="argmin-keepdim"),
    pytest.param(lambda x: torch.argmax(x, keepdim=True), [(2, 3)], ["argmax"], id="argmax-flat-keepdim"),
    pytest.param(lambda x: x.var(1), [(2, 5, 3)], ["var"], id="var-unbiased"),
    pytest.param(lambda x: x.var(), [(2, 5, 3)], ["var"], id="var-all"),
    pytest.param(lambda x: x.var((0, 2), unbiased=False, keepdim=True), [(2, 5, 3)], ["var"], id="var-biased"),
    pytest.param(lambda x: x.var(1, correction=2), [(2, 5, 3)], ["var"], id="var-correction-2"),
    pytest.param(lambda x: x.std(-1), [(2, 5, 3)], ["std"], id="std-unbiased"),
    pytest.param(lambda x: x.std(1, correction=0, keepdim=True), [(2, 5, 3)], ["std"], id="std-correction-0"),
    pytest.param(lambda x: torch.var_mean(x, 1), [(2, 5, 3)], ["var", "mean"], id="var-mean"),
    pytest.param(lambda x: torch.std_mean(x, (1, 2), correction=0), [(2, 5, 3)], ["std", "mean"], id="std-mean"),
    pytest.param(lambda x: x.any(1), [_bools(2, 3, 4)], ["any"], id="any-dim"),
    pytest.param(lambda x: x.all(), [_bools(2, 3)], ["all"], id="all-all"),
    pytest.param(lambda x: (x > -1).all(-1, keepdim=True), [(2, 3, 4)], ["all"], id="all-keepdim"),
    pytest.param(lambda x: x.logsumexp(1), [(2, 3, 4)], ["logsumexp"], id="logsumexp"),
    pytest.param(lambda x: (x * 30).logsumexp((0, 2), keepdim=True), [(2, 3, 4)], ["logsumexp"],
                 id="logsumexp-large-keepdim"),
    pytest.param(lambda x: x.cumsum(1), [(2, 3, 4)], ["cumsum"], id="cumsum-dim"),
    pytest.param(lambda x: x.cumsum(-1), [(5,)], ["cumsum"], id="cumsum-rank1"),
    pytest.param(lambda x: x.cumsum(0), [_ints(4, 3)], ["cumsum"], id="cumsum-int64"),
    pytest.param(lambda x: x.flip(1).cumsum(1).flip(1), [(2, 6)], ["cumsum"], id="cumsum-reverse"),
    pytest.param(lambda x: (x > 0).cumsum(-1), [(3, 5)], ["cumsum"], id="cumsum-bool-counts"),
    pytest.param(lambda x: x.norm(dim=-1), [(2, 3, 4)], ["vector_norm"], id="norm-2"),
    pytest.param(lambda x: torch.linalg.vector_norm(x, 1, dim=(0, 2), keepdim=True), [(2, 3, 4)], ["vector_norm"],
                 id="norm-1-two-axes"),
    pytest.param(lambda x: torch.linalg.vector_norm(x, float("inf")), [(2, 3, 4)], ["vector_norm"], id="norm-inf"),
    pytest.param(lambda x: torch.linalg.vector_norm(x, float("-inf"), dim=1), [(2, 3)], ["vector_norm"],
                 id="norm-neg-inf"),
    pytest.param(lambda x: torch.linalg.vector_norm(x.relu(), 0, dim=1), [(2, 5)], ["vector_norm"], id="norm-0"),
    pytest.param(lambda x: torch.linalg.vector_norm(x, 3.5, dim=1), [(2, 5)], ["vector_norm"], id="norm-3.5"),
    pytest.param(lambda x: x.softmax(1), [(2, 3, 4)], ["softmax"], id="softmax-dim1"),
    pytest.param(lambda x: torch.softmax(x * 20, -1), [(2, 3, 7)], ["softmax"], id="softmax-last-large"),
    pytest.param(lambda x: torch.log_softmax(x, 1), [(2, 3, 4)], ["log_softmax"], id="log-softmax"),
    pytest.param(lambda x: torch.log_softmax(x * 20, -1), [(4, 9)], ["log_softmax"], id="log-softmax-large"),
    pytest.param(lambda x: torch.softmax(x, 0, dtype=torch.float32), [_ints(3, 4)], ["cast", "softmax"],
                 id="softmax-dtype-casts"),
]


def test_max_dim_emits_argmax_only_when_indices_are_read(target):
    graph = check_torch_op(lambda x: x.max(1)[0] * 2, torch.randn(3, 4), target=target, **TOL)
    assert "argmax" not in {n.op.name for n in graph.nodes}


def _make(spec):
    return spec() if callable(spec) else torch.randn(spec)


@pytest.mark.parametrize("fn, specs, ops", CASES)
def test_reduce_case(target, fn, specs, ops):
    torch.manual_seed(0)
    check_torch_op(fn, *[_make(s) for s in specs], expect_ops=ops, target=target, **TOL)


_REDUCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "std": lambda x, d, k: x.std(d, keepdim=k, correction=0),
    "logsumexp": lambda x, d, k: x.logsumexp(d, keepdim=k),
}


@given(st.sampled_from(sorted(_REDUCTIONS)), st.lists(st.integers(2, 3), min_size=1, max_size=3),
       st.data(), st.booleans())
def test_reduce_property(target, name, shape, data, keepdim):
    rank = len(shape)
    dims = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank,
                              unique_by=lambda d: d % rank))
    torch.manual_seed(0)
    graph = check_torch_op(lambda x: _REDUCTIONS[name](x, tuple(dims), keepdim), torch.randn(shape), target=target,
                           **TOL)
    assert [n.op.name for n in graph.nodes] == [name]
