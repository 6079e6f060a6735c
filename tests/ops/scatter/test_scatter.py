"""Scatter and gather forms (ops/scatter/): torch -> IR -> NumPy reference and both emitted models.

Index tensors are buffers of the wrapping module (seeded and valid), never graph inputs: portx's
verification feeds random values to graph inputs, which would make integer indices out of range.
Duplicate indices appear only where torch's result does not depend on the order of the writes
(sums, products, maxima, minima, means).

Example:
    pytest tests/ops/scatter/test_scatter.py -k scatter_reduce
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from portx import api
from portx.errors import NotTpuLegal, UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from portx.ops.scatter import REDUCTIONS, SCATTER_REDUCE, identity_of
from tests.support.harness import check_torch_op, lower_torch

EXACT = {"atol": 0.0, "rtol": 0.0}
ROWS = torch.tensor([2, 0, 3])  # into an axis of 4 or 5
DUPS = torch.tensor([1, 3, 1, 1])  # repeats: reductions combine them
GRID = torch.tensor([[0, 2, 2], [1, 0, 1], [3, 3, 0], [2, 1, 2]])  # (4, 3), values < 4, for dim 1 of (4, 5)


class Indexed(torch.nn.Module):
    """``fn(self, x)`` with the index tensors held as buffers (constants of the exported program)."""

    def __init__(self, fn, **buffers):
        super().__init__()
        self.fn = fn
        for name, value in buffers.items():
            self.register_buffer(name, value)

    def forward(self, x):
        return self.fn(self, x)


def _c(fn, shape, op, id, **buffers):
    return pytest.param(Indexed(fn, **buffers), shape, op, id=id)


def _put_apart(s, x):
    y = x.clone()
    y[s.i, :, s.j] = x[:3, :, 0] * 0 + 2  # index tensors apart: the values are laid out (3, 2)
    return y


def _put_mask(s, x):
    y = x.clone()
    y[x > 0.5] = -1.0
    return y


def _put_mask_add(s, x):
    return torch.ops.aten.index_put(x, [None, s.m], torch.tensor(2.0), True)


CASES = [
    _c(lambda s, x: x.index_add(0, s.i, torch.ones(3, 5)), (4, 5), "scatter", "index-add", i=ROWS),
    _c(lambda s, x: x.index_add(1, s.i, x[:, :4] * 2, alpha=0.5), (3, 5), "scatter", "index-add-dups-alpha", i=DUPS),
    _c(lambda s, x: x.index_copy(1, s.i, -x[:, :3]), (4, 5), "scatter", "index-copy", i=ROWS),
    _c(lambda s, x: x.index_fill(1, s.i, 7.0), (2, 4, 5), "scatter", "index-fill", i=ROWS),
    _c(lambda s, x: x.index_put((s.i,), torch.tensor(3.0), accumulate=True), (4, 5), "scatter", "index-put-acc",
       i=DUPS),
    _c(_put_apart, (4, 2, 5), "scatter", "index-put-none-slice", i=ROWS, j=torch.tensor([-1, 0, 2])),
    _c(_put_mask, (4, 5), "where", "index-put-bool-mask-scalar"),
    _c(_put_mask_add, (3, 4), "where", "index-put-bool-mask-accumulate", m=torch.tensor([True, False, True, True])),
    _c(lambda s, x: x.scatter(1, s.g, -x[:, :3]), (4, 5), "scatter", "scatter-src", g=torch.tensor(
        [[0, 2, 4], [1, 0, 3], [4, 3, 0], [2, 1, 0]])),
    _c(lambda s, x: x.scatter(0, s.g.T, 9.0), (4, 5), "scatter", "scatter-value", g=GRID),
    _c(lambda s, x: x.scatter(1, s.g, x[:, 1:] * 3, reduce="add"), (4, 5), "scatter", "scatter-reduce-add", g=GRID),
    _c(lambda s, x: x.scatter(1, s.g, 2.0, reduce="multiply"), (4, 5), "scatter_reduce", "scatter-value-multiply",
       g=GRID),
    _c(lambda s, x: x.scatter_add(1, s.g, x[:, :3]), (4, 5), "scatter", "scatter-add", g=GRID),
    _c(lambda s, x: x.scatter_add(-1, s.g, torch.ones(4, 4)), (4, 5), "scatter", "scatter-add-larger-src",
       g=GRID),
    _c(lambda s, x: x.scatter_reduce(1, s.g, x[:, 2:] * 2, "sum", include_self=False), (4, 5), "scatter",
       "scatter-reduce-sum-no-self", g=GRID),
    _c(lambda s, x: x.scatter_reduce(1, s.g, x[:, 2:] + 1, "prod"), (4, 5), "scatter_reduce",
       "scatter-reduce-prod", g=GRID),
    _c(lambda s, x: x.scatter_reduce(1, s.g, x[:, :3] * 4, "amax"), (4, 5), "scatter_reduce",
       "scatter-reduce-amax", g=GRID),
    _c(lambda s, x: x.scatter_reduce(1, s.g, x[:, :3] * 4, "amin", include_self=False), (4, 5), "scatter_reduce",
       "scatter-reduce-amin-no-self", g=GRID),
    _c(lambda s, x: x.scatter_reduce(1, s.g, x[:, 1:] * 3, "mean"), (4, 5), "div", "scatter-reduce-mean", g=GRID),
    _c(lambda s, x: x.scatter_reduce(0, s.g.T, x[:3, :4], "mean", include_self=False), (4, 5), "div",
       "scatter-reduce-mean-no-self", g=GRID),
    _c(lambda s, x: x.index_reduce(0, s.i, x[:4] * 2, "prod"), (4, 5), "scatter_reduce", "index-reduce-prod",
       i=DUPS),
    _c(lambda s, x: x.index_reduce(1, s.i, -x[:, :4], "amax", include_self=False), (3, 5), "scatter_reduce",
       "index-reduce-amax-no-self", i=DUPS),
    _c(lambda s, x: x.index_reduce(2, s.i, x[:, :, :4], "amin"), (2, 4, 5), "scatter_reduce", "index-reduce-amin",
       i=DUPS),
    _c(lambda s, x: x.index_reduce(0, s.i, x[:4] * 3, "mean", include_self=False), (4, 5), "div",
       "index-reduce-mean", i=DUPS),
    _c(lambda s, x: x.put(s.i, torch.tensor([1.0, 2.0, 3.0])), (4, 5), "scatter", "put", i=torch.tensor([19, 0, -2])),
    _c(lambda s, x: x.put(s.i, x[0, :4], accumulate=True), (4, 5), "scatter", "put-accumulate", i=DUPS),
    _c(lambda s, x: x.masked_scatter(x > 0, -torch.arange(20.0).view(4, 5)), (4, 5), "cumsum", "masked-scatter"),
    _c(lambda s, x: x.masked_scatter(s.m, x.flip(0) * 10), (3, 4), "cumsum", "masked-scatter-broadcast-mask",
       m=torch.tensor([True, False, True, True])),
    _c(lambda s, x: torch.gather(x, 1, s.g), (4, 5), "gather", "gather", g=GRID),
    _c(lambda s, x: torch.take_along_dim(x, s.g, dim=1), (4, 5), "gather", "take-along-dim", g=GRID),
    _c(lambda s, x: torch.take(x, s.g), (4, 5), "index_select", "take", g=GRID * 5 + 1),
    _c(lambda s, x: torch.diagonal(x), (4, 5), "index_select", "diagonal"),
    _c(lambda s, x: torch.diagonal(x, 2, 2, 0), (4, 3, 5), "index_select", "diagonal-offset-dims"),
    _c(lambda s, x: torch.diagonal(x, -1, -1, -2), (2, 4, 5), "index_select", "diagonal-negative-offset"),
    _c(lambda s, x: torch.diag(x), (4, 5), "index_select", "diag"),
    _c(lambda s, x: torch.diag_embed(x, 1), (2, 3), "where", "diag-embed"),
    _c(lambda s, x: torch.diagonal_scatter(x, x[:, 0] * 10), (4, 5), "where", "diagonal-scatter"),
    _c(lambda s, x: torch.diagonal_scatter(x, x[:, 0, :2] + 5, 2, 2, 1), (2, 4, 5), "where",
       "diagonal-scatter-offset"),
    _c(lambda s, x: torch.select_scatter(x, x[:, 0] * 2, 1, 3), (4, 5), "where", "select-scatter"),
    _c(lambda s, x: torch.slice_scatter(x, x[:, :2] * 3, 1, 1, 5, 2), (4, 5), "where", "slice-scatter-step"),
    _c(lambda s, x: torch.slice_scatter(x, x[1:] * 3, 0, -3), (4, 5), "where", "slice-scatter-negative-start"),
    _c(lambda s, x: torch.as_strided(x, (3, 3), (1, 5), 1), (4, 5), "index_select", "as-strided"),
    _c(lambda s, x: torch.as_strided_scatter(x, x[:3, :2] * 5, (3, 2), (5, 2), 1), (4, 5), "scatter",
       "as-strided-scatter"),
    _c(lambda s, x: x[0, 0].scatter(0, s.i, x[1, 1] * 3), (2, 3), "scatter", "scatter-0d", i=torch.tensor(0)),
    _c(lambda s, x: torch.take(x, s.i), (4, 5), "index_select", "take-negative", i=torch.tensor([[-1, 3], [0, -20]])),
    _c(lambda s, x: x.unfold(1, 2, 1), (4, 5), "index_select", "unfold"),
    _c(lambda s, x: x.unfold(0, 3, 2), (7, 2), "index_select", "unfold-step"),
    _c(lambda s, x: F.embedding_bag(s.i, x, s.o, mode="sum"), (6, 3), "scatter", "embedding-bag-sum",
       i=torch.tensor([1, 5, 0, 1, 4]), o=torch.tensor([0, 2, 2])),
    _c(lambda s, x: F.embedding_bag(s.i, x, s.o, mode="mean"), (6, 3), "div", "embedding-bag-mean",
       i=torch.tensor([1, 5, 0, 1, 4]), o=torch.tensor([0, 2, 2])),
    _c(lambda s, x: F.embedding_bag(s.i, x, s.o, mode="max"), (6, 3), "scatter_reduce", "embedding-bag-max",
       i=torch.tensor([1, 5, 0, 1, 4]), o=torch.tensor([0, 2, 2])),
    _c(lambda s, x: F.embedding_bag(s.i, x, mode="sum", per_sample_weights=s.w), (6, 3), "mul",
       "embedding-bag-2d-weights", i=torch.tensor([[1, 5], [0, 1]]), w=torch.tensor([[0.5, 2.0], [1.0, -1.0]])),
    _c(lambda s, x: F.embedding_bag(s.i, x, s.o, mode="mean", padding_idx=1), (6, 3), "div",
       "embedding-bag-padding-idx", i=torch.tensor([1, 5, 0, 1, 4]), o=torch.tensor([0, 2, 3])),
]


@pytest.mark.parametrize("module, shape, op", CASES)
def test_scatter_op_matches_torch(target, module, shape, op):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_torch_op(module, x, expect_ops=[op], target=target, atol=1e-5, rtol=1e-5)


def test_data_movement_is_exact(target):
    module = Indexed(lambda s, x: torch.diagonal_scatter(x.scatter(1, s.g, -x[:, :3]), x[:, 1]), g=torch.tensor(
        [[0, 2, 4], [1, 0, 3], [4, 3, 0], [2, 1, 0]]))
    check_torch_op(module, np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32), target=target,
                   **EXACT)


def test_scatter_with_runtime_indices(target):
    """Indices computed in the graph (not folded): the emit rules' code paths for run-time rows."""
    module = Indexed(lambda s, x: x.scatter_reduce(1, (s.g + (x[:, :3] > 9).long()), x[:, :3], "amax"), g=GRID)
    check_torch_op(module, np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32), target=target,
                   expect_ops=["scatter_reduce"])


