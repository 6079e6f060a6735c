"""Channel shuffles and window partitions: every transpose left inside is the source's own (Note [carried permutes]).

ShuffleNet's ``view -> transpose(1, 2) -> view`` and Swin's window partition / reverse need their data
moved in any stored order; the layout pass runs each such source permute as one transpose where its
reader needs it, in stored order, and the report says so (origin "source", ``carries`` naming the
source permute). Counted here per model against the source's own permutes, in the report and in the
emitted Keras model's jaxpr; each model is built from code with a fixed seed and verified.
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
from portx.ir import parse_graph
from portx.passes.layout import inner_transposes, to_channels_last
from tests.passes.test_layout import normalized
from tests.passes.test_layout_zoo import emitted_transposes

CONV = "{stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}"


def shuffle(x, groups):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleBlock(nn.Module):
    """Two channel shuffles (2 and 4 groups) between convolutions, a depthwise one among them."""

    def __init__(self):
        super().__init__()
        self.a, self.dw, self.b = nn.Conv2d(3, 8, 1), nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = shuffle(F.relu(self.a(x)), 2)
        return self.b(shuffle(self.dw(y), 4))


class WindowAttention(nn.Module):
    """Swin's block on a 4x4 NHWC map with window 2: partition, head split, attention, merge, reverse.

    ``shifted`` rolls the map and adds a mask, so the attention stays unfused (q @ k^T, softmax, @ v),
    as in Swin's shifted-window blocks."""

    def __init__(self, shifted=False, c=8, heads=2, window=2):
        super().__init__()
        self.shifted, self.heads, self.window = shifted, heads, window
        self.patch, self.norm = nn.Conv2d(3, c, 2, 2), nn.LayerNorm(c)
        self.qkv, self.proj, self.head = nn.Linear(c, 3 * c), nn.Linear(c, c), nn.Conv2d(c, 4, 1)
        self.register_buffer("mask", torch.randn(4, 1, window * window, window * window))

    def forward(self, x):
        y = self.patch(x).permute(0, 2, 3, 1)
        b, h, w, c = y.shape
        s, heads = self.window, self.heads
        t = torch.roll(self.norm(y), (-1, -1), (1, 2)) if self.shifted else self.norm(y)
        t = t.view(b, h // s, s, w // s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, s * s, c)
        q, k, v = self.qkv(t).reshape(t.shape[0], s * s, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
        if self.shifted:
            a = (q * (c // heads) ** -0.5) @ k.transpose(-2, -1)
            a = (a.view(b, -1, heads, s * s, s * s) + self.mask).view(-1, heads, s * s, s * s)
            o = a.softmax(-1) @ v
        else:
            o = F.scaled_dot_product_attention(q, k, v)
        o = self.proj(o.transpose(1, 2).reshape(-1, s * s, c))
        o = o.view(b, h // s, w // s, s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        o = torch.roll(o, (1, 1), (1, 2)) if self.shifted else o
        return self.head((y + o).permute(0, 3, 1, 2))


#: model -> (class, constructor kwargs, data-path transposes left inside: each one a source permute, and
#: whether the jaxpr has just those: Keras's fused ``ops.dot_product_attention`` transposes inside itself)
CASES = {
    "shuffle": (ShuffleBlock, {}, 2, True),
    "windows": (WindowAttention, {}, 2, False),
    "shifted_windows": (WindowAttention, {"shifted": True}, 5, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_inner_transpose_is_one_source_permute(name, tmp_path):
    cls, kwargs, expected, plain = CASES[name]
    torch.manual_seed(0)
    model, x = cls(**kwargs).eval(), torch.randn(2, 3, 8, 8)
    source = portx.inspect(model, example_inputs=(x,)).ops["permute"].count
    result = portx.convert(model, example_inputs=(x,), out=str(tmp_path / "out"), io_layout="channels-last")
    assert result.report["verification"]["passed"], result.report["verification"]
    rows = result.report["layout"]["inner_transposes"]
    data = [r for r in rows if r["data_path"]]
    assert len(data) == expected <= source, rows
    assert all(r["origin"] == "source" for r in data), rows
    carried = [r["carries"] for r in data if r["carries"] is not None]
    assert len(carried) == len(set(carried)), rows  # one transpose per source permute, never two
    assert all(f"%{r['carries']}" in r["reason"] for r in data if r["carries"] is not None), rows
    if plain:
        assert emitted_transposes(result, [x.numpy().transpose(0, 2, 3, 1).copy()]) == expected


def test_a_shuffle_carries_the_source_transpose_into_the_stored_order(tmp_path):
    """(N, g, C/g, H, W).transpose(1, 2) stored channels-last is a swap of the last two axes of (N, H, W, g, C/g)."""
    torch.manual_seed(0)
    model, x = ShuffleBlock().eval(), torch.randn(1, 3, 8, 8)
    result = portx.convert(model, example_inputs=(x,), out=str(tmp_path / "out"))
    assert result.report["verification"]["passed"]
    rows = result.report["layout"]["inner_transposes"]
    assert [(r["perm"], r["origin"], r["feeds"], r["data_path"]) for r in rows] == \
        [([0, 1, 2, 4, 3], "source", ["reshape"], True)] * 2, rows
    assert all(r["carries"] and r["reason"].startswith("the source's own transpose") for r in rows), rows


def _rows(text):
    return [(r["origin"], r["carries"], r["perm"], r["feeds"]) for r in
            inner_transposes(to_channels_last(normalized(parse_graph(text.replace("CONV", CONV)))))]


def test_a_transpose_the_source_does_not_have_stays_the_layout_pass_own():
    """Flattening an NHWC-stored conv output for a softmax needs a transpose no source permute accounts for."""
    assert _rows("""graph g(%x: float32[1x3x4x4]) {
      param %w: float32[4x3x1x1]
      %c: float32[1x4x4x4] = conv(%x, %w, _) CONV
      %f: float32[1x64] = reshape(%c) {shape=(1, 64)}
      %y: float32[1x64] = softmax(%f) {axis=1}
      return %y
    }""") == [("layout", None, [0, 3, 1, 2], ["reshape"])]
