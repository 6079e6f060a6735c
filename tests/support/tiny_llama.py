"""A Llama-shaped decoder small enough for unit tests: token embedding, RMSNorm, grouped-query attention
(4 query heads, 2 key-value heads) with rotary embeddings, a SwiGLU MLP (gate, up, down) and an untied LM head.
The sharding tests (tests/passes/test_sharding.py, tests/targets/*/test_sharding*.py) and
benchmarks/sharding.py build it with a fixed seed.

Example: ``model, (ids,) = tiny_llama()``.
"""
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TinyLlama", "tiny_llama"]


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + turned * sin


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.depth = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.depth, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.depth, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.depth, bias=False)
        self.o_proj = nn.Linear(heads * self.depth, dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.depth).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.depth).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.depth).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = nn.RMSNorm(dim, eps=1e-6), nn.RMSNorm(dim, eps=1e-6)
        self.self_attn, self.mlp = Attention(dim, heads, kv_heads), MLP(dim, hidden)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyLlama(nn.Module):
    def __init__(self, vocab=64, dim=32, heads=4, kv_heads=2, hidden=64, layers=2, ctx=8):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, heads, kv_heads, hidden) for _ in range(layers)])
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        depth = dim // heads
        angles = torch.arange(ctx)[:, None] / 10000 ** (torch.arange(0, depth, 2) / depth)
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, -1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, -1), persistent=False)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        return self.lm_head(self.norm(x))


def tiny_llama(batch=2, ctx=8, **kwargs):
    """(TinyLlama with seed-0 weights in eval mode, (token ids of shape (batch, ctx),))."""
    torch.manual_seed(0)
    model = TinyLlama(ctx=ctx, **kwargs).eval()
    return model, (torch.randint(0, model.lm_head.out_features, (batch, ctx), generator=torch.Generator().manual_seed(0)),)
