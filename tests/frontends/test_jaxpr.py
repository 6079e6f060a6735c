"""The jaxpr frontend: subclassed Keras models and plain JAX functions, lowered and checked against JAX."""
import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from keras import layers

from portx.verification.compare import run_reference
from portx.errors import UnsupportedOps
from portx.frontends.jax import Const, inline_jaxpr, lower_jaxpr, scope_of
from portx.frontends.keras.subclassed import lower_keras_subclassed, needs_tracing, param_name
from portx.ir import GraphBuilder, TensorType, validate
from tests.support.unsupported import jax_unsupported

TOL = 1e-5


def _check(graph, arrays, expected):
    validate(graph)
    got = run_reference(graph, arrays)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    assert len(graph.outputs) == len(expected)
    for value, want in zip(graph.outputs, expected):
        np.testing.assert_allclose(got[value], np.asarray(want), atol=TOL, rtol=TOL, err_msg=value.name)


def _keras_check(model, *arrays):
    graph = lower_keras_subclassed(model, list(arrays))
    _check(graph, list(arrays), keras.tree.flatten(model(*arrays, training=False)))
    return graph


class SmallCnn(keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = layers.Conv2D(4, 3, padding="same", name="conv")
        self.bn = layers.BatchNormalization()
        self.pool = layers.MaxPooling2D(2, name="pool")
        self.avg = layers.AveragePooling2D(2, padding="same")
        self.fc = layers.Dense(3, name="fc")

    def call(self, x, training=None):
        x = keras.ops.relu(self.bn(self.conv(x), training=training))
        x = self.avg(self.pool(x))
        return self.fc(keras.ops.reshape(x, (x.shape[0], -1)))


class SmallMlp(keras.Model):
    def __init__(self):
        super().__init__()
        self.up = layers.Dense(8)
        self.norm = layers.LayerNormalization()
        self.down = layers.Dense(4, activation="tanh")

    def call(self, x):
        h = self.norm(self.up(x))
        return self.down(keras.activations.gelu(h) + keras.activations.gelu(h, approximate=True))


class AttentionBlock(keras.Model):
    def __init__(self):
        super().__init__()
        self.embed = layers.Embedding(11, 8)
        self.attn = layers.MultiHeadAttention(num_heads=2, key_dim=4, name="attn")
        self.norm = layers.LayerNormalization()
        self.head = layers.Dense(5)

    def call(self, ids):
        h = self.embed(ids)
        h = self.norm(h + self.attn(h, h, use_causal_mask=True))
        return keras.ops.softmax(self.head(h), axis=-1)


class ConvZoo(keras.Model):
    def __init__(self):
        super().__init__()
        self.c1 = layers.Conv1D(4, 3, padding="same", groups=2)
        self.dw = layers.DepthwiseConv2D(3)
        self.up = layers.Conv2DTranspose(3, 3, strides=2, padding="same")
        self.up_valid = layers.Conv2DTranspose(2, 2, strides=2)
        self.gap = layers.GlobalAveragePooling1D()

    def call(self, seq, img):
        y = self.up_valid(self.up(self.dw(img)))
        return self.gap(self.c1(seq)), keras.ops.silu(y)


def _rng(seed=0):
    keras.utils.set_random_seed(seed)
    return np.random.default_rng(seed)


def test_subclassed_cnn_matches_keras():
    rng = _rng()
    model, x = SmallCnn(), rng.standard_normal((2, 8, 8, 3)).astype("float32")
    model(x)
    model.bn.moving_mean.assign(rng.standard_normal(4).astype("float32"))
    model.bn.moving_variance.assign(rng.uniform(0.5, 2.0, 4).astype("float32"))
    graph = _keras_check(model, x)
    scopes = {n.scope for n in graph.nodes}
    assert {"conv", "pool", "fc"} <= scopes
    assert {"conv.weight", "fc.weight", "fc.bias"} <= set(graph.params)
    assert "conv" in {n.op.name for n in graph.nodes} and "max_pool" in {n.op.name for n in graph.nodes}


def test_subclassed_mlp_with_layer_norm_and_gelu():
    rng = _rng(1)
    graph = _keras_check(SmallMlp(), rng.standard_normal((3, 6)).astype("float32"))
    assert "linear" in {n.op.name for n in graph.nodes}


def test_attention_block_with_embedding_and_causal_mask():
    _rng(2)
    ids = np.array([[1, 4, 7, 10, 0, 3]], dtype="int32")
    graph = _keras_check(AttentionBlock(), ids)
    assert graph.inputs[0].type.dtype == "int32"
    assert "embedding" in {n.op.name for n in graph.nodes}
    assert any(n.scope == "attn.query" for n in graph.nodes)


def test_grouped_depthwise_and_transposed_convolutions():
    rng = _rng(3)
    seq, img = rng.standard_normal((1, 6, 4)).astype("float32"), rng.standard_normal((1, 7, 7, 2)).astype("float32")
    graph = _keras_check(ConvZoo(), seq, img)
    assert "conv_transpose" in {n.op.name for n in graph.nodes}


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.fc = layers.Dense(4, name="fc")
        self.drop = layers.Dropout(0.5)

    def call(self, x):
        return self.drop(keras.ops.silu(self.fc(x)))


class Nested(keras.Model):
    def __init__(self):
        super().__init__()
        self.block = Block(name="block")

    def call(self, x):
        return self.block(x) * 2.0


def test_nested_layers_keep_their_scope_and_dropout_is_off():
    rng = _rng(4)
    graph = _keras_check(Nested(), rng.standard_normal((2, 3)).astype("float32"))
    assert "block.fc" in {n.scope for n in graph.nodes}
    assert {"block.fc.weight", "block.fc.bias"} <= set(graph.params)


def test_needs_tracing_tells_subclassed_from_functional():
    inputs = keras.Input((4,))
    functional = keras.Model(inputs, layers.Dense(2)(inputs))
    assert needs_tracing(SmallMlp()) and not needs_tracing(functional)
    assert not needs_tracing(keras.Sequential([layers.Dense(2)]))
    assert param_name("small_mlp/dense_1/kernel", "small_mlp") == "dense_1.kernel"


def _lax_conv_transpose(x, w):
    return jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _window_min(x):
    return jax.lax.reduce_window(x, jnp.inf, jax.lax.min, (1, 2, 2, 1), (1, 1, 1, 1), "SAME")


def _updated(x):
    return jax.lax.dynamic_update_slice(x, jnp.ones((2, 2, 3, 1)), (0, 1, 1, 2)) + jax.lax.dynamic_slice(
        x, (0, 0, 2, 0), (2, 4, 3, 3))[..., :1].sum()


@jax.custom_vjp
def _doubled_sin(x):
    return jnp.sin(x) * 2


_doubled_sin.defvjp(lambda x: (_doubled_sin(x), x), lambda saved, g: (g,))


# name: function of x: float32[2, 4, 5, 3]
_FUNCTIONS = {
    "arith": lambda x: jnp.log1p(jnp.abs(x)) - jnp.expm1(x) / 3 + jnp.exp2(x) * jnp.sign(x) + x ** 3 + x ** -2,
    "math": lambda x: jnp.tan(x) + jnp.sqrt(x * x) + jax.lax.rsqrt(x * x + 1) + jax.nn.sigmoid(x) + jnp.floor(x),
    "compare": lambda x: jnp.where((x > 0) & ~(x > 1) | (x == 0.5), x, -x) + jnp.isfinite(x) + jnp.clip(x, -0.5, 0.5),
    "reduce": lambda x: (x.sum(axis=(1, 2)), x.max(axis=-1), x.min(axis=0), x.prod(axis=3), jnp.argmax(x, axis=1),
                         jnp.argmin(x, axis=2), (x > 0).any(axis=1), (x > 0).all(axis=2)),
    "softmax": lambda x: jax.nn.log_softmax(x, axis=-1) + jax.nn.softmax(x, axis=1),
    "layout": lambda x: (jnp.concatenate([x, x * 2], axis=2).transpose(0, 3, 1, 2).reshape(2, 3, -1),
                         x[:, 1:3, ::2, 0], jnp.flip(x, axis=1), *jnp.split(x, [1, 2], axis=1), x[..., None, :]),
    "pad": lambda x: jnp.pad(x, ((0, 0), (1, 2), (0, 1), (0, 0)), constant_values=0.5),
    "dynamic": _updated,
    "cumsum": lambda x: jnp.cumsum(x, axis=1) + jax.lax.cumsum(x, axis=2, reverse=True),
    "stack": lambda x: (jnp.stack([x, x * 2], axis=-1), jnp.stack([x[0], x[1]], axis=0)),
    "tile": lambda x: jnp.tile(x[:1], (2, 1, 1, 2)) + jnp.tile(x, (1, 1, 1, 1)).sum(),
    "take": lambda x: jnp.take(x, jnp.array([3, 0, 1]), axis=2) * 2,
    "einsum": lambda x: jnp.einsum("bhwc,bhvc->bhwv", x, x) + jnp.einsum("bhwc,bhwc->bw", x, x)[:, None, :, None],
    "window": _window_min,
    "integer_ops": lambda x: (x * 4).astype("int32") // 3 + (x * 4).astype("int32") % 3,
    "bitwise_ints": lambda x: ((x * 4).astype("int32") & 6) | ~(x * 2).astype("int32") ^ (x > 0).astype("int32"),
    "calls": lambda x: jax.checkpoint(lambda v: jnp.tanh(v) + _doubled_sin(v))(x) + jax.lax.stop_gradient(x),
    "cond": lambda x: jax.lax.cond(np.int32(1), lambda v: v * 2, lambda v: v - 1, x),
}


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_plain_jax_functions(name):
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 3)).astype("float32")
    fn = _FUNCTIONS[name]
    graph = lower_jaxpr(jax.make_jaxpr(fn)(x), ["x"], {})
    _check(graph, [x], jax.tree.leaves(fn(x)))


