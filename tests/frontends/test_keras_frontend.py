"""Keras frontend: loading (.keras, .h5, live), walking (nested, shared, multi-IO) and refusals.

Example:
    pytest tests/frontends/test_keras_frontend.py -k nested
"""
import keras
import numpy as np
import pytest
from keras import layers as L

from portx.errors import BadInput, UnsupportedOps
from portx.frontends.keras import DEFAULT_LENGTH, rule_key
from portx.frontends.keras.files import from_keras_model, load_keras_source
from portx.ops.linear import LINEAR
from tests.support.keras_harness import check_keras_model, randomize_weights, seeded, single_layer
from tests.support.unsupported import AlsoUnsupportedLayer, UnsupportedLayer, unsupported_op

__all__ = []

#: the target these tests emit: they check the Keras walk; every op family runs on both targets in tests/ops
TARGET = "torch-xla"


def _small_cnn(name="cnn"):
    x = keras.Input((6, 6, 3), name="image")
    y = L.Conv2D(4, 3, padding="same", activation="relu", name="conv")(x)
    y = L.BatchNormalization(name="bn")(y)
    y = L.GlobalAveragePooling2D(name="gap")(y)
    return keras.Model(x, L.Dense(2, name="head")(y), name=name)


def _assert_same(src, arrays, graph=None):
    from portx.verification.compare import run_reference

    graph = graph or src.lower()
    values = run_reference(graph, arrays)
    for expected, out in zip(src.run(*arrays), graph.outputs):
        np.testing.assert_allclose(values[out], expected, atol=1e-5, rtol=1e-5)
    return graph


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_loads_saved_file_and_matches(tmp_path, suffix):
    model = _small_cnn()
    randomize_weights(model)
    path = tmp_path / f"m{suffix}"
    model.save(path)
    src = load_keras_source(path)
    assert src.label == path.name and src.input_types[0].shape == (1, 6, 6, 3)
    _assert_same(src, [seeded((1, 6, 6, 3))])


def test_sequential_live_model():
    model = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="tanh", name="d1"), L.Dense(3, name="d2")])
    graph = check_keras_model(model, seeded((1, 5)), target=TARGET)
    assert [n.scope for n in graph.nodes if n.op is LINEAR] == ["d1", "d2"]


def test_lazily_built_nested_sequential():
    x = keras.Input((3,))
    model = keras.Model(x, keras.Sequential([L.Dense(2, name="inner")], name="lazy")(x))
    graph = check_keras_model(model, seeded((1, 3)), target=TARGET)
    assert "lazy.inner.weight" in graph.params


def test_mixed_precision_policy_is_noted():
    x = keras.Input((3,))
    model = keras.Model(x, L.Dense(2, dtype="mixed_bfloat16", name="half")(x))
    src = from_keras_model(model)
    assert any("half" in note and "bfloat16" in note for note in src.notes)
    assert src.lower().outputs[0].type.shape == (1, 2)


def test_unbuilt_sequential_is_refused():
    with pytest.raises(BadInput, match="not built"):
        from_keras_model(keras.Sequential([L.Dense(2)]))


def test_nested_models_get_dotted_scopes():
    inner = _small_cnn("block1")
    seq = keras.Sequential([keras.Input((2,)), L.Dense(2, name="proj")], name="tail")
    x = keras.Input((6, 6, 3))
    model = keras.Model(x, seq(inner(x)))
    graph = check_keras_model(model, seeded((1, 6, 6, 3)), target=TARGET)
    scopes = {n.scope for n in graph.nodes}
    assert {"block1.conv", "block1.bn", "block1.head", "tail.proj"} <= scopes
    assert "block1.conv.weight" in graph.params
    # each layer's class, as torch records its modules' (block classes are named after it)
    classes = graph.meta["module_classes"]
    assert classes["block1.conv"] == "Conv2D" and classes["tail.proj"] == "Dense", classes


def test_shared_layer_keeps_one_weight_set():
    shared = L.Dense(3, name="shared")
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    model = keras.Model([a, b], L.Add()([shared(a), shared(shared(b))]))
    graph = check_keras_model(model, seeded((1, 3)), seeded((1, 3), seed=1), target=TARGET)
    assert sorted(graph.params) == ["shared.bias", "shared.weight"]
    assert sum(n.op is LINEAR for n in graph.nodes) == 3


def test_layer_shared_between_nested_and_outer_model():
    conv = L.Conv2D(2, 3, padding="same", name="conv")
    x = keras.Input((4, 4, 2))
    sub = keras.Model(x, conv(x), name="sub")
    y = keras.Input((4, 4, 2))
    graph = check_keras_model(keras.Model(y, L.Add()([sub(y), conv(y)])), seeded((1, 4, 4, 2)), target=TARGET)
    assert sorted(graph.params) == ["sub.conv.bias", "sub.conv.weight"]