@pytest.mark.parametrize("reduce", sorted(REDUCTIONS))
def test_scatter_reduce_reference_combines_duplicates(reduce):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    rows = np.array([[1], [1], [0]])
    updates = np.array([[5.0, -1.0], [2.0, 6.0], [0.5, 0.5]], np.float32)
    got = SCATTER_REDUCE.reference_rule(x, rows, updates, reduce=reduce)
    ufunc = REDUCTIONS[reduce][0]
    assert np.array_equal(got[1], ufunc(ufunc(x[1], updates[0]), updates[1]))
    assert np.array_equal(got[0], ufunc(x[0], updates[2]))


def test_identity_values():
    assert identity_of("amax", "float32") == -np.inf and identity_of("amin", "int32") == np.iinfo(np.int32).max
    assert identity_of("prod", "float32") == 1 and identity_of("mean", "float32") == 0


@pytest.mark.parametrize("fn, match", [
    (lambda x: torch.nonzero(x), "nonzero_static"),
    (lambda x: torch.masked_select(x, x > 0), r"torch\.where\(mask, x, 0\)"),
    (lambda x: torch.unique(x), "bincount"),
    (lambda x: torch.argwhere(x), "nonzero_static"),
    (lambda x: x[x > 0], r"torch\.where\(mask, x, 0\)"),
])
def test_data_dependent_shapes_are_refused_with_the_static_form(fn, match):
    from tests.support.harness import Wrap
    ep = export_module(Wrap(fn), [torch.randn(4, 5)])
    with pytest.raises(UnsupportedOps, match=match):
        lower_exported(ep)
    with pytest.raises(NotTpuLegal, match=match) as info:
        lower_exported(ep, strict_tpu=True)
    assert info.value.exit_code == 4