def test_inlined_jaxpr_keeps_iota_and_weight_rearrangements_as_nodes():
    """inline_jaxpr (traced Keras layers): an arange of the input's length stays nodes (cumsum), so it can follow
    a free dim, and a table read as is and transposed stays one parameter."""
    table = np.arange(12, dtype="float32").reshape(4, 3)
    fn = lambda w, x: (x + jnp.arange(x.shape[1], dtype="float32")) @ w.T + w[jnp.arange(2)].sum()  # noqa: E731
    builder = GraphBuilder("inline")
    x = builder.input("x", TensorType((2, 3), "float32"))
    outs, failures = inline_jaxpr(builder, jax.make_jaxpr(fn)(table, np.zeros((2, 3), "float32")),
                                  [Const(table, "w", True), x], "layer")
    graph = builder.finish(outs)
    assert not failures and any(n.op.name == "cumsum" for n in graph.nodes)
    assert [n for n in graph.params if graph.params[n].size > 1] == ["w"]
    arrays = [np.random.default_rng(0).standard_normal((2, 3)).astype("float32")]
    _check(graph, arrays, fn(table, arrays[0]))


def test_weights_become_named_params_and_fold():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 3, 2, 4)).astype("float32"), rng.standard_normal((1, 4, 4, 2)).astype("float32")
    graph = lower_jaxpr(jax.make_jaxpr(lambda w, x: _lax_conv_transpose(x, w))(w, x), ["x"], {"up.kernel": w})
    _check(graph, [x], _lax_conv_transpose(x, w))
    assert list(graph.params) == ["up.weight"]


def test_large_broadcast_of_a_constant_stays_an_expand():
    x = np.ones((64, 128), "float32")
    graph = lower_jaxpr(jax.make_jaxpr(lambda x: x + jnp.full((64, 128), 2.0))(x), ["x"], {})
    _check(graph, [x], x + 2)
    assert max(a.size for a in graph.params.values()) == 1
    assert "expand" in {n.op.name for n in graph.nodes}


def test_unsupported_primitives_are_collected():
    def fn(x):
        y = jax_unsupported(x) + jax_unsupported(x * 2)
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(y.shape, y.dtype), y)  # host code: never an IR op

    x = np.zeros((3, 4), "float32")
    expected = (r"2 unsupported ops: portx_test_unsupported at <top>, <top> \(x2\); "
                r"pure_callback at <top>")
    with pytest.raises(UnsupportedOps, match=expected) as info:
        lower_jaxpr(jax.make_jaxpr(fn)(x), ["x"], {})
    assert info.value.exit_code == 3


def test_scope_of_drops_transforms_and_einsum_specs():
    assert scope_of("multi_head_attention/vmap()/query/abc,cde->abde") == "multi_head_attention.query"
    assert scope_of("") == ""