def test_multiple_inputs_and_outputs():
    a, b = keras.Input((4,), name="a"), keras.Input((2, 2), name="b")
    joined = L.Concatenate()([a, L.Flatten()(b)])
    model = keras.Model([a, b], [L.Dense(2, name="left")(joined), L.Dense(3, name="right")(joined), joined])
    graph = check_keras_model(model, seeded((1, 4)), seeded((1, 2, 2), seed=1), target=TARGET)
    assert [v.name for v in graph.inputs] == ["a", "b"]
    assert [v.type.shape for v in graph.outputs] == [(1, 2), (1, 3), (1, 8)]


def test_unknown_dimension_gets_an_example_size_and_stays_free():
    """Note [keras free input dims]: 8 by default, capped by a stated sequence limit; --input still overrides."""
    model = keras.Sequential([keras.Input((None, 3), name="seq_in"), L.Dense(2)])
    src = from_keras_model(model)
    assert src.input_types[0].shape == (1, DEFAULT_LENGTH, 3)
    assert src.dynamic_dims() == [{"symbol": "seq_in_1", "sites": [[0, 1]], "min": 1, "max": None, "declared": True}]
    graph = check_keras_model(model, seeded((1, 5, 3)), specs=["seq_in:1x5x3"], target=TARGET)
    assert graph.inputs[0].type.shape == (1, 5, 3)
    image = keras.Sequential([keras.Input((None, None, 3), name="img"), L.Conv2D(2, 3)])
    with pytest.raises(BadInput, match=r"img.*image or volume size unknown.*--input img:SHAPE, e.g. img:1x224x224x3"):
        from_keras_model(image)


