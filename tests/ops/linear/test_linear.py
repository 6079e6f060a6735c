"""linear and matmul: torch -> IR -> NumPy reference and both targets' emitted models, against torch."""
import tempfile

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from portx.targets.keras_jax.emitter import emit_keras
from portx.frontends.torch import export_module, lower_exported
from tests.support.harness import Wrap, check_torch_op


class AddMM(nn.Module):
    """Exports to aten::addmm with a folded W.T, the way older linear decompositions look."""

    def __init__(self, n_in, n_out, beta=1, alpha=1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in))
        self.bias = nn.Parameter(torch.randn(n_out))
        self.beta, self.alpha = beta, alpha

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight.t(), beta=self.beta, alpha=self.alpha)


def _fn(fn):
    return lambda: fn


# (module factory, input shapes, IR ops expected); inputs are seeded normal floats.
CASES = [
    pytest.param(lambda: nn.Linear(4, 3), [(2, 4)], ["linear"], id="linear-rank2"),
    pytest.param(lambda: nn.Linear(4, 3, bias=False), [(2, 4)], ["linear"], id="linear-rank2-nobias"),
    pytest.param(lambda: nn.Linear(4, 3), [(2, 5, 4)], ["linear"], id="linear-rank3"),
    pytest.param(lambda: nn.Linear(4, 3, bias=False), [(2, 3, 5, 4)], ["linear"], id="linear-rank4-nobias"),
    pytest.param(lambda: nn.Linear(4, 1), [(4,)], ["linear"], id="linear-rank1"),
    pytest.param(_fn(lambda x, w: F.linear(x, w * 2.0)), [(2, 4), (3, 4)], ["linear"], id="linear-computed-weight"),
    pytest.param(_fn(lambda x, w, b: F.linear(x, w, b)), [(2, 5, 4), (3, 4), (3,)], ["linear"],
                 id="linear-input-weight-bias"),
    pytest.param(lambda: AddMM(4, 3), [(2, 4)], ["matmul", "add"], id="addmm"),
    pytest.param(lambda: AddMM(4, 3, beta=0.5, alpha=2.0), [(2, 4)], ["matmul", "add", "mul"],
                 id="addmm-alpha-beta"),
    pytest.param(lambda: AddMM(4, 3, beta=0), [(2, 4)], ["matmul"], id="addmm-beta0"),
    pytest.param(_fn(lambda b, x, w: torch.addmm(b, x, w)), [(2, 3), (2, 4), (4, 3)], ["matmul", "add"],
                 id="addmm-inputs"),
    pytest.param(_fn(lambda a, b: a @ b), [(3, 4), (4, 5)], ["matmul"], id="matmul-2d"),
    pytest.param(_fn(lambda a, b: a @ b), [(2, 3, 4), (4, 5)], ["matmul"], id="matmul-broadcast"),
    pytest.param(_fn(lambda a, b: a @ b), [(2, 1, 3, 4), (3, 4, 2)], ["matmul"], id="matmul-batch-broadcast"),
    pytest.param(_fn(lambda a, b: a @ b), [(4,), (2, 4, 5)], ["matmul"], id="matmul-vector-left"),
    pytest.param(_fn(lambda a, b: a @ b), [(2, 3, 4), (4,)], ["matmul"], id="matmul-vector-right"),
    pytest.param(_fn(lambda a, b: torch.bmm(a, b)), [(2, 3, 4), (2, 4, 5)], ["matmul"], id="bmm"),
    pytest.param(_fn(lambda a, b: torch.mm(a, b)), [(3, 4), (4, 2)], ["matmul"], id="mm"),
    pytest.param(_fn(lambda a: torch.mm(a, torch.ones(4, 2))), [(3, 4)], ["matmul"], id="mm-constant"),
]


@pytest.mark.parametrize("make, shapes, ops", CASES)
def test_linear_case(target, make, shapes, ops):
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    check_torch_op(make(), *inputs, expect_ops=ops, atol=1e-5, rtol=1e-4, target=target)


def _emitted_source(module, inputs) -> str:
    graph = lower_exported(export_module(module, inputs))
    with tempfile.TemporaryDirectory() as tmp:
        files = emit_keras(graph, tmp)
        return files["code"].read_text()


def test_stored_weight_is_a_dense_layer():
    torch.manual_seed(0)
    assert "layers.Dense(3, name=" in _emitted_source(nn.Linear(4, 3), [torch.randn(2, 4)])


def test_computed_weight_is_a_matmul():
    module = Wrap(lambda x, w: F.linear(x, w * 2.0))
    source = _emitted_source(module, [torch.randn(2, 4), torch.randn(3, 4)])
    assert "ops.matmul(" in source and "Dense" not in source


@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), st.integers(1, 4), st.integers(1, 4), st.booleans())
def test_linear_property(target, batch, n_in, n_out, bias):
    torch.manual_seed(0)
    check_torch_op(nn.Linear(n_in, n_out, bias=bias), torch.randn(*batch, n_in), expect_ops=["linear"], target=target)


@given(st.lists(st.sampled_from([1, 2]), min_size=0, max_size=2), st.lists(st.sampled_from([1, 2]), min_size=0,
       max_size=2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
def test_matmul_property(target, batch_a, batch_b, m, k, n):
    torch.manual_seed(0)
    a, b = torch.randn(*batch_a, m, k), torch.randn(*batch_b, k, n)
    try:
        torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except RuntimeError:
        return  # batch dims that do not broadcast are torch's error, not a conversion case
    check_torch_op(lambda x, y: x @ y, a, b, expect_ops=["matmul"], target=target)
