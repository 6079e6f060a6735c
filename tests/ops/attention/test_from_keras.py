"""Keras import of the attention family (MultiHeadAttention, ops.dot_product_attention): tiny functional
models with fixed seeds, lowered, validated, the IR's NumPy reference compared with Keras (JAX backend), then
each target's emitted model compared with Keras; and a small causal transformer built on them.

Example:
    pytest tests/ops/attention/test_from_keras.py -k mask
"""
import keras
import numpy as np
import pytest
from keras import layers as L
from keras import ops

from tests.support.keras_harness import check_keras_model, seeded


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


def _mha(make, q_shape, v_shape=None, mask_shape=None, *, id, **call_kwargs):
    """A row: layer factory, batchless query/value/mask shapes (None: absent), call options."""
    return pytest.param(make, q_shape, v_shape, mask_shape, call_kwargs, id=id)


CASES = [
    _mha(lambda: L.MultiHeadAttention(2, 4), (5, 6), id="self"),
    _mha(lambda: L.MultiHeadAttention(3, 2, use_bias=False), (4, 6), (7, 5), id="cross-no-bias"),
    _mha(lambda: L.MultiHeadAttention(3, 2, value_dim=5, dropout=0.2), (4, 6), (7, 5), id="cross-value-dim"),
    _mha(lambda: L.MultiHeadAttention(2, 3), (6, 4), use_causal_mask=True, id="causal"),
    _mha(lambda: L.MultiHeadAttention(2, 3), (4, 6), (5, 6), (4, 5), id="mask"),
    _mha(lambda: L.MultiHeadAttention(2, 3), (5, 6), None, (5, 5), use_causal_mask=True, id="mask-and-causal"),
    _mha(lambda: L.MultiHeadAttention(2, 3, dropout=0.1), (4, 6), (5, 6), (4, 5), id="mask-dropout-einsum-path"),
    _mha(lambda: L.MultiHeadAttention(2, 3, output_shape=(2, 5)), (4, 6), id="output-shape"),
    _mha(lambda: L.MultiHeadAttention(2, 3), (3, 4, 5), id="image-default-axes"),
    _mha(lambda: L.MultiHeadAttention(2, 3, attention_axes=(2,)), (3, 4, 5), id="image-axis-2"),
    _mha(lambda: L.MultiHeadAttention(2, 3, attention_axes=(2,)), (3, 4, 5), None, (3, 4, 4), id="image-axes-mask"),
]


@pytest.mark.parametrize("make, q_shape, v_shape, mask_shape, kwargs", CASES)
def test_multi_head_attention(target, make, q_shape, v_shape, mask_shape, kwargs):
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
    check_keras_model(model, *arrays, target=target, specs=specs)


def test_keras_ops_dot_product_attention(target):
    q, k = keras.Input((5, 2, 4)), keras.Input((6, 2, 4))
    m = keras.Input((2, 5, 6), dtype="bool")
    out = ops.dot_product_attention(q, k, k, mask=m) + ops.dot_product_attention(q, q, q, is_causal=True)
    model = keras.Model([q, k, m], out)
    check_keras_model(model, seeded((1, 5, 2, 4)), seeded((1, 6, 2, 4), seed=1), _mask((1, 2, 5, 6)),
                      target=target, randomize=False)


def test_small_transformer_with_causal_mask(target):
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
    check_keras_model(model, tokens, positions, target=target, specs=["ids:2x8", "pos:2x8"], atol=2e-5, rtol=2e-5)


def test_multi_head_attention_dropout_drops_attention_weights_in_torch_training_only(tmp_path):
    import portx
    import torch

    keras.utils.set_random_seed(0)
    model = _mha_model(L.MultiHeadAttention(2, 3, dropout=0.3), (4, 6))
    result = portx.convert(model, to="torch-xla", out=tmp_path / "o", grad=False)
    assert "dropout_p=0.3 if self.training else 0.0" in (tmp_path / "o" / "model.py").read_text()
    x = torch.randn(2, 4, 6)
    module = result.model.eval()
    np.testing.assert_allclose(module(x).detach().numpy(), np.asarray(model(x.numpy())), atol=1e-5)
    torch.manual_seed(0)
    assert not torch.allclose(module.train()(x), module.eval()(x))
