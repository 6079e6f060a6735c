"""scaled_dot_product_attention, and the torch modules built on it, against torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import portx
from portx.ir import parse_graph, validate
from portx.ops.attention import ATTENTION
from portx.targets import find_target
from tests.support.harness import check_torch_op

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
def test_attention_case(target, fn, specs):
    torch.manual_seed(0)
    module = fn() if isinstance(fn, type) else fn
    check_torch_op(module, *[_make(s) for s in specs], expect_ops=["attention"], target=target, **TOL)


class MHA(nn.Module):
    """nn.MultiheadAttention called as self-attention (or cross-attention on a second input)."""

    def __init__(self, *, causal=False, padding=False, call=None, **kwargs):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, **kwargs)
        self.causal, self.padding, self.call = causal, padding, dict(call or {})

    def forward(self, x, other=None):
        kv = (x, x) if other is None else (other[..., :6], other[..., 6:])
        extra = dict(self.call)
        if self.causal:
            extra["attn_mask"] = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        if self.padding:
            extra["key_padding_mask"] = x[..., 0] > 1.0
        out, weights = self.mha(x, *kv, **extra)
        return out if weights is None else (out, weights)


def _encoder(norm_first, activation):
    return lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=activation,
                                              batch_first=True, norm_first=norm_first)


BATCH_FIRST, SEQ_FIRST = [(2, 5, 8)], [(5, 2, 8)]

# Whole modules (module factory, input shapes): they also need view/permute/select from ops/shape.py.
MODULES = [
    pytest.param(lambda: MHA(batch_first=True), BATCH_FIRST, id="mha-batch-first"),
    pytest.param(lambda: MHA(), SEQ_FIRST, id="mha-seq-first"),
    pytest.param(lambda: MHA(batch_first=True, call={"need_weights": False}), BATCH_FIRST, id="mha-no-weights"),
    pytest.param(lambda: MHA(call={"need_weights": False}), SEQ_FIRST, id="mha-seq-first-no-weights"),
    pytest.param(lambda: MHA(batch_first=True, kdim=6, vdim=5, call={"need_weights": False}),
                 BATCH_FIRST + [(2, 7, 11)], id="mha-cross-kdim-vdim"),
    pytest.param(lambda: MHA(batch_first=True, causal=True), BATCH_FIRST, id="mha-causal-float-mask"),
    pytest.param(lambda: MHA(batch_first=True, causal=True, call={"need_weights": False}), BATCH_FIRST,
                 id="mha-causal-float-mask-no-weights"),
    pytest.param(lambda: MHA(batch_first=True, padding=True, call={"need_weights": False}), BATCH_FIRST,
                 id="mha-key-padding-mask"),
    pytest.param(_encoder(False, "relu"), BATCH_FIRST, id="encoder-post-norm-relu"),
    pytest.param(_encoder(True, "relu"), BATCH_FIRST, id="encoder-pre-norm-relu"),
    pytest.param(_encoder(False, "gelu"), BATCH_FIRST, id="encoder-post-norm-gelu"),
    pytest.param(_encoder(True, "gelu"), BATCH_FIRST, id="encoder-pre-norm-gelu"),
    pytest.param(lambda: nn.TransformerEncoder(_encoder(False, "relu")(), 2, enable_nested_tensor=False),
                 BATCH_FIRST, id="encoder-stack"),
    pytest.param(lambda: nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), BATCH_FIRST + [(2, 6, 8)],
                 id="decoder-layer"),
]


@pytest.mark.parametrize("make, shapes", MODULES)
def test_attention_module(target, make, shapes):
    torch.manual_seed(0)
    check_torch_op(make(), *[torch.randn(s) for s in shapes], target=target, **TOL)


@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["none", "causal", "bool", "float"]), st.booleans())
def test_attention_property(target, heads, kv_groups, lq, lk, e, mask_kind, explicit_scale):
    torch.manual_seed(0)
    shapes = _qkv(b=1, h=heads * kv_groups, hk=heads, lq=lq, lk=lk, e=e, ev=e + lq % 2)  # fused or stepwise
    inputs = [torch.randn(s) for s in shapes]
    if mask_kind == "bool":
        inputs.append(torch.rand(lq, lk) > 0.5)  # may hide whole rows (zeros in torch)
    elif mask_kind == "float":
        inputs.append(torch.randn(lq, lk))
    scale = 0.7 if explicit_scale else None
    causal = mask_kind == "causal"

    def fn(q, k, v, m=None):
        return sdpa(q, k, v, attn_mask=m, is_causal=causal, scale=scale, enable_gqa=kv_groups > 1)

    graph = check_torch_op(fn, *inputs, target=target, **TOL)
    assert [n.op for n in graph.nodes] == [ATTENTION]


def test_fully_masked_rows_are_zero_in_the_reference():
    q = np.ones((1, 2, 3), np.float32)
    mask = np.array([[True, False], [False, False]])
    out = ATTENTION.reference_rule(q, q, q, mask, is_causal=False, scale=1.0, enable_gqa=False)
    assert np.all(out[0, 1] == 0) and np.all(np.isfinite(out))


def test_keras_writes_one_dot_product_attention_call(tmp_path):
    """Note [fused attention]: a rank-4 attention with a mask is one ``ops.dot_product_attention`` in Keras."""
    q, k, v = (torch.randn(s) for s in _qkv(lk=6))
    mask = _bool_mask(2, 1, 5, 6, hide_row=2)()

    class Masked(nn.Module):
        def forward(self, q, k, v, m):
            return sdpa(q, k, v, attn_mask=m)

    result = portx.convert(Masked(), example_inputs=(q, k, v, mask), to="keras-jax", out=tmp_path / "o", grad=False)
    code = (tmp_path / "o" / "model.py").read_text()
    assert code.count("ops.dot_product_attention(") == 1 and "ops.matmul" not in code, code
    assert result.report["verification"]["passed"]


_DROPOUT_GRAPH = """
graph model(%q: float32[2x2x5x4], %k: float32[2x2x5x4], %v: float32[2x2x5x4]) {
  %o: float32[2x2x5x4] = attention(%q, %k, %v, _) {is_causal=False, scale=0.5, enable_gqa=False, dropout_p=0.5}
  return %o
}"""


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_attention_dropout_acts_in_training_only(to, tmp_path):
    graph = validate(parse_graph(_DROPOUT_GRAPH))
    target = find_target(to)
    target.emit(graph, tmp_path)
    model = target.load(tmp_path)
    arrays = [np.random.default_rng(i).standard_normal((2, 2, 5, 4)).astype(np.float32) for i in range(3)]
    expected = ATTENTION.reference_rule(*arrays, is_causal=False, scale=0.5, enable_gqa=False, dropout_p=0.5)
    np.testing.assert_allclose(target.run(model, arrays)[0], expected, atol=1e-5, rtol=1e-4)
    if to == "keras-jax":
        trained = np.asarray(model(arrays, training=True))
    else:
        trained = model.train()(*map(torch.from_numpy, arrays)).detach().numpy()
    assert not np.allclose(trained, expected)


_LAYOUT_GRAPH = """
graph model(%q: float32[5x2x3x4], %k: float32[6x2x3x4], %v: float32[6x2x3x4]MASK_IN) {
  %o: float32[5x2x3x4] = attention(%q, %k, %v, MASK) {is_causal=False, scale=0.5, enable_gqa=False, layout=(2, 0, 1, 3)}
  return %o
}"""


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
@pytest.mark.parametrize("masked", [False, True])
def test_attention_in_a_stored_layout(to, masked, tmp_path):
    """Note [attention layout]: operands stored (L, B, H, E) give the logical result stored alike."""
    text = _LAYOUT_GRAPH.replace("MASK_IN", ", %m: float32[1x3x5x6]" if masked else "")
    graph = validate(parse_graph(text.replace("MASK", "%m" if masked else "_")))
    target = find_target(to)
    target.emit(graph, tmp_path)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((5, 2, 3, 4), (6, 2, 3, 4), (6, 2, 3, 4))]
    logical = [np.transpose(a, (1, 2, 0, 3)) for a in arrays]
    mask = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    expected = ATTENTION.reference_rule(*logical, *([mask] if masked else []), is_causal=False, scale=0.5,
                                        enable_gqa=False)
    got = target.run(target.load(tmp_path), arrays + ([mask] if masked else []))[0]
    np.testing.assert_allclose(got, np.transpose(expected, (2, 0, 1, 3)), atol=1e-5, rtol=1e-4)
