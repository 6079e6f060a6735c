"""passes/fuse_idioms.py: softmax and GELU traced op by op through JAX become one op (Note [idioms fused])."""
import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest

import portx
from portx.frontends.jax import lower_jaxpr
from portx.ir import validate
from portx.passes.fuse_idioms import fuse_idioms
from portx.verification.compare import run_reference

_X = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32) * 3


def _fused(fn, x=_X):
    graph = validate(lower_jaxpr(jax.make_jaxpr(fn)(x), ["x"], {}))
    fused = validate(fuse_idioms(graph))
    got = run_reference(fused, [x])[fused.outputs[0]]
    np.testing.assert_allclose(got, np.asarray(fn(x)), rtol=1e-5, atol=1e-6)
    return graph, fused


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_jax_softmax_is_one_softmax(axis):
    graph, fused = _fused(lambda x: jax.nn.softmax(x, axis=axis))
    assert len(graph.nodes) >= 7, [n.op.name for n in graph.nodes]  # what the trace wrote out
    (node,) = fused.nodes
    assert node.op.name == "softmax" and node.attrs == {"axis": axis % 3} and node.inputs == graph.inputs
    assert not fused.params  # the -inf guard is gone


@pytest.mark.parametrize("fn, approximate", [
    (lambda x: jax.nn.gelu(x, approximate=True), "tanh"),
    (lambda x: jax.nn.gelu(x, approximate=False), "none"),
    (lambda x: 0.5 * x * (1 + jax.lax.erf(x / jnp.sqrt(2.0))), "none"),  # written by hand, another order
    (lambda x: x * 0.5 * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x))), "tanh"),
], ids=["tanh", "erfc", "erf-by-hand", "tanh-by-hand"])
def test_gelu_forms_are_one_gelu(fn, approximate):
    graph, fused = _fused(fn)
    (node,) = fused.nodes
    assert node.op.name == "gelu" and node.attrs == {"approximate": approximate}, [n.op.name for n in fused.nodes]
    assert node.inputs == graph.inputs and node.outputs == graph.outputs


@pytest.mark.parametrize("fn", [
    lambda x: (lambda e: (e / e.sum(-1, keepdims=True), e))(jnp.exp(x - x.max(-1, keepdims=True))),  # e returned
    lambda x: x * 0.5 * (1.0 + jnp.tanh(0.7978845608 * (x + 0.04 * x * x * x))),  # not GELU's constant
    lambda x: jnp.exp(x - x.max(-1, keepdims=True)) / jnp.exp(x).sum(-1, keepdims=True),  # sums another exp
    lambda x: jnp.exp(x - x.max(1, keepdims=True)) / jnp.exp(x - x.max(1, keepdims=True)).sum(2, keepdims=True),
], ids=["read-outside", "other-constant", "other-sum", "other-axis"])
def test_what_is_not_the_idiom_stays(fn):
    graph = validate(lower_jaxpr(jax.make_jaxpr(fn)(_X), ["x"], {}))
    fused = fuse_idioms(graph)
    assert [n.op.name for n in fused.nodes] == [n.op.name for n in graph.nodes]
    assert not {"softmax", "gelu"} & {n.op.name for n in fused.nodes}


class _Mixer(keras.layers.Layer):
    """A layer whose call runs keras.ops (traced through JAX), as keras-hub's MiT attention does."""

    def build(self, shape):
        self.dense = keras.layers.Dense(shape[-1])
        self.dense.build(shape)

    def call(self, x):
        scores = keras.ops.softmax(keras.ops.matmul(x, keras.ops.transpose(x, (0, 2, 1))), axis=-1)
        return keras.activations.gelu(self.dense(keras.ops.matmul(scores, x)), approximate=True)


@pytest.mark.parametrize("to", ["torch-xla", "keras-jax"])
def test_a_traced_keras_layer_emits_softmax_and_gelu_calls(to, tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4, 8))
    model = keras.Model(inputs, _Mixer(name="mixer")(inputs))
    result = portx.convert(model, to=to, output=portx.Output(out=tmp_path / "out"), checks=portx.Checks(grad=False))
    assert result.ok and result.report["verification"]["passed"], result.report["verification"]
    code = result.files["code"].read_text()
    calls = {"torch-xla": ("F.scaled_dot_product_attention(", "approximate='tanh'"),
             "keras-jax": ("layers.Softmax(", "approximate=True")}[to]  # rank 3: matmul, Softmax, matmul
    assert all(c in code for c in calls) and "0.044715" not in code and "tanh(" not in code.replace("'tanh'", ""), code
