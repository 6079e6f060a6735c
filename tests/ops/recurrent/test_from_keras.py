"""Keras LSTM, GRU, SimpleRNN and Bidirectional -> one IR recurrent node -> both targets, against Keras."""
import keras
import numpy as np
import pytest
from keras import layers as L

from portx.errors import UnsupportedOps
from portx.frontends.keras.files import from_keras_model
from tests.support.keras_harness import check_keras_layer, check_keras_model, keras_case, seeded, single_layer

T, C, H = 5, 4, 6
SEQ = (T, C)

CASES = [
    keras_case(lambda: L.LSTM(H), SEQ, id="LSTM"),
    keras_case(lambda: L.LSTM(H, return_sequences=True, return_state=True), SEQ, id="LSTM-sequences-state"),
    keras_case(lambda: L.LSTM(H, go_backwards=True, use_bias=False, return_sequences=True), SEQ,
               id="LSTM-go-backwards-no-bias"),
    keras_case(lambda: L.GRU(H, return_sequences=True, return_state=True), SEQ, id="GRU-sequences-state"),
    keras_case(lambda: L.GRU(H, go_backwards=True, dropout=0.2), SEQ, id="GRU-go-backwards-dropout"),
    keras_case(lambda: L.GRU(H, reset_after=False, return_sequences=True, return_state=True), SEQ,
               id="GRU-reset-before"),
    keras_case(lambda: L.GRU(H, reset_after=False, use_bias=False), SEQ, id="GRU-reset-before-no-bias"),
    keras_case(lambda: L.SimpleRNN(H, return_sequences=True), SEQ, id="SimpleRNN"),
    keras_case(lambda: L.SimpleRNN(H, activation="relu", return_state=True), SEQ, id="SimpleRNN-relu-state"),
    keras_case(lambda: L.Bidirectional(L.LSTM(H, return_sequences=True)), SEQ, id="Bidirectional-LSTM-concat"),
    keras_case(lambda: L.Bidirectional(L.LSTM(H, return_state=True), merge_mode="sum"), SEQ,
               id="Bidirectional-LSTM-sum-state"),
    keras_case(lambda: L.Bidirectional(L.GRU(H, return_sequences=True), merge_mode="mul"), SEQ,
               id="Bidirectional-GRU-mul"),
    keras_case(lambda: L.Bidirectional(L.GRU(H), merge_mode="ave"), SEQ, id="Bidirectional-GRU-ave"),
    keras_case(lambda: L.Bidirectional(L.GRU(H, use_bias=False)), SEQ, id="Bidirectional-GRU-concat-last-no-bias"),
    keras_case(lambda: L.Bidirectional(L.SimpleRNN(H, return_sequences=True), merge_mode=None), SEQ,
               id="Bidirectional-SimpleRNN-no-merge"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_recurrent_layer(target, make, shapes, options):
    graph = check_keras_layer(make, shapes, target=target, **options)
    assert sum(n.op.family == "recurrent" for n in graph.nodes) == 1


def _functional(build, *shapes):
    inputs = [keras.Input(s) for s in shapes]
    return keras.Model(inputs, build(*inputs))


STATE_CASES = [
    pytest.param(lambda x, h, c: L.LSTM(H, return_sequences=True)(x, initial_state=[h, c]), [SEQ, (H,), (H,)],
                 id="LSTM-initial-state"),
    pytest.param(lambda x, h: L.GRU(H, return_state=True)(x, initial_state=h), [SEQ, (H,)], id="GRU-initial-state"),
    pytest.param(lambda x, fh, fc, bh, bc: L.Bidirectional(L.LSTM(H, return_sequences=True, return_state=True))(
        x, initial_state=[fh, fc, bh, bc]), [SEQ] + [(H,)] * 4, id="Bidirectional-LSTM-initial-state"),
    pytest.param(lambda x: L.LSTM(H)(L.LSTM(H, return_sequences=True)(x)), [SEQ], id="stacked-LSTM"),
    pytest.param(lambda x: L.RNN(L.StackedRNNCells([L.LSTMCell(H), L.GRUCell(3), L.SimpleRNNCell(2)]),
                                 return_sequences=True, return_state=True, go_backwards=True)(x), [SEQ],
                 id="StackedRNNCells-sequences-state-backwards"),
]


@pytest.mark.parametrize("build, shapes", STATE_CASES)
def test_keras_recurrent_model(target, build, shapes):
    keras.utils.set_random_seed(0)
    arrays = [seeded((2,) + tuple(s), seed=i) for i, s in enumerate(shapes)]
    check_keras_model(_functional(build, *shapes), *arrays, target=target)


REFUSED = [
    (lambda: L.LSTM(H, activation="relu"), "LSTM lstm.*activation='relu'"),
    (lambda: L.GRU(H, recurrent_activation="hard_sigmoid"), "GRU gru.*recurrent_activation='hard_sigmoid'"),
    (lambda: L.LSTM(H, recurrent_dropout=0.2), "LSTM lstm.*recurrent_dropout=0.2"),
    (lambda: L.SimpleRNN(H, activation="sigmoid"), "SimpleRNN simple_rnn.*activation='sigmoid'"),
    (lambda: L.Bidirectional(L.LSTM(H), backward_layer=L.LSTM(H + 1, go_backwards=True)),
     "Bidirectional bidirectional.*units"),
]


@pytest.mark.parametrize("make, message", REFUSED, ids=[m.split(".")[0] for _, m in REFUSED])
def test_keras_recurrent_refusals_name_the_layer_and_option(make, message):
    keras.utils.set_random_seed(0)
    model = single_layer(make(), SEQ)
    with pytest.raises(UnsupportedOps, match=message):
        from_keras_model(model, ()).lower("model")


def _padded(length, value):
    """A batch of 3 whose time steps are masked (``value``) at the end, at the start and in the middle."""
    steps = np.ones((3, T), bool)
    steps[0, 3:], steps[1, :2], steps[2, 1:3] = False, False, False
    return np.where(steps[..., None] if value is not None else steps, seeded((3, T, C)) if value is not None
                    else np.random.default_rng(0).integers(1, length, (3, T)), 0).astype(
                        "float32" if value is not None else "int32")


MASKED = [
    pytest.param(lambda x: L.LSTM(H, return_sequences=True, return_state=True)(L.Masking(0.0)(x)), "float32",
                 id="Masking-LSTM-sequences-state"),
    pytest.param(lambda x: L.GRU(H, go_backwards=True, return_sequences=True)(L.Embedding(10, C, mask_zero=True)(x)),
                 "int32", id="Embedding-mask_zero-GRU-backwards"),
    pytest.param(lambda x: L.SimpleRNN(H, return_sequences=True)(L.Embedding(10, C, mask_zero=True)(x)), "int32",
                 id="Embedding-mask_zero-SimpleRNN"),
    pytest.param(lambda x: L.GRU(H, reset_after=False, return_state=True)(L.Masking(0.0)(x)), "float32",
                 id="Masking-GRU-reset-before"),
    pytest.param(lambda x: L.RNN(L.StackedRNNCells([L.LSTMCell(H), L.GRUCell(3)]), return_sequences=True)(
        L.Masking(0.0)(x)), "float32", id="Masking-StackedRNNCells"),
]


@pytest.mark.parametrize("build, dtype", MASKED)
def test_keras_masks_into_recurrent_layers(target, build, dtype):
    # Note [recurrent masks]: masked steps keep the state and repeat the previous output (zeros before any step)
    keras.utils.set_random_seed(0)
    x = keras.Input(SEQ if dtype == "float32" else (T,), dtype=dtype)
    model = keras.Model(x, build(x))
    check_keras_model(model, _padded(10, 0.0 if dtype == "float32" else None), target=target)


@pytest.mark.parametrize("reader", [lambda: L.Bidirectional(L.LSTM(H)), L.GlobalAveragePooling1D],
                         ids=["Bidirectional", "GlobalAveragePooling1D"])
def test_keras_masks_into_other_layers_are_refused(reader):
    ids = keras.Input((T,), dtype="int32")
    x = L.Embedding(10, C, mask_zero=True)(ids)
    model = keras.Model(ids, reader()(x))
    with pytest.raises(UnsupportedOps, match="Keras mask"):
        from_keras_model(model, ()).lower("model")