class _Positions(L.Layer):
    """A learned position table of ``sequence_length`` rows, sliced to the input's length (keras-hub style)."""

    def __init__(self, sequence_length, **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = sequence_length

    def build(self, shape):
        self.table = self.add_weight(shape=(self.sequence_length, shape[-1]), name="table")

    def call(self, x):
        return x + keras.ops.convert_to_tensor(self.table)[None, :keras.ops.shape(x)[1]]

    def compute_output_shape(self, shape):
        return shape

    def get_config(self):
        return {**super().get_config(), "sequence_length": self.sequence_length}


class _Tied(L.Layer):
    """Embeds ids and scores them against the same table (a tied input/output embedding) around a Dense."""

    def build(self, shape):
        self.table = self.add_weight(shape=(11, 4), name="embeddings")
        self.mix = L.Dense(4, name="mix")

    def call(self, ids):
        h = self.mix(keras.ops.take(self.table, ids, axis=0))
        return keras.ops.matmul(h, keras.ops.transpose(self.table))


def test_composite_layers_are_traced_with_named_weights_stored_once():
    ids = keras.Input((None,), dtype="int32", name="ids")
    h = _Tied(name="tied")(ids)
    model = keras.Model(ids, _Positions(6, name="pos")(h))
    src = from_keras_model(model)
    assert src.input_types[0].shape == (1, 6) and src.dynamic_dims()[0]["max"] == 6
    randomize_weights(model)
    graph = check_keras_model(model, np.array([[3, 0, 10, 2]], "int32"), specs=["ids:1x4"], target=TARGET)
    weights = ["pos.table", "tied.embeddings", "tied.mix.bias", "tied.mix.weight"]  # the tied table once
    assert sorted(p for p in graph.params if not p.startswith("scalar")) == weights
    assert graph.meta["trainable"] == weights
    assert graph.meta["module_classes"]["tied"] == "_Tied"  # a traced layer's class too


def test_input_spec_with_wrong_name_is_refused():
    with pytest.raises(BadInput, match="no input of that name.*image"):
        from_keras_model(_small_cnn(), ["x:1x6x6x3"])


def _halved_tanh(x):
    return keras.activations.tanh(x) / 2  # a Python function as activation: traced inside Dense's rule


class _Block(L.Layer):
    """A transformer-ish block of known layers and keras.ops (Note [keras sublayer calls])."""

    def __init__(self, scores=False, **kwargs):
        super().__init__(**kwargs)
        self.scores = scores  # return_attention_scores: a variant the MultiHeadAttention rule refuses

    def build(self, shape):
        self.norm = L.LayerNormalization(name="norm")
        self.attn = L.MultiHeadAttention(num_heads=2, key_dim=4, name="attn")
        self.mlp = L.Dense(shape[-1], activation=_halved_tanh, name="mlp")

    def call(self, x):
        h = self.norm(x)
        a = self.attn(h, h, return_attention_scores=True)[0] if self.scores else self.attn(h, h)
        return x + self.mlp(a * keras.ops.sigmoid(h))


@pytest.mark.parametrize("scores", [False, True])
def test_known_sublayers_of_a_traced_layer_import_by_their_rules(scores):
    """Known sublayers go through their rules; one whose rule refuses its variant is traced through alone."""
    x = keras.Input((5, 8), name="x")
    model = keras.Model(x, _Block(scores, name="block")(x))
    graph = check_keras_model(model, seeded((1, 5, 8)), target=TARGET)
    ops = {n.op.name for n in graph.nodes}
    assert {"layer_norm", "sigmoid", "tanh"} <= ops and ("attention" in ops) is not scores
    attn = "block.attn.query.kernel" if scores else "block.attn.query.weight"
    assert {attn, "block.mlp.weight", "block.norm.weight"} <= set(graph.params)
    assert set(graph.meta["trainable"]) == {p for p in graph.params if graph.params[p].size > 1}


def test_every_unsupported_layer_is_listed():
    x = keras.Input((4, 3))
    y = UnsupportedLayer(name="odd")(x)
    y = AlsoUnsupportedLayer(name="odder")(y)
    y = L.Lambda(lambda t: t * 2, name="twice")(y)  # traced (Note [keras composite layers]): not listed
    model = keras.Model(x, L.Dense(2)(y))
    traced = r" \[traced through its call; no import rule for JAX primitive portx_test_unsupported\]"
    with pytest.raises(UnsupportedOps, match=rf"2 unsupported ops: UnsupportedLayer at odd{traced}; "
                                             rf"AlsoUnsupportedLayer at odder{traced}\.") as err:
        from_keras_model(model).lower()
    assert err.value.exit_code == 3


def test_keras_ops_are_keyed_with_ops_prefix():
    x = keras.Input((3,))
    model = keras.Model(x, unsupported_op(L.Dense(3, name="d")(x)))
    op = model.operations[-1]
    assert rule_key(op) == "ops.UnsupportedOp" and rule_key(model.get_layer("d")) == "Dense"
    with pytest.raises(UnsupportedOps, match=r"ops\.UnsupportedOp"):
        from_keras_model(model).lower()


def test_batch_of_two_via_input_spec():
    model = single_layer(L.Conv2D(2, 3, padding="same"), (5, 5, 3))
    graph = check_keras_model(model, seeded((2, 5, 5, 3)), specs=["2x5x5x3"], target=TARGET)
    assert graph.inputs[0].type.shape == (2, 5, 5, 3)


def _lambda_model():
    x = keras.Input((4,))
    return keras.Model(x, L.Lambda(lambda t: t * 2, name="double")(L.Dense(3, name="d1")(x)))


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_lambda_file_refused_in_safe_mode(tmp_path, suffix):
    path = tmp_path / f"lam{suffix}"
    _lambda_model().save(path)
    with pytest.raises(BadInput, match=r"lam.*Lambda layer double.*--unsafe-keras.*code then runs") as err:
        load_keras_source(path)
    assert err.value.exit_code == 2


def test_lambda_file_with_unsafe_loads_then_lowers_to_the_ops_it_computes(tmp_path):
    path = tmp_path / "lam.keras"
    _lambda_model().save(path)
    graph = load_keras_source(path, unsafe=True).lower()
    assert any(n.op.name == "mul" and n.scope.startswith("double") for n in graph.nodes), \
        [(n.op.name, n.scope) for n in graph.nodes]


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_unregistered_custom_class_refused(tmp_path, suffix):
    @keras.saving.register_keras_serializable(package="portxtest")
    class PlusOne(L.Layer):
        def call(self, x):
            return x + 1

    x = keras.Input((3,))
    path = tmp_path / f"custom{suffix}"
    keras.Model(x, PlusOne(name="plus_one")(x)).save(path)
    del keras.saving.get_custom_objects()["portxtest>PlusOne"]
    with pytest.raises(BadInput, match=r"custom.(keras|h5): layer plus_one has custom class PlusOne.*register_keras_serializable"
                                        r".*live model"):
        load_keras_source(path)


@pytest.mark.parametrize("name,content,message", [
    ("bad.keras", b"not a zip at all", "not a readable .keras archive"),
    ("bad.h5", b"\x89HDF\r\n garbage", "not a readable HDF5 file"),
    ("empty.keras", b"", "is empty"),
    ("model.pb", b"\x00\x01", "unknown Keras model format .pb"),
])
def test_garbage_files_are_bad_input(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(BadInput, match=message) as err:
        load_keras_source(path)
    assert name in str(err.value)


def test_truncated_keras_file(tmp_path):
    path = tmp_path / "cut.keras"
    _small_cnn().save(path)
    path.write_bytes(path.read_bytes()[:400])
    with pytest.raises(BadInput, match="cut.keras"):
        load_keras_source(path)


def test_weights_only_h5_is_refused(tmp_path):
    path = tmp_path / "m.weights.h5"
    _small_cnn().save_weights(path)
    with pytest.raises(BadInput, match="weights but no model architecture"):
        load_keras_source(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        load_keras_source(tmp_path / "nope.keras")
    with pytest.raises(BadInput, match="is a directory"):
        load_keras_source(tmp_path)