def test_index_put_with_a_mask_and_several_values_is_refused():
    def fn(x):
        y = x.clone()
        y[x > 0] = x[x > 0] * 2
        return y
    with pytest.raises(UnsupportedOps, match="data-dependent"):
        lower_torch(fn, torch.randn(4, 5))


def test_aten_names_exist_in_torch():
    for name in SCATTER_REDUCE.import_names["torch"]:
        assert hasattr(torch.ops.aten, name.removeprefix("aten::")), name


def _mixed(s, x):
    y = x.scatter_reduce(1, s.g, x[:, :3] * 4, "amax").scatter_reduce(1, s.g, x[:, 1:4], "prod", include_self=False)
    y = y.index_reduce(0, s.i, y[:4] * 2, "amin").scatter_reduce(1, s.g, x[:, :3], "mean")
    y = y.masked_scatter(y > 0, x * 3) + torch.diagonal_scatter(x, x[:, 0])
    return y.unfold(1, 2, 1).diagonal()


def test_converted_scatters_verify_and_lower_for_tpu(target, tmp_path):
    """The whole pipeline with ``strict_tpu``: verified against torch, and lowered by jax.export for the TPU
    platform (static-shape gathers and scatters only)."""
    result = api.convert(Indexed(_mixed, g=GRID, i=DUPS), to=target, out=tmp_path / "out",
                         example_inputs=(torch.randn(4, 5),), strict_tpu=True)
    assert result.report["verification"]["passed"]
    proof = result.report["tpu"]
    assert proof["verdict"] == "ok" and proof["ops"]["scatter"] >= 5 and proof["ops"]["gather"] >= 3, proof
