"""passes/fuse_attention.py: matmul / softmax / matmul chains become one attention op (Note [attention fusion])."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from torch import nn

from portx.frontends.jax import lower_jaxpr
from portx.ir import parse_graph, validate
from portx.passes.fuse_attention import fuse_attention
from portx.passes.fuse_idioms import fuse_idioms
from portx.passes.layout import to_channels_first, to_channels_last
from portx.verification.compare import run_reference
from tests.support.harness import check_torch_op

_CHAIN = """
graph model(%q: float32[2x2x5x4], %k: float32[2x2x5x4], %v: float32[2x2x5x4], %m: float32[2x1x5x5]) {{
  param %s: float32[scalar]
  %kt: float32[2x2x4x5] = permute(%k) {{perm=(0, 1, 3, 2)}}
  %a: float32[2x2x5x5] = matmul(%q, %kt)
  %b: float32[2x2x5x5] = {scale}
  %c: float32[2x2x5x5] = add(%m, %b)
  %p: float32[2x2x5x5] = softmax(%c) {{axis=3}}
  %d: float32[2x2x5x5] = dropout(%p) {{rate=0.1, axes=()}}
  %o: float32[2x2x5x4] = matmul(%d, %v)
  return %o{extra}
}}"""


def _graph(scale="mul(%a, %s)", extra=""):
    return validate(parse_graph(_CHAIN.format(scale=scale, extra=extra), {"s": np.array(4.0, np.float32)}))


@pytest.mark.parametrize("scale, expected", [("mul(%a, %s)", 4.0), ("div(%a, %s)", 0.25), ("mul(%s, %a)", 4.0)])
def test_the_chain_becomes_one_attention_with_its_scale_mask_and_dropout(scale, expected):
    graph = fuse_attention(_graph(scale))
    (node,) = validate(graph).nodes
    assert node.op.name == "attention" and [v.name for v in node.inputs] == ["q", "k", "v", "m"]
    assert node.attrs == {"is_causal": False, "scale": expected, "enable_gqa": False, "dropout_p": 0.1}
    assert node.outputs == graph.outputs


def test_returned_attention_weights_keep_the_chain():
    graph = _graph(extra=", %p")
    assert fuse_attention(graph) is graph


def test_keys_given_transposed_are_transposed_back():
    graph = validate(parse_graph("""
graph model(%q: float32[3x5x4], %kt: float32[3x4x6], %v: float32[3x6x2]) {
  %a: float32[3x5x6] = matmul(%q, %kt)
  %p: float32[3x5x6] = softmax(%a) {axis=-1}
  %o: float32[3x5x2] = matmul(%p, %v)
  return %o
}"""))
    nodes = validate(fuse_attention(graph)).nodes
    assert [n.op.name for n in nodes] == ["permute", "attention"] and nodes[1].attrs["scale"] == 1.0


class _Weighted(nn.Module):
    """nn.MultiheadAttention with its default need_weights=True (the bmm/softmax path), output only."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, pad):
        return self.mha(x, x, x, key_padding_mask=pad)[0]


@pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])
def test_multihead_attention_computing_its_weights_becomes_one_attention(target):
    torch.manual_seed(0)
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True
    graph = check_torch_op(_Weighted().eval(), torch.randn(2, 5, 8), pad, target=target, atol=1e-5, rtol=1e-4,
                           expect_ops=["softmax"])
    fused = fuse_attention(graph)
    assert "attention" in [n.op.name for n in fused.nodes] and "softmax" not in [n.op.name for n in fused.nodes]


def test_jax_batched_matmuls_around_a_softmax_are_one_attention():
    """``jnp.matmul`` over batch and head axes is a matmul over the merged axes between reshapes (how the JAX
    frontend writes ``dot_general``); the softmax between (traced op by op: passes/fuse_idioms.py) runs on the
    split axes. The chain is one attention over the merged axes."""
    def attend(q, k, v):
        return jnp.matmul(jax.nn.softmax(jnp.matmul(q, k.swapaxes(-1, -2)) * 0.25, axis=-1), v)

    q, k, v = (np.random.default_rng(i).normal(size=(1, 2, 6, 4)).astype(np.float32) for i in range(3))
    graph = validate(lower_jaxpr(jax.make_jaxpr(attend)(q, k, v), ["q", "k", "v"], {}))
    fused = validate(fuse_attention(fuse_idioms(graph)))
    assert [n.op.name for n in fused.nodes].count("attention") == 1, [n.op.name for n in graph.nodes]
    assert not {"softmax", "matmul"} & {n.op.name for n in fused.nodes}, [n.op.name for n in fused.nodes]
    got = run_reference(fused, [q, k, v])[fused.outputs[0]]
    np.testing.assert_allclose(got, np.asarray(attend(q, k, v)), rtol=1e-5, atol=1e-6)


def _heads_attention(heads):
    """A traced attention over ``heads`` heads of (2, 6, 8) inputs, its heads split and merged as keras-hub MiT's."""
    def attend(x):
        q, k, v = (jnp.transpose((x * c).reshape(2, 6, heads, 8 // heads), (0, 2, 1, 3)) for c in (1.0, 2.0, 3.0))
        probs = jax.nn.softmax(jnp.matmul(q, k.swapaxes(-1, -2)) * 0.5, axis=-1)
        return jnp.transpose(jnp.matmul(probs, v), (0, 2, 1, 3)).reshape(2, 6, 8)

    x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype(np.float32)
    return attend, x, validate(lower_jaxpr(jax.make_jaxpr(attend)(x), ["x"], {}))


@pytest.mark.parametrize("layout", [to_channels_first, to_channels_last])
def test_a_one_head_attention_is_written_as_a_multi_head_one(layout):
    """``jnp.matmul`` squeezes a unit head axis before its ``dot_general`` (and restores it after): the one-head
    attention is fused on the split axes, ``(B, 1, N, d)``, and its head transposes stay permutes through the layout
    pass (Note [one-head attention]), so it is written with the ops a two-head one is (MiT-B0's stages: one block
    definition)."""
    written = []
    for heads in (1, 2):
        attend, x, graph = _heads_attention(heads)
        fused = validate(fuse_attention(fuse_idioms(graph)))
        (node,) = [n for n in fused.nodes if n.op.name == "attention"]
        assert node.inputs[0].type.shape == (2, heads, 6, 8 // heads) == node.outputs[0].type.shape
        got = run_reference(fused, [x])[fused.outputs[0]]
        np.testing.assert_allclose(got, np.asarray(attend(x)), rtol=1e-5, atol=1e-6)
        dropped = fused.replace(nodes=tuple(n.replace(attrs={**n.attrs, "dropout_p": 0.1}) if n is node else n
                                            for n in fused.nodes))  # MiT's: the attention stays in logical order
        written.append([n.op.name for n in validate(layout(dropped)).nodes])
    assert written[0] == written[1] and written[0].count("permute") == 4, written
