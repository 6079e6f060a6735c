"""Keras import rules read call arguments as Keras binds them (Note [keras call arguments] in
frontends/keras/call_args.py): every covered layer that takes more than one argument, called positionally and
by keyword, converts to the same model, checked against Keras on both targets (keras.ops operations too)."""
import keras
import numpy as np
import pytest
from keras import layers as L

from portx.errors import UnsupportedOps
from portx.frontends.keras.call_args import bind_arguments
from portx.frontends.keras.files import from_keras_model
from tests.support.harness import TARGETS
from tests.support.keras_harness import check_keras_model, seeded

B, T, F = 1, 5, 4


def _mask_array():
    mask = np.ones((B, T), dtype=bool)
    mask[0, 3:] = False
    return mask


def _softmax(positional):
    x, m = keras.Input((T, T)), keras.Input((T, T))
    y = L.Softmax()(x, m) if positional else L.Softmax()(x, mask=m)
    return keras.Model([x, m], y), [seeded((B, T, T)), (seeded((B, T, T), seed=1) > 0).astype("float32")]


def _recurrent_state(layer, n_states):
    def build(positional):
        keras.utils.set_random_seed(0)
        x, states = keras.Input((T, F)), [keras.Input((3,)) for _ in range(n_states)]
        rnn = layer(3, return_sequences=True)
        y = rnn(x, states) if positional else rnn(x, initial_state=states)
        return keras.Model([x, *states], y), [seeded((B, T, F))] + [seeded((B, 3), seed=i + 1) for i in range(n_states)]
    return build


def _recurrent_mask(positional):
    keras.utils.set_random_seed(0)
    x, m = keras.Input((T, F)), keras.Input((T,), dtype="bool")
    rnn = L.GRU(3)
    return keras.Model([x, m], rnn(x, None, m) if positional else rnn(x, mask=m)), [seeded((B, T, F)), _mask_array()]


def _bidirectional(positional):
    keras.utils.set_random_seed(0)
    x, states = keras.Input((T, F)), [keras.Input((3,)) for _ in range(2)]
    rnn = L.Bidirectional(L.SimpleRNN(3, return_sequences=True))
    y = rnn(x, states) if positional else rnn(x, initial_state=states)
    return keras.Model([x, *states], y), [seeded((B, T, F)), seeded((B, 3), seed=1), seeded((B, 3), seed=2)]


def _attention(positional):
    keras.utils.set_random_seed(0)
    q, v, k, am = keras.Input((T, F)), keras.Input((3, F)), keras.Input((3, F)), keras.Input((T, 3), dtype="bool")
    mha = L.MultiHeadAttention(2, 4)
    # Keras itself refuses the masks positionally (they are passed on to compute_output_spec by keyword)
    y = mha(q, v, k, attention_mask=am) if positional else mha(query=q, value=v, key=k, attention_mask=am)
    mask = np.ones((B, T, 3), dtype=bool)
    mask[:, :, 2] = False
    return keras.Model([q, v, k, am], y), [seeded((B, T, F)), seeded((B, 3, F), seed=1), seeded((B, 3, F), seed=2),
                                           mask]


def _ops(positional):
    """keras.ops operations bind the same way: ``take(x, indices=i)``, ``where(c, x1=a, x2=b)``, ``add(x1=, x2=)``."""
    x, i = keras.Input((T, F)), keras.Input((3,), dtype="int32")
    if positional:
        y = keras.ops.add(keras.ops.take(x, i, axis=1), 1.0)
        y = keras.ops.where(keras.ops.greater(y, 0.0), y, keras.ops.multiply(y, 0.1))
    else:
        y = keras.ops.add(x1=keras.ops.take(x, indices=i, axis=1), x2=1.0)
        y = keras.ops.where(keras.ops.greater(x1=y, x2=0.0), x1=y, x2=keras.ops.multiply(x1=y, x2=0.1))
    return keras.Model([x, i], y), [seeded((B, T, F)), np.array([[4, 0, 2]], dtype="int32")]


CASES = {"Softmax": _softmax, "LSTM": _recurrent_state(L.LSTM, 2),
         "GRU": _recurrent_state(L.GRU, 1), "SimpleRNN": _recurrent_state(L.SimpleRNN, 1), "GRU-mask": _recurrent_mask,
         "Bidirectional": _bidirectional, "MultiHeadAttention": _attention, "keras.ops": _ops}


@pytest.mark.parametrize("positional", [True, False], ids=["positional", "keyword"])
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("target", TARGETS)
def test_layer_arguments_bind_positionally_and_by_keyword(name, positional, target):
    model, arrays = CASES[name](positional)
    check_keras_model(model, *arrays, target=target, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("positional", [True, False], ids=["positional", "keyword"])
def test_a_masked_global_pool_is_refused_either_way(positional):
    """The rule has no masked mean: a positional mask must be refused too, never silently dropped."""
    x, m = keras.Input((T, F)), keras.Input((T,), dtype="bool")
    pool = L.GlobalAveragePooling1D()
    model = keras.Model([x, m], pool(x, m) if positional else pool(x, mask=m))
    with pytest.raises(UnsupportedOps, match="global pooling with a mask"):
        from_keras_model(model, ()).lower("model")


def test_bind_arguments_names_positional_and_keyword_arguments():
    x, m = object(), object()
    assert bind_arguments(L.Softmax(), (x, m), {}) == {"inputs": x, "mask": m}
    assert bind_arguments(L.Softmax(), (x,), {"mask": m}) == {"inputs": x, "mask": m}
    assert bind_arguments(L.LSTM(2), (x, [m]), {}) == {"sequences": x, "initial_state": [m]}
