"""The zoo's attention models: ViT, Swin (shifted windows, relative position bias), a GPT decoder and a
text transformer encoder with a padding mask. ``zoo.ZOO`` registers them with their example inputs.
"""
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ViTish", "Swinish", "GPTish", "TextEncoderish"]


class ViTish(nn.Module):
    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 8, stride=8)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, dim * 2, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), t], dim=1) + self.pos
        t = self.norm(self.encoder(t))
        return self.head(t[:, 0])


class GPTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPTish(nn.Module):
    def __init__(self, vocab=101, dim=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.Sequential(*[GPTBlock(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        return self.lm_head(self.ln_f(self.blocks(x)))


def _windows(x, w):
    """(B, H, W, C) -> (B * H/w * W/w, w * w, C): Swin's window partition."""
    b, h, wd, c = x.shape
    return x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)


def _unwindows(windows, w, b, h, wd):
    """The inverse of ``_windows``."""
    x = windows.view(b, h // w, wd // w, w, w, windows.shape[-1]).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, -1)


def _relative_index(w):
    """Index into the (2w-1)^2 relative position bias table for every (query, key) pair of a window."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
    return (rel[..., 0] * (2 * w - 1) + rel[..., 1]).flatten()


def _shift_mask(side, w, s):
    """(windows, w*w, w*w) additive mask: -100 between tokens that the cyclic shift brought together."""
    img = torch.zeros(1, side, side, 1)
    regions = (slice(0, -w), slice(-w, -s), slice(-s, None))
    for i, (hs, ws) in enumerate((hs, ws) for hs in regions for ws in regions):
        img[:, hs, ws, :] = i
    win = _windows(img, w).squeeze(-1)
    return torch.where(win[:, None, :] != win[:, :, None], -100.0, 0.0)


class WindowAttention(nn.Module):
    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.5)
        self.register_buffer("rel_index", _relative_index(window), persistent=False)

    def forward(self, x, mask):
        bw, n, c = x.shape
        q, k, v = self.qkv(x).view(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        attn = attn + self.bias_table[self.rel_index].view(n, n, self.heads).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = (attn.view(bw // nw, nw, self.heads, n, n) + mask[None, :, None]).view(bw, self.heads, n, n)
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    """Swin: (shifted) window attention with relative position bias, then an MLP; channels-last tokens."""

    def __init__(self, dim, heads, window, shift, side):
        super().__init__()
        self.window, self.shift = window, shift
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, window)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.register_buffer("mask", _shift_mask(side, window, shift) if shift else None, persistent=False)

    def forward(self, x):
        b, h, w, _ = x.shape
        y = torch.roll(self.norm1(x), (-self.shift, -self.shift), (1, 2)) if self.shift else self.norm1(x)
        y = _unwindows(self.attn(_windows(y, self.window), self.mask), self.window, b, h, w)
        x = x + (torch.roll(y, (self.shift, self.shift), (1, 2)) if self.shift else y)
        return x + self.mlp(self.norm2(x))


class Swinish(nn.Module):
    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.patch, self.patch_norm = nn.Conv2d(3, dim, 4, 4), nn.LayerNorm(dim)
        self.blocks = nn.Sequential(SwinBlock(dim, 4, 4, 0, 8), SwinBlock(dim, 4, 4, 2, 8))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.blocks(self.patch_norm(self.patch(x).permute(0, 2, 3, 1)))
        return self.head(self.norm(x).mean((1, 2)))


class TextEncoderish(nn.Module):
    """nn.TransformerEncoder over token ids with a key padding mask (id 0), then a masked mean-pool.

    Note [text encoder gaps]: ``~pad`` (aten::bitwise_not) has no import rule, so the mask is built with
    ``ids != 0``; the pool divides by the token count without ``clamp_min`` (the Keras frontend cannot read
    back the ``ops.clip(x, 1.0, None)`` that clamp_min is emitted as). Every example row has tokens.
    """

    def __init__(self, vocab=50, dim=32, classes=4, ctx=12):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim, padding_idx=0), nn.Parameter(torch.randn(1, ctx, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        x = self.encoder(self.tok(ids) + self.pos, src_key_padding_mask=ids == 0)
        keep = (ids != 0).unsqueeze(-1).to(x.dtype)
        return self.head((x * keep).sum(1) / keep.sum(1))
