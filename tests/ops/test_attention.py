"""scaled_dot_product_attention, and the torch modules built on it, against torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from harness import check_torch_op
from portx.ops.attention import ATTENTION

TOL = {"atol": 1e-5, "rtol": 1e-4}
sdpa = F.scaled_dot_product_attention


def _qkv(b=2, h=3, lq=5, lk=5, e=4, ev=4, hk=None):
    hk = h if hk is None else hk
    return [(b, h, lq, e), (b, hk, lk, e), (b, hk, lk, ev)]


def _bool_mask(*shape, hide_row=None):
    def make():
        mask = torch.rand(shape) > 0.3
        mask[..., 0] = True
        if hide_row is not None:
            mask[..., hide_row, :] = False  # a fully masked row: torch returns zeros there
        return mask
    return make


def _float_mask(*shape, hide_row=None):
    def make():
        mask = torch.randn(shape)
        mask[torch.rand(shape) > 0.7] = float("-inf")
        mask[..., 0] = 0.0
        if hide_row is not None:
            mask[..., hide_row, :] = float("-inf")
        return mask
    return make


class CausalSelfAttention(nn.Module):
    """GPT-style: a stored bool tril buffer sliced to the sequence length (folded to a constant)."""

    def __init__(self, size=6):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(size, size, dtype=torch.bool)))

    def forward(self, q, k, v):
        t = q.shape[-2]
        return sdpa(q, k, v, attn_mask=self.bias[:t, :t])


# (function or module factory, inputs: shapes of normal floats or tensor factories)
CASES = [
    pytest.param(sdpa, _qkv(), id="plain"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, is_causal=True), _qkv(), id="causal"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, is_causal=True), _qkv(lq=3, lk=6), id="causal-short-query"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, is_causal=True), _qkv(lq=6, lk=3), id="causal-long-query"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, scale=0.3), _qkv(lk=7, ev=6), id="scale-cross-attention"),
    pytest.param(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), _qkv() + [_bool_mask(5, 5)], id="bool-mask"),
    pytest.param(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), _qkv(lk=6) + [_bool_mask(2, 1, 5, 6, hide_row=2)],
                 id="bool-mask-fully-masked-row"),
    pytest.param(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), _qkv() + [_float_mask(2, 3, 5, 5)],
                 id="float-mask"),
    pytest.param(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), _qkv() + [_float_mask(5, 5, hide_row=0)],
                 id="float-mask-fully-masked-row"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, enable_gqa=True), _qkv(h=4, hk=2), id="gqa"),
    pytest.param(lambda q, k, v: sdpa(q, k, v, is_causal=True, enable_gqa=True), _qkv(h=6, hk=2, lq=4, lk=4),
                 id="gqa-causal"),
    pytest.param(sdpa, [(2, 5, 4), (2, 7, 4), (2, 7, 3)], id="no-head-axis"),
    pytest.param(CausalSelfAttention, _qkv(lq=4, lk=4), id="stored-causal-buffer"),
]


def _make(spec):
    return spec() if callable(spec) else torch.randn(spec)


@pytest.mark.parametrize("fn, specs", CASES)
def test_attention_case(fn, specs):
    torch.manual_seed(0)
    module = fn() if isinstance(fn, type) else fn
    check_torch_op(module, *[_make(s) for s in specs], expect_ops=["attention"], **TOL)


def _encoder(norm_first, activation):
    return lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=activation,
                                              batch_first=True, norm_first=norm_first)


# Whole modules: they also need view/permute/select/transpose from ops/shape.py.
MODULES = [
    pytest.param(lambda: nn.MultiheadAttention(8, 2, batch_first=True), "self", {}, id="mha-batch-first"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2), "self", {}, id="mha-seq-first"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, batch_first=True), "self", {"need_weights": False},
                 id="mha-no-weights"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=5), "cross",
                 {"need_weights": False}, id="mha-cross-kdim-vdim"),
    pytest.param(_encoder(False, "relu"), "encoder", {}, id="encoder-post-norm-relu"),
    pytest.param(_encoder(True, "relu"), "encoder", {}, id="encoder-pre-norm-relu"),
    pytest.param(_encoder(False, "gelu"), "encoder", {}, id="encoder-post-norm-gelu"),
    pytest.param(_encoder(True, "gelu"), "encoder", {}, id="encoder-pre-norm-gelu"),
]


class _Call(nn.Module):
    """Calls ``inner`` on its inputs with fixed keyword arguments (MHA takes q, k, v)."""

    def __init__(self, inner, kind, kwargs):
        super().__init__()
        self.inner, self.kind, self.kwargs = inner, kind, kwargs

    def forward(self, x, y=None):
        if self.kind == "encoder":
            return self.inner(x)
        out, weights = self.inner(x, x, x, **self.kwargs) if y is None else \
            self.inner(x, y[..., :6], y[..., 6:], **self.kwargs)
        return (out, weights) if weights is not None else out


@pytest.mark.parametrize("make, kind, kwargs", MODULES)
def test_attention_module(make, kind, kwargs):
    torch.manual_seed(0)
    inputs = [torch.randn(2, 5, 8)] + ([torch.randn(2, 7, 11)] if kind == "cross" else [])
    if kind == "self" and not make().batch_first:
        inputs = [torch.randn(5, 2, 8)]
    check_torch_op(_Call(make(), kind, kwargs), *inputs, **TOL)


@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["none", "causal", "bool", "float"]), st.booleans())
def test_attention_property(heads, kv_groups, lq, lk, e, mask_kind, explicit_scale):
    torch.manual_seed(0)
    shapes = _qkv(b=1, h=heads * kv_groups, hk=heads, lq=lq, lk=lk, e=e, ev=e + 1)
    inputs = [torch.randn(s) for s in shapes]
    if mask_kind == "bool":
        inputs.append(torch.rand(lq, lk) > 0.5)  # may hide whole rows (zeros in torch)
    elif mask_kind == "float":
        inputs.append(torch.randn(lq, lk))
    scale = 0.7 if explicit_scale else None
    causal = mask_kind == "causal"

    def fn(q, k, v, m=None):
        return sdpa(q, k, v, attn_mask=m, is_causal=causal, scale=scale, enable_gqa=kv_groups > 1)

    graph = check_torch_op(fn, *inputs, **TOL)
    assert [n.op for n in graph.nodes] == [ATTENTION]


def test_fully_masked_rows_are_zero_in_the_reference():
    q = np.ones((1, 2, 3), np.float32)
    mask = np.array([[True, False], [False, False]])
    out = ATTENTION.reference_rule(q, q, q, mask, is_causal=False, scale=1.0, enable_gqa=False)
    assert np.all(out[0, 1] == 0) and np.all(np.isfinite(out))
