"""Transposes left inside converted transformers and shuffles (report["layout"]["inner_transposes"]).

The layout pass runs attention in the order its operands are stored in, splits head reshapes to their
finest axes and keeps merged rows apart (passes/layout/refine.py, layout_rows.py); what remains is
counted here against the last measured number, and every row says why it is left. Each model is
built from code with a fixed seed, converted to Keras-JAX and verified (exact as before).
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
from tests.support.zoo import ZOO


class ChannelShuffle(nn.Module):
    """ShuffleNet's shuffle between two 1x1 convolutions (view -> transpose -> view)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 1), nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.a(x)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return self.b(y)


class Windows(nn.Module):
    """Swin's window partition and reverse around a per-window linear layer, channels-last inside."""

    def __init__(self, c=8, w=4):
        super().__init__()
        self.w, self.patch, self.proj = w, nn.Conv2d(3, c, 2, 2), nn.Linear(c, c)

    def forward(self, x):
        y = self.patch(x).permute(0, 2, 3, 1)
        b, h, wd, c = y.shape
        s = self.w
        t = y.view(b, h // s, s, wd // s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, s * s, c)
        t = self.proj(t)
        y = t.view(b, h // s, wd // s, s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, wd, c)
        return y.permute(0, 3, 1, 2).mean((2, 3))


class Mixer(nn.Module):
    """MLP-Mixer block: token mixing through transpose -> linear -> transpose, then channel mixing."""

    def __init__(self, c=16, tokens=16):
        super().__init__()
        self.patch, self.norm1, self.norm2 = nn.Conv2d(3, c, 4, 4), nn.LayerNorm(c), nn.LayerNorm(c)
        self.tokens, self.channels = nn.Linear(tokens, tokens), nn.Linear(c, c)

    def forward(self, x):
        y = self.patch(x).flatten(2).transpose(1, 2)
        y = y + self.tokens(self.norm1(y).transpose(1, 2)).transpose(1, 2)
        y = y + self.channels(F.gelu(self.norm2(y)))
        return y.mean(1)


class LeViTAttention(nn.Module):
    """LeViT-style attention: heads split by view -> permute, a learned bias per head, merged back."""

    def __init__(self, c=16, heads=2, n=16):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.bias = nn.Parameter(torch.randn(heads, n, n) * 0.1)
        self.patch = nn.Conv2d(3, c, 4, 4)

    def forward(self, x):
        y = self.patch(x).flatten(2).transpose(1, 2)
        b, n, c = y.shape
        q, k, v = self.qkv(y).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5 + self.bias
        o = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(o).mean(1)


def _built(cls):
    def make():
        torch.manual_seed(0)
        return cls().eval(), (torch.randn(2, 3, 16, 16),)
    return make


#: model -> (how to build it, most data-path transposes left inside; the number measured last)
CASES = {
    "vit": (ZOO["vit"], 0),
    "swin": (ZOO["swin"], 9),
    "shuffle": (_built(ChannelShuffle), 1),
    "windows": (_built(Windows), 2),
    "mixer": (_built(Mixer), 0),
    "levit": (_built(LeViTAttention), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inner_transposes_are_few_and_explained(name, tmp_path):
    make, most = CASES[name]
    model, inputs = make()
    result = portx.convert(model, example_inputs=tuple(inputs), out=str(tmp_path / "out"))
    assert result.report["verification"]["passed"], result.report["verification"]
    rows = result.report["layout"]["inner_transposes"]
    data = [r for r in rows if r["data_path"]]
    assert len(data) <= most, rows
    assert all(r["reason"] for r in rows), rows
