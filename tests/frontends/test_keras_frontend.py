"""Keras frontend: loading (.keras, .h5, live), walking (nested, shared, multi-IO) and refusals.

Example:
    pytest tests/frontends/test_keras_frontend.py -k nested
"""
import keras
import numpy as np
import pytest
from keras import layers as L

from portx.errors import BadInput, UnsupportedOps
from portx.frontends.keras import rule_key
from portx.frontends.keras_files import from_keras_model, load_keras_source
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


def test_unknown_dimension_needs_input_spec():
    model = keras.Sequential([keras.Input((None, 3), name="seq_in"), L.Dense(2)])
    with pytest.raises(BadInput, match=r"seq_in.*unknown dimension.*--input seq_in:"):
        from_keras_model(model)
    graph = check_keras_model(model, seeded((1, 5, 3)), specs=["seq_in:1x5x3"], target=TARGET)
    assert graph.inputs[0].type.shape == (1, 5, 3)


def test_input_spec_with_wrong_name_is_refused():
    with pytest.raises(BadInput, match="no input of that name.*image"):
        from_keras_model(_small_cnn(), ["x:1x6x6x3"])


def test_every_unsupported_layer_is_listed():
    x = keras.Input((4, 3))
    y = UnsupportedLayer(name="odd")(x)
    y = AlsoUnsupportedLayer(name="odder")(y)
    y = L.Lambda(lambda t: t * 2, name="twice")(y)
    model = keras.Model(x, L.Dense(2)(y))
    with pytest.raises(UnsupportedOps, match=r"3 unsupported ops: UnsupportedLayer at odd; AlsoUnsupportedLayer at "
                                             r"odder; Lambda at twice") as err:
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


def test_lambda_file_with_unsafe_loads_then_lists_lambda(tmp_path):
    path = tmp_path / "lam.keras"
    _lambda_model().save(path)
    src = load_keras_source(path, unsafe=True)
    with pytest.raises(UnsupportedOps, match="Lambda at double"):
        src.lower()


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
