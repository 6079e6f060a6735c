"""embedding: torch -> IR -> NumPy reference and both targets' emitted models, including tied GPT weights."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from portx.frontends.torch import export_module, lower_exported
from portx.verification.compare import make_inputs
from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


class TiedLM(nn.Module):
    """GPT-style head: the output projection reuses the embedding table (lm_head.weight = wte.weight)."""

    def __init__(self, vocab=16, dim=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.ln = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        return self.lm_head(self.ln(self.wte(ids)))


class TokenAndPosition(nn.Module):
    """Token plus learned position embeddings, positions folded to a constant index table."""

    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(20, 6), nn.Embedding(8, 6)

    def forward(self, ids):
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))


def _ids(high, *shape, dtype=torch.int64):
    return lambda: torch.randint(0, high, shape, dtype=dtype)


# (module or function factory, inputs: shapes of normal floats or tensor factories, IR ops expected)
CASES = [
    pytest.param(lambda: nn.Embedding(10, 4), [_ids(10, 2, 5)], ["embedding"], id="ids-2d"),
    pytest.param(lambda: nn.Embedding(10, 4), [_ids(10, 7)], ["embedding"], id="ids-1d"),
    pytest.param(lambda: nn.Embedding(10, 3), [_ids(10, 2, 3, 4)], ["embedding"], id="ids-3d"),
    pytest.param(lambda: nn.Embedding(10, 4, padding_idx=0), [_ids(3, 2, 6)], ["embedding"], id="padding-idx"),
    pytest.param(lambda: nn.Embedding(50, 4), [_ids(50, 2, 5, dtype=torch.int32)], ["embedding"], id="int32-ids"),
    pytest.param(lambda: lambda ids, w: F.embedding(ids, w * 2.0), [_ids(6, 2, 3), (6, 5)], ["embedding"],
                 id="computed-table"),
    pytest.param(TiedLM, [_ids(16, 2, 5)], ["embedding", "linear"], id="tied-lm-head"),
    pytest.param(TokenAndPosition, [_ids(20, 2, 5)], ["embedding"], id="token-and-position"),
]


def _make(spec):
    return spec() if callable(spec) else torch.randn(spec)


@pytest.mark.parametrize("make, specs, ops", CASES)
def test_embedding_case(target, make, specs, ops):
    torch.manual_seed(0)
    check_torch_op(make(), *[_make(s) for s in specs], expect_ops=ops, target=target, **TOL)


def test_verify_draws_indices_inside_the_table():
    graph = lower_exported(export_module(nn.Embedding(3, 4), [torch.zeros(2, 50, dtype=torch.long)]))
    ids = make_inputs(graph, seed=0)[0]
    assert ids.min() >= 0 and ids.max() == 2


def test_tied_weights_are_one_parameter_in_the_ir():
    torch.manual_seed(0)
    graph = lower_exported(export_module(TiedLM(), [torch.zeros(1, 4, dtype=torch.long)]))
    emb, lin = (n for n in graph.nodes if n.op.name in ("embedding", "linear"))
    assert emb.inputs[0] is lin.inputs[1]


@given(st.integers(1, 12), st.integers(1, 5), st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_embedding_property(target, rows, dim, shape):
    torch.manual_seed(0)
    ids = torch.randint(0, rows, shape)
    graph = check_torch_op(nn.Embedding(rows, dim), ids, target=target, **TOL)
    assert [n.op.name for n in graph.nodes] == ["embedding"]
    assert np.issubdtype(graph.outputs[0].type.dtype, np.floating)
