"""Whole models with recurrent layers through ``portx.convert`` (verification, gradients, free sequence length,
layout and TPU proof as a user gets them), and the trainable parameter counts of both directions."""
import keras
import numpy as np
import pytest
import torch
from keras import layers as L
from torch import nn

import portx
from tests.support.keras_harness import randomize_weights


class ConvLSTM(nn.Module):
    """conv1d (channels-first) -> bidirectional LSTM over (B, T, C) -> linear per step."""

    def __init__(self, hidden=12, layers=1):
        super().__init__()
        self.conv = nn.Conv1d(8, 16, 3, padding=1)
        self.lstm = nn.LSTM(16, hidden, num_layers=layers, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 5)

    def forward(self, x):
        out, _ = self.lstm(torch.relu(self.conv(x)).transpose(1, 2))
        return self.head(out)


def _text_classifier():
    """Keras Embedding -> Bidirectional LSTM -> GRU -> Dense, on token ids of any length."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32", name="ids")
    y = L.Bidirectional(L.LSTM(12, return_sequences=True))(L.Embedding(50, 16)(ids))
    model = keras.Model(ids, L.Dense(3, activation="softmax")(L.GRU(10, dropout=0.1)(y)))
    randomize_weights(model)
    return model


def _checked(result, seq_symbol):
    report = result.report
    assert report["verification"]["passed"], report["verification"]
    assert report["gradients"]["passed"], report["gradients"]
    seq = next(row for row in report["dynamic"] if row["symbol"] == seq_symbol)
    assert seq["free"] and len(seq["verified"]) >= 2 and all(v["passed"] for v in seq["verified"]), seq
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    return report["training"]["parameters"]


def test_torch_conv_lstm_converts_with_the_sequence_free(target, tmp_path):
    torch.manual_seed(0)
    model, x = ConvLSTM().eval(), torch.randn(2, 8, 7)
    # the batch is pinned only to keep this test quick: each free size verified is one more XLA compile
    result = portx.convert(model, example_inputs=(x,), to=target, out=tmp_path / "out", dynamic=["x:2"],
                           static_batch=2)
    counts = _checked(result, "x_2")
    # equal counts: Keras's TorchLSTMCell keeps torch's b_hh as a weight of its own
    assert counts["source"]["trainable"] == sum(p.numel() for p in model.parameters()) == 3405
    assert counts["converted"]["trainable"] == 3405
    assert result.report["training"]["trainable_match"] and not result.report["training"]["problem"]
    assert [n.op.name for n in result.graph.nodes].count("lstm") == 1


# Keras -> torch runs in CI; Keras -> Keras is a round trip of the same layers, in the slow sweep.
@pytest.mark.parametrize("to", ["torch-xla", pytest.param("keras-jax", marks=pytest.mark.slow)])
def test_keras_text_classifier_converts_with_the_sequence_free(to, tmp_path):
    model = _text_classifier()
    path = tmp_path / "clf.keras"
    model.save(path)
    result = portx.convert(path, to=to, out=tmp_path / "out", inputs=("ids:2x7",), static_batch=2)
    counts = _checked(result, "ids_1")
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    # equal counts: torch's nn.LSTM freezes the zero b_hh that stands for Keras's one bias
    assert counts["source"]["trainable"] == counts["converted"]["trainable"] == trainable == 4697
    assert counts["converted"]["non_trainable"] == (96 if to == "torch-xla" else 0)


def benchmark_cases():
    """(name, build() -> (model, example inputs), source framework) for benchmarks/transformers.py."""
    def conv_lstm():
        torch.manual_seed(0)
        return ConvLSTM().eval(), (torch.randn(2, 8, 7),)

    def text_classifier():
        return _text_classifier(), (np.random.default_rng(0).integers(0, 50, (2, 7)).astype("int32"),)

    return [("torch-conv-lstm", conv_lstm, "torch"), ("keras-text-classifier", text_classifier, "keras")]
