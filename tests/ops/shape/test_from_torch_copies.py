"""Copies and static-size forms (ops/shape/from_torch_copies.py): the ``*_copy`` views, ``copy``, ``resize``,
``new_empty_strided``, ``combinations``, ``nonzero_static`` and ``tensor_split`` at constant split points, each
against torch on both targets; data-dependent split points are still refused."""
import numpy as np
import pytest
import torch

from portx.errors import NotTpuLegal, UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from tests.support.harness import Wrap, check_torch_op, lower_torch

EXACT = {"atol": 0.0, "rtol": 0.0}
aten = torch.ops.aten
SPARSE = np.array([[0.0, 1.5, 0.0, -2.0], [0.0, 0.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0]], dtype=np.float32)


class _Split(torch.nn.Module):
    """``tensor_split`` at split points stored in a buffer (constants of the program)."""

    def __init__(self, points, dim):
        super().__init__()
        self.register_buffer("points", torch.tensor(points))
        self.dim = dim

    def forward(self, x):
        return torch.tensor_split(x, self.points, dim=self.dim)


def _inputs(specs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else np.asarray(s) for s in specs]


CASES = [
    pytest.param(lambda x: aten.view_copy(x, [6, 4]), [(2, 3, 4)], "reshape", id="view-copy"),
    pytest.param(lambda x: aten.view_copy.dtype(x, torch.int32), [(2, 3)], "bitcast", id="view-copy-dtype"),
    pytest.param(lambda x: aten.unsqueeze_copy(x, 1), [(2, 3)], "reshape", id="unsqueeze-copy"),
    pytest.param(lambda x: aten.permute_copy(x, [2, 0, 1]), [(2, 3, 4)], "permute", id="permute-copy"),
    pytest.param(lambda x: aten.transpose_copy(x, -1, 0), [(2, 3, 4)], "permute", id="transpose-copy"),
    pytest.param(lambda x: aten.t_copy(x), [(3, 4)], "permute", id="t-copy"),
    pytest.param(lambda x: aten.expand_copy(x, [2, 3, 4]), [(3, 1)], "expand", id="expand-copy"),
    pytest.param(lambda x: aten.unbind_copy(x, 1), [(2, 3, 4)], "split", id="unbind-copy"),
    pytest.param(lambda x: aten.narrow_copy(x, 1, -3, 2), [(2, 4)], "slice", id="narrow-copy-negative-start"),
    pytest.param(lambda x: aten.slice_copy(x, 1, 1, 100, 2), [(2, 5)], "slice", id="slice-copy-step"),
    pytest.param(lambda x, y: aten.copy(x, y), [(2, 3), (3,)], "expand", id="copy-broadcasts-src"),
    pytest.param(lambda x, i: aten.copy(x, i), [(2, 3), np.arange(6).reshape(2, 3)], "cast", id="copy-casts-src"),
    pytest.param(lambda x: aten.resize(x.clone(), [3, 2]), [(2, 3)], "reshape", id="resize-same-count"),
    pytest.param(lambda x: aten.resize(x.clone(), [2, 2]), [(2, 3)], "slice", id="resize-smaller"),
    # torch.export (2.13) traces combinations only for r=1: r >= 2 leaves unbacked symbols it cannot place
    pytest.param(lambda x: torch.combinations(x, 1), [(4,)], "index_select", id="combinations"),
    pytest.param(lambda x: torch.combinations(x, 1, with_replacement=True) * 2, [(3,)], "index_select",
                 id="combinations-with-replacement"),
    pytest.param(lambda x: torch.nonzero_static(x, size=2), [SPARSE], "sort", id="nonzero-static-fewer"),
    pytest.param(lambda x: torch.nonzero_static(x, size=6, fill_value=-7), [SPARSE], "sort",
                 id="nonzero-static-padded"),
    pytest.param(lambda x: torch.nonzero_static(x > 0, size=3), [(2, 3, 4)], "sort", id="nonzero-static-bool-3d"),
    pytest.param(_Split([1, 3], 1), [(2, 5)], "slice", id="tensor-split-buffer-points"),
    pytest.param(_Split([-2, 2, 9], 0), [(4, 3)], "slice", id="tensor-split-negative-and-past-end"),
]


@pytest.mark.parametrize("fn, specs, op", CASES)
def test_copy_and_static_size_ops_match_torch(target, fn, specs, op):
    check_torch_op(fn, *_inputs(specs), expect_ops=[op], target=target, **EXACT)


def test_resize_larger_pads_with_zeros(target):
    """torch leaves the new elements uninitialized; the old ones are kept in order, which is all that is compared."""
    graph = check_torch_op(lambda x: aten.resize(x.clone(), [2, 3])[:1], *_inputs([(2, 2)]), target=target,
                           expect_ops=["concat"], **EXACT)
    assert graph.outputs[0].type.shape == (1, 3)


def test_new_empty_strided_is_zeros(target):
    graph, arrays, expected = lower_torch(lambda x: x.new_empty_strided((2, 3), (3, 1)) + x, *_inputs([(2, 3)]))
    assert graph.outputs[0].type.shape == (2, 3)
    check_torch_op(lambda x: x.new_empty_strided((2, 3), (3, 1)) * 0 + x, *arrays, target=target, **EXACT)


@pytest.mark.parametrize("fn, specs", [
    pytest.param(lambda x, i: torch.tensor_split(x, i), [(4, 3), np.array([1, 2])], id="tensor-split-input-points"),
    pytest.param(lambda x: torch.nonzero(x), [(2, 3)], id="nonzero"),
])
def test_data_dependent_sizes_are_still_refused(fn, specs):
    with pytest.raises((UnsupportedOps, NotTpuLegal), match="data-dependent"):
        lower_torch(fn, *_inputs(specs))


def test_data_dependent_split_points_are_not_tpu_legal():
    """With strict TPU checks (the CLI's default) the refusal is NotTpuLegal: exit 4, naming the op."""
    module = Wrap(lambda x, i: torch.tensor_split(x, i))
    program = export_module(module, [torch.randn(4, 3), torch.tensor([1, 2])])
    with pytest.raises(NotTpuLegal, match="aten::tensor_split") as caught:
        lower_exported(program, strict_tpu=True)
    assert caught.value.exit_code == 4
