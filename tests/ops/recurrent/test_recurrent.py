"""nn.LSTM, nn.GRU and nn.RNN (one IR node per call, never unrolled) against torch, on both targets."""
import numpy as np
import pytest
import torch
from torch import nn

from portx.ir import TensorType
from portx.ops.recurrent import GRU, LSTM, RNN
from portx.errors import UnsupportedOps
from tests.support.harness import check_torch_op, lower_torch

TOL = {"atol": 1e-5, "rtol": 1e-4}


class Recurrent(nn.Module):
    """Calls ``rnn`` on x (and the initial states given as inputs); returns the output and every state."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *states):
        if isinstance(self.rnn, nn.LSTM):
            out, (h, c) = self.rnn(x, tuple(states) if states else None)
            return out, h, c
        out, h = self.rnn(x, *states)
        return out, h


class LastState(nn.Module):
    """A sequence classifier: the last layer's final state (``h_n[-1]``) into a linear head; ``output`` unread."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn, self.head = rnn, nn.Linear(rnn.hidden_size, 3)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.head((h[0] if isinstance(h, tuple) else h)[-1])


B, T, C, H = 2, 5, 4, 6
BATCH_FIRST, SEQ_FIRST = (B, T, C), (T, B, C)

# (module factory, input shapes: x then the initial states, the IR op expected)
CASES = [
    pytest.param(lambda: nn.LSTM(C, H, batch_first=True), [BATCH_FIRST], "lstm", id="lstm"),
    pytest.param(lambda: nn.LSTM(C, H, num_layers=2, bidirectional=True), [SEQ_FIRST], "lstm",
                 id="lstm-2-layers-bidirectional-seq-first"),
    pytest.param(lambda: nn.LSTM(C, H, batch_first=True, bias=False), [BATCH_FIRST, (1, B, H), (1, B, H)], "lstm",
                 id="lstm-no-bias-initial-states"),
    pytest.param(lambda: nn.LSTM(C, H, num_layers=2, batch_first=True, bidirectional=True),
                 [BATCH_FIRST, (4, B, H), (4, B, H)], "lstm", id="lstm-bidirectional-initial-states"),
    pytest.param(lambda: nn.GRU(C, H, batch_first=True), [BATCH_FIRST, (1, B, H)], "gru", id="gru-h0"),
    pytest.param(lambda: nn.GRU(C, H, num_layers=2, batch_first=True, dropout=0.3), [BATCH_FIRST], "gru",
                 id="gru-2-layers-dropout"),
    pytest.param(lambda: nn.GRU(C, H, num_layers=2, bidirectional=True, bias=False), [SEQ_FIRST], "gru",
                 id="gru-2-layers-bidirectional-no-bias"),
    pytest.param(lambda: nn.RNN(C, H, batch_first=True), [BATCH_FIRST], "rnn", id="rnn-tanh"),
    pytest.param(lambda: nn.LSTM(C, H, num_layers=2, batch_first=True), [BATCH_FIRST], "lstm",
                 id="lstm-classifier-last-state"),
    pytest.param(lambda: nn.RNN(C, H, nonlinearity="relu", num_layers=2, bidirectional=True), [SEQ_FIRST, (4, B, H)],
                 "rnn", id="rnn-relu-2-layers-bidirectional-h0"),
]


@pytest.mark.parametrize("factory, shapes, op", CASES)
def test_recurrent_case(target, factory, shapes, op, request):
    torch.manual_seed(0)
    module = factory()
    module = LastState(module) if "classifier" in request.node.callspec.id else Recurrent(module)
    graph = check_torch_op(module, *[torch.randn(s) for s in shapes], target=target, expect_ops=[op], **TOL)
    assert sum(n.op.family == "recurrent" for n in graph.nodes) == 1  # one node per call, never unrolled


def test_shape_rule_matches_the_reference():
    rng = np.random.default_rng(0)
    attrs = {"hidden_size": 3, "num_layers": 1, "bidirectional": True, "batch_first": True, "has_biases": False,
             "dropout": 0.0}
    weights = [rng.standard_normal(s).astype(np.float32) for s in [(9, 2), (9, 3)] * 2]
    x = rng.standard_normal((4, 5, 2)).astype(np.float32)
    types = GRU.infer_rule(TensorType(x.shape, "float32"), None, None,
                           *[TensorType(w.shape, "float32") for w in weights], **attrs)
    arrays = GRU.reference_rule(x, None, None, *weights, **attrs)
    assert [t.shape for t in types] == [a.shape for a in arrays] == [(4, 5, 6), (2, 4, 3)]


def test_shape_rule_names_a_weight_that_does_not_fit():
    attrs = {"hidden_size": 3, "num_layers": 1, "bidirectional": False, "batch_first": True, "has_biases": False,
             "dropout": 0.0}
    with pytest.raises(ValueError, match="cell 0 weights"):
        LSTM.infer_rule(TensorType((1, 2, 5), "float32"), None, None, None, TensorType((12, 4), "float32"),
                        TensorType((12, 3), "float32"), **attrs)
    assert RNN.attr_defaults["nonlinearity"] == "tanh"


@pytest.mark.parametrize("module, message", [
    (nn.LSTM(C, H, proj_size=3, batch_first=True), "aten::lstm at rnn.*proj_size > 0 is not supported"),
])
def test_torch_refusals_name_the_module(module, message):
    with pytest.raises(UnsupportedOps, match=message):
        lower_torch(Recurrent(module), torch.randn(BATCH_FIRST))
