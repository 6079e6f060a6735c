"""Keras import checks for preprocessing, resizing, embedding, attention and keras.ops layers.

Each case is a tiny functional model with fixed seeds: lowered, validated, and the IR's NumPy
reference compared with Keras (JAX backend) at 1e-5; nearest resizes must match exactly.

Example:
    pytest tests/frontends/test_keras_layers_more.py -k Resizing
"""
import keras
import numpy as np
import pytest
from keras import layers as L
from keras import ops

from keras_harness import check_keras_model, seeded, single_layer
from portx.ops.resize import RESIZE
from portx.ops.resize.from_keras import jax_resize_matrix, keras_nearest_table
from portx.ops.shape.index import INDEX_SELECT

__all__ = []


def _adapted_normalization(**kwargs):
    layer = L.Normalization(**kwargs)
    layer.adapt(seeded((16, 4, 4, 3), seed=3) * 2.0 + 1.0)
    return layer


# id: (layer factory, batchless input shapes, atol)
CASES = {
    "Rescaling": (lambda: L.Rescaling(1 / 255.0), [(4, 4, 3)], 1e-5),
    "Rescaling-offset-per-channel": (lambda: L.Rescaling(np.array([0.5, 2.0, -1.0]), offset=-1.0), [(4, 4, 3)], 1e-5),
    "Normalization-adapted": (_adapted_normalization, [(4, 4, 3)], 1e-5),
    "Normalization-adapted-axis-none": (lambda: _adapted_normalization(axis=None), [(4, 4, 3)], 1e-5),
    "Normalization-given-axis-1-2": (lambda: L.Normalization(axis=(1, 2), mean=np.arange(12.0).reshape(4, 3),
                                                             variance=np.linspace(0.5, 3.0, 12).reshape(4, 3)),
                                     [(4, 3, 2)], 1e-5),
    "Normalization-invert": (lambda: L.Normalization(mean=[0.5, -1.0, 2.0], variance=[4.0, 0.25, 0.0], invert=True),
                             [(5, 3)], 1e-5),
    "Resizing-bilinear-up": (lambda: L.Resizing(7, 10), [(4, 6, 2)], 1e-5),
    "Resizing-bilinear-down": (lambda: L.Resizing(3, 5, interpolation="bilinear"), [(8, 9, 2)], 1e-5),
    "Resizing-bilinear-antialias": (lambda: L.Resizing(3, 4, antialias=True), [(8, 9, 2)], 1e-5),
    "Resizing-bicubic-up": (lambda: L.Resizing(9, 7, interpolation="bicubic"), [(4, 5, 2)], 1e-5),
    "Resizing-bicubic-down": (lambda: L.Resizing(3, 4, interpolation="bicubic"), [(7, 9, 2)], 1e-5),
    "Resizing-lanczos3": (lambda: L.Resizing(6, 9, interpolation="lanczos3"), [(4, 5, 2)], 1e-5),
    "Resizing-crop-to-aspect": (lambda: L.Resizing(4, 4, crop_to_aspect_ratio=True), [(6, 9, 2)], 1e-5),
    "Resizing-pad-to-aspect": (lambda: L.Resizing(4, 4, pad_to_aspect_ratio=True, fill_value=0.5), [(6, 9, 2)],
                               1e-5),
    "Resizing-channels-first": (lambda: L.Resizing(5, 7, data_format="channels_first"), [(2, 4, 6)], 1e-5),
    "UpSampling2D-nearest": (lambda: L.UpSampling2D((2, 3)), [(3, 4, 2)], 0.0),
    "UpSampling2D-bilinear": (lambda: L.UpSampling2D(2, interpolation="bilinear"), [(3, 4, 2)], 1e-5),
    "UpSampling2D-bicubic": (lambda: L.UpSampling2D(2, interpolation="bicubic"), [(3, 4, 2)], 1e-5),
    "UpSampling2D-channels-first": (lambda: L.UpSampling2D(2, data_format="channels_first"), [(2, 3, 3)], 0.0),
    "UpSampling1D": (lambda: L.UpSampling1D(3), [(4, 2)], 0.0),
    "UpSampling3D": (lambda: L.UpSampling3D((2, 1, 2)), [(2, 3, 2, 2)], 0.0),
    "EinsumDense": (lambda: L.EinsumDense("abc,cd->abd", (4, 5), bias_axes="d"), [(4, 3)], 1e-5),
    "EinsumDense-heads": (lambda: L.EinsumDense("abc,cde->abde", (4, 2, 3), bias_axes="de", activation="relu"),
                          [(4, 3)], 1e-5),
    "EinsumDense-reduce-in": (lambda: L.EinsumDense("abcd,cde->abe", (4, 5)), [(4, 2, 3)], 1e-5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_keras_layer_matches_reference(case):
    make, shapes, atol = CASES[case]
    keras.utils.set_random_seed(0)
    model = single_layer(make(), *shapes)
    arrays = [seeded((1,) + s, seed=i) for i, s in enumerate(shapes)]
    check_keras_model(model, *arrays, atol=atol, rtol=atol, randomize=False)


# 6 -> 37 rows: no torch nearest mode gives Keras' table, so that case lowers to stored-index gathers.
NEAREST_SIZES = [((4, 6), (6, 9)), ((6, 9), (4, 6)), ((5, 7), (8, 3)), ((3, 3), (6, 6)), ((7, 5), (7, 13)),
                 ((10, 10), (3, 17)), ((6, 3), (37, 5))]


@pytest.mark.parametrize("sizes", NEAREST_SIZES, ids=lambda s: f"{s[0]}->{s[1]}")
def test_nearest_resizing_is_exact(sizes):
    (h, w), (oh, ow) = sizes
    model = single_layer(L.Resizing(oh, ow, interpolation="nearest"), (h, w, 2))
    graph = check_keras_model(model, seeded((2, h, w, 2)), atol=0.0, rtol=0.0, specs=[f"2x{h}x{w}x2"],
                              randomize=False)
    want = INDEX_SELECT if sizes == ((6, 3), (37, 5)) else RESIZE
    assert any(n.op is want for n in graph.nodes)


def test_nearest_table_and_weights_follow_jax():
    import jax

    for m, n in ((2, 41), (10, 25), (6, 37), (14, 23), (20, 47), (299, 224), (224, 299), (7, 3)):
        x = np.arange(float(m), dtype=np.float32)
        np.testing.assert_array_equal(x[keras_nearest_table(m, n)], jax.image.resize(x, (n,), "nearest"))
    x = np.arange(11.0, dtype=np.float32)
    for n in (4, 7, 11, 16, 23):
        got = jax.image.resize(x, (n,), "nearest")
        np.testing.assert_array_equal(x[keras_nearest_table(11, n)], got)
        for method, antialias in (("bilinear", False), ("bicubic", False), ("lanczos5", False), ("bilinear", True)):
            want = jax.image.resize(x, (n,), method, antialias=antialias)
            np.testing.assert_allclose(jax_resize_matrix(method, 11, n, antialias) @ x, want, atol=1e-5)


def test_embedding_int_and_float_ids():
    keras.utils.set_random_seed(0)
    ids = keras.Input((6,), dtype="int32")
    model = keras.Model(ids, L.Embedding(10, 4)(ids))
    check_keras_model(model, np.array([[0, 3, 9, 2, 2, 7]], np.int32))
    floats = keras.Input((5,))
    model = keras.Model(floats, L.Embedding(8, 3)(floats))
    check_keras_model(model, np.array([[0.0, 1.0, 7.0, 3.0, 2.0]], np.float32))


def _mha_model(layer, q_shape, v_shape=None, mask_shape=None, **call_kwargs):
    q = keras.Input(q_shape)
    inputs, args = [q], [q, q]
    if v_shape is not None:
        v = keras.Input(v_shape)
        inputs.append(v)
        args[1] = v
    if mask_shape is not None:
        m = keras.Input(mask_shape, dtype="bool")
        inputs.append(m)
        call_kwargs["attention_mask"] = m
    return keras.Model(inputs, layer(*args, **call_kwargs))


def _mask(shape, seed=5, hide_row=True):
    mask = np.random.default_rng(seed).random(shape) > 0.4
    if hide_row:
        mask[..., 0, :] = False  # a fully masked query row (Note [keras masked rows])
    return mask


MHA_CASES = {
    "self": (lambda: L.MultiHeadAttention(2, 4), (5, 6), None, None, {}),
    "cross-no-bias": (lambda: L.MultiHeadAttention(3, 2, use_bias=False), (4, 6), (7, 5), None, {}),
    "cross-value-dim": (lambda: L.MultiHeadAttention(3, 2, value_dim=5, dropout=0.2), (4, 6), (7, 5), None, {}),
    "causal": (lambda: L.MultiHeadAttention(2, 3), (6, 4), None, None, {"use_causal_mask": True}),
    "mask": (lambda: L.MultiHeadAttention(2, 3), (4, 6), (5, 6), (4, 5), {}),
    "mask-and-causal": (lambda: L.MultiHeadAttention(2, 3), (5, 6), None, (5, 5), {"use_causal_mask": True}),
    "mask-dropout-einsum-path": (lambda: L.MultiHeadAttention(2, 3, dropout=0.1), (4, 6), (5, 6), (4, 5), {}),
    "output-shape": (lambda: L.MultiHeadAttention(2, 3, output_shape=(2, 5)), (4, 6), None, None, {}),
    "image-default-axes": (lambda: L.MultiHeadAttention(2, 3), (3, 4, 5), None, None, {}),
    "image-axis-2": (lambda: L.MultiHeadAttention(2, 3, attention_axes=(2,)), (3, 4, 5), None, None, {}),
    "image-axes-mask": (lambda: L.MultiHeadAttention(2, 3, attention_axes=(2,)), (3, 4, 5), None, (3, 4, 4), {}),
}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_multi_head_attention(case):
    make, q_shape, v_shape, mask_shape, kwargs = MHA_CASES[case]
    keras.utils.set_random_seed(1)
    model = _mha_model(make(), q_shape, v_shape, mask_shape, **kwargs)
    arrays = [seeded((2,) + q_shape, seed=1)]
    specs = [f"2x{'x'.join(map(str, q_shape))}"]
    if v_shape is not None:
        arrays.append(seeded((2,) + v_shape, seed=2))
        specs.append(f"2x{'x'.join(map(str, v_shape))}")
    if mask_shape is not None:
        arrays.append(_mask((2,) + mask_shape))
        specs.append(f"2x{'x'.join(map(str, mask_shape))}")
    check_keras_model(model, *arrays, specs=specs)


def test_small_transformer_with_causal_mask():
    keras.utils.set_random_seed(2)
    ids = keras.Input((8,), dtype="int32", name="ids")
    pos = keras.Input((8,), dtype="int32", name="pos")
    h = L.Embedding(50, 16, name="tok")(ids) + L.Embedding(8, 16, name="pos_emb")(pos)
    for i in range(2):
        a = L.MultiHeadAttention(4, 4, name=f"attn{i}")(h, h, use_causal_mask=True)
        h = L.LayerNormalization(epsilon=1e-5, name=f"ln{i}a")(h + a)
        f = L.Dense(32, activation="gelu", name=f"ff{i}a")(h)
        h = L.LayerNormalization(epsilon=1e-5, name=f"ln{i}b")(h + L.Dense(16, name=f"ff{i}b")(f))
    logits = L.Dense(50, name="head")(h)
    model = keras.Model([ids, pos], logits)
    tokens = np.random.default_rng(0).integers(0, 50, (2, 8)).astype(np.int32)
    positions = np.tile(np.arange(8, dtype=np.int32), (2, 1))
    check_keras_model(model, tokens, positions, specs=["ids:2x8", "pos:2x8"], atol=2e-5, rtol=2e-5)


def _pos(x):
    return ops.abs(x) + 0.5


# id: (fn(*inputs) -> output, batchless input shapes)
OPS_CASES = {
    "add-sub-mul-div": (lambda x, y: ((x + y) * (x - 2.0)) / (ops.abs(y) + 1.0) - 1.5 * ops.divide(x, 3.0),
                        [(3, 4), (3, 4)]),
    "subtract-from-number": (lambda x: ops.subtract(1.0, x), [(3, 4)]),
    "power-square-sqrt": (lambda x, y: ops.power(_pos(x), y) + ops.square(x) + ops.sqrt(_pos(y)) + x ** 2,
                          [(3, 4), (3, 4)]),
    "max-min-where": (lambda x, y: ops.where(x > y, ops.maximum(x, 0.2), ops.minimum(y, x)), [(3, 4), (3, 4)]),
    "matmul-transpose": (lambda x, y: ops.matmul(x, ops.transpose(y, (0, 2, 1))) + x @ ops.transpose(y, (0, 2, 1)),
                         [(3, 4), (5, 4)]),
    "reshape-expand-squeeze": (lambda x: ops.squeeze(ops.expand_dims(ops.reshape(x, (-1, 2, 6)), 1), 1),
                               [(3, 4)]),
    "concatenate-stack-split": (lambda x, y: ops.concatenate([ops.stack([x, y], axis=1), ops.split(ops.stack(
        [y, x, x], axis=1), [1], axis=1)[1]], axis=1), [(3, 4), (3, 4)]),
    "mean-sum-max": (lambda x: ops.mean(x, axis=1) + ops.sum(x, axis=-1) + ops.max(x, axis=(1,)) + ops.min(x, axis=1)
                     + ops.sum(x, axis=(1, 2), keepdims=True)[:, 0], [(4, 4)]),
    "var-std-prod-logsumexp": (lambda x: ops.var(x, axis=-1) + ops.std(x, axis=-1) + ops.prod(x, axis=-1)
                               + ops.logsumexp(x, axis=-1), [(3, 4)]),
    "softmax-log-softmax": (lambda x: ops.softmax(x) + ops.log_softmax(x, axis=1) + ops.softmax(x, axis=(1, 2)),
                            [(3, 4)]),
    "activations": (lambda x: ops.relu(x) + ops.sigmoid(x) + ops.tanh(x) + ops.exp(x) + ops.erf(x) + ops.gelu(x)
                    + ops.gelu(x, approximate=False) + ops.silu(x) + ops.relu6(x * 4) + ops.leaky_relu(x)
                    + ops.elu(x) + ops.selu(x) + ops.softplus(x) + ops.hard_sigmoid(x) + ops.hard_silu(x), [(3, 4)]),
    "unary-math": (lambda x: ops.log(_pos(x)) + ops.rsqrt(_pos(x)) + ops.reciprocal(_pos(x)) + ops.negative(x)
                   + ops.sign(x) + ops.floor(x) + ops.ceil(x) + ops.sin(x) + ops.cos(x) + ops.clip(x, -0.5, 0.5),
                   [(3, 4)]),
    "compare-cast": (lambda x, y: ops.cast(ops.logical_and(x > 0, ops.less_equal(y, 0.5)), "float32")
                     + ops.cast(ops.logical_not(ops.equal(x, y)), "float32"), [(3, 4), (3, 4)]),
    "getitem": (lambda x: ops.concatenate([x[:, 1:3, ::2], x[:, ::-2, 1::2], x[..., 1:3, -3:]], axis=-1)[:, None, 0],
                [(4, 6)]),
    "getitem-int": (lambda x: x[:, 2] + x[:, -1, ::-1] + x[:, 0:1, 3][:, 0, None], [(4, 6)]),
    "take-tile-repeat": (lambda x: ops.take(x, [2, 0, 1], axis=1) + ops.tile(x[:, :1], (1, 3, 1))
                         + ops.repeat(x[:, :, :1], 3, axis=1)[:, :3], [(3, 2)]),
    "swapaxes-moveaxis-flip-roll": (lambda x: ops.swapaxes(x, 1, 2) + ops.moveaxis(ops.flip(x, 1), 1, 2)
                                    + ops.roll(ops.transpose(x, (0, 2, 1)), 1, axis=2), [(3, 4)]),
    "einsum": (lambda x, y: ops.einsum("btc,bsc->bts", x, y) + ops.einsum("bij,bkj->bki", x, y)
               + ops.einsum("bsc->bcs", y)[:, :3, :3], [(3, 4), (3, 4)]),
    "einsum-outer-and-sum": (lambda x, y: ops.einsum("bi,bj->bij", ops.sum(x, 1), ops.sum(y, 1))
                             + ops.einsum("bik,bjk->bij", x, y)[:, :1, :1], [(4, 4), (4, 4)]),
    "broadcast-pad": (lambda x: ops.pad(ops.broadcast_to(x[:, :1], (1, 3, 4)), ((0, 0), (1, 0), (2, 1))),
                      [(3, 4)]),
}


@pytest.mark.parametrize("case", sorted(OPS_CASES))
def test_keras_ops_match_reference(case):
    fn, shapes = OPS_CASES[case]
    inputs = [keras.Input(s) for s in shapes]
    model = keras.Model(inputs, fn(*inputs))
    check_keras_model(model, *[seeded((1,) + s, seed=i) for i, s in enumerate(shapes)], randomize=False)


def test_keras_ops_dot_product_attention():
    q, k = keras.Input((5, 2, 4)), keras.Input((6, 2, 4))
    m = keras.Input((2, 5, 6), dtype="bool")
    out = ops.dot_product_attention(q, k, k, mask=m) + ops.dot_product_attention(q, q, q, is_causal=True)
    model = keras.Model([q, k, m], out)
    check_keras_model(model, seeded((1, 5, 2, 4)), seeded((1, 6, 2, 4), seed=1), _mask((1, 2, 5, 6)),
                      randomize=False)


def test_convnext_custom_layers():
    from keras.src.applications.convnext import LayerScale, StochasticDepth

    keras.utils.set_random_seed(3)
    x = keras.Input((3, 3, 4))
    y = x + StochasticDepth(0.3)(LayerScale(0.5, 4)(L.Dense(4)(x)))
    check_keras_model(keras.Model(x, y), seeded((1, 3, 3, 4)))
