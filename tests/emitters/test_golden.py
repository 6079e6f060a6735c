"""Golden files: the emitted Keras source of small models, reviewed as diffs.

Refresh after an intended change with: ./scripts/test tests/emitters/test_golden.py --update-golden
"""
from pathlib import Path

import pytest
import torch
from torch import nn

import portx

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "tiny_cnn.pt2"


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
