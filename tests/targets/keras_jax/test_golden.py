"""Golden files: the emitted Keras source of small models, reviewed as diffs.

Refresh after an intended change with: ./scripts/test tests/targets/keras_jax/test_golden.py --update-golden
"""
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import portx
from tests.support.paths import SAMPLE

GOLDEN = Path(__file__).resolve().parent / "golden"


class Head(nn.Module):
    """Small but varied: layer norm, attention, GELU, a residual, a softmax."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return torch.softmax(self.mlp(x), dim=-1)


def _cases():
    torch.manual_seed(0)
    return {"tiny_cnn": (str(SAMPLE), {}), "attention_head": (Head().eval(), {"example_inputs": (torch.randn(1, 4, 8),)})}


@pytest.mark.parametrize("name", ["tiny_cnn", "attention_head"])
def test_emitted_source_matches_golden(name, tmp_path, request):
    source, kwargs = _cases()[name]
    result = portx.convert(source, out=tmp_path / "out", **kwargs)
    code = result.files["code"].read_text()
    golden = GOLDEN / f"{name}.py.txt"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(code)
    assert golden.exists(), f"no golden file {golden}; run with --update-golden"
    assert code == golden.read_text(), f"emitted source changed; review and refresh {golden} with --update-golden"


@pytest.mark.parametrize("name", ["tiny_cnn", "attention_head"])
def test_golden_reads_like_keras_applications(name):
    code = (GOLDEN / f"{name}.py.txt").read_text()
    assert max(len(line) for line in code.splitlines()) <= 100
    for leaked in ("MATMUL_PRECISION", "_zeropadding", "_layer'", "_t =", "dtype='float32'", "use_bias=True",
                   "data_format='channels_last'", "ops.relu(", "ops.add("):
        assert leaked not in code, leaked


def test_emitted_model_trains_saves_and_reloads_with_plain_keras(tmp_path):
    import keras

    source, kwargs = _cases()["tiny_cnn"]
    model = portx.convert(source, out=tmp_path / "out", **kwargs).model
    assert type(model.get_layer("stem_2")).__name__ == "ReLU" and type(model.get_layer("add")).__name__ == "Add"
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.zeros((1, 10), np.float32), epochs=1, verbose=0)
    model.save(tmp_path / "tiny.keras")
    again = keras.saving.load_model(tmp_path / "tiny.keras")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), rtol=1e-6, atol=1e-6)
