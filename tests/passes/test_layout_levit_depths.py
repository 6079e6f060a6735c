"""LeViT's attention, whose values are deeper than its keys, runs in the order its operands are stored in.

jax's fused attention needs one depth, so this attention runs stepwise; its operands keep the head split's
stored order (Note [attention layout]) and no transpose is left inside the converted model.
"""
import torch
from torch import nn

import portx


class LeViTDepths(nn.Module):
    """LeViT attention: keys of depth 4, values of depth 8 (attn_ratio 2), a learned bias per head."""

    def __init__(self, c=16, heads=2, key=4, n=16):
        super().__init__()
        self.heads, self.key, self.value = heads, key, 2 * key
        self.qkv = nn.Linear(c, heads * (2 * key + 2 * key))
        self.proj = nn.Linear(heads * self.value, c)
        self.bias = nn.Parameter(torch.randn(heads, n, n) * 0.1)
        self.patch = nn.Conv2d(3, c, 4, 4)

    def forward(self, x):
        y = self.patch(x).flatten(2).transpose(1, 2)
        b, n, _ = y.shape
        q, k, v = self.qkv(y).view(b, n, self.heads, -1).split([self.key, self.key, self.value], dim=3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1), v.permute(0, 2, 1, 3)
        a = (q @ k) * self.key ** -0.5 + self.bias
        o = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, self.heads * self.value)
        return self.proj(o).mean(1)


def test_levit_value_depth_leaves_no_transpose(tmp_path):
    torch.manual_seed(0)
    model, x = LeViTDepths().eval(), torch.randn(2, 3, 16, 16)
    result = portx.convert(model, example_inputs=(x,), out=str(tmp_path / "out"))
    assert result.report["verification"]["passed"], result.report["verification"]
    rows = result.report["layout"]["inner_transposes"]
    assert [r for r in rows if r["data_path"]] == [], rows


class CausalDepths(nn.Module):
    """Causal scaled_dot_product_attention on heads split by view -> permute, values twice as deep."""

    def __init__(self, c=8, heads=2):
        super().__init__()
        self.heads, self.q, self.k, self.v = heads, nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, 2 * c)

    def forward(self, y):
        b, n, _ = y.shape
        q, k, v = (f(y).view(b, n, self.heads, -1).permute(0, 2, 1, 3) for f in (self.q, self.k, self.v))
        o = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(b, n, -1)


def test_causal_value_depth_leaves_no_transpose(tmp_path):
    torch.manual_seed(0)
    model, x = CausalDepths().eval(), torch.randn(2, 5, 8)
    result = portx.convert(model, example_inputs=(x,), out=str(tmp_path / "out"))
    assert result.report["verification"]["passed"], result.report["verification"]
    rows = result.report["layout"]["inner_transposes"]
    assert [r for r in rows if r["data_path"]] == [], rows
