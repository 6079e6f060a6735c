"""Keras folders as a source (Note [keras folders]): a keras-hub preset whose weights Keras 3 sharded
(``model.weights.json`` + ``model_0000k.weights.h5``) and an unzipped ``.keras``, converted to torch-xla and
verified; the variables get their values from the files only (no random copy first); hostile or broken folders
are refused naming the file.

Example:
    pytest tests/frontends/test_keras_preset.py
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import portx  # noqa: E402
from portx.errors import BadInput  # noqa: E402
from portx.frontends import load  # noqa: E402

keras_hub = pytest.importorskip("keras_hub")
torch = pytest.importorskip("torch")


def _llama_preset(folder, shard_gb=0.00003):
    """A 2-layer Llama 3 backbone saved by keras-hub with shards of about 32 KB (its weights are 100 KB)."""
    keras.utils.set_random_seed(0)
    model = keras_hub.models.Llama3Backbone(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64,
                                            num_query_heads=4, num_key_value_heads=2)
    model.save_to_preset(str(folder), max_shard_size=shard_gb)
    return model


@pytest.mark.slow  # a keras-hub Llama converts and verifies in about 50 s on the 2-core machine
def test_sharded_preset_converts_to_torch_and_verifies(tmp_path):
    model = _llama_preset(tmp_path / "preset")
    assert len(list((tmp_path / "preset").glob("model_*.weights.h5"))) >= 3
    result = portx.convert(tmp_path / "preset", to="torch-xla", out=tmp_path / "out", grad=False)
    assert result.ok and result.report["verification"]["passed"]
    ids = np.array([[1, 5, 7, 9, 2, 3]], dtype="int32")
    expected = np.asarray(model({"token_ids": ids, "padding_mask": np.ones_like(ids)}))
    with torch.no_grad():
        got = result.model(torch.from_numpy(ids), torch.ones(1, 6, dtype=torch.int32)).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_sharded_weights_folder_converts_to_torch_and_verifies(tmp_path):
    """The CI case: a functional model whose weights Keras 3 sharded, beside its config (as save_to_preset does)."""
    keras.utils.set_random_seed(0)
    x = keras.Input((6,), name="x")
    h = keras.layers.Dense(64, activation="relu", name="up")(x)
    h = keras.layers.Dense(64, activation="relu", name="mid")(keras.layers.Dense(64, name="mid0")(h))
    model = keras.Model(x, keras.layers.Dense(3, name="head")(h))
    model.save(tmp_path / "folder", zipped=False)
    (tmp_path / "folder" / "model.weights.h5").unlink()
    model.save_weights(tmp_path / "folder" / "model.weights.json", max_shard_size=0.00002)  # 21 KB of the 36 KB
    assert len(list((tmp_path / "folder").glob("model_*.weights.h5"))) >= 2
    from click.testing import CliRunner

    from portx.cli import main
    from portx.targets.torch_xla.runtime import load_folder

    run = CliRunner().invoke(main, ["convert", str(tmp_path / "folder"), "-o", str(tmp_path / "out"), "--no-grad"])
    assert run.exit_code == 0, run.output  # a Keras folder converts to torch-xla without --to
    assert json.loads((tmp_path / "out" / "report.json").read_text())["target"] == "torch-xla"
    data = np.random.default_rng(0).standard_normal((2, 6)).astype("float32")
    with torch.no_grad():
        got = load_folder(tmp_path / "out")(torch.from_numpy(data)).numpy()
    np.testing.assert_allclose(got, np.asarray(model(data)), atol=1e-5)


def test_variables_take_the_stored_values_without_a_random_copy(tmp_path, monkeypatch):
    model = _llama_preset(tmp_path / "preset")
    initialised = []
    from keras.src.backend.common.variables import Variable

    original = Variable._initialize_with_initializer
    monkeypatch.setattr(Variable, "_initialize_with_initializer",
                        lambda self, init: initialised.append(self.path) or original(self, init))
    src = load(tmp_path / "preset")
    assert initialised == []  # no variable ran its initializer: each got its value from the .h5 shards
    stored = {v.path: np.asarray(v) for v in model.variables}
    assert {v.path: np.asarray(v).tobytes() for v in src.model.variables} == {
        k: a.tobytes() for k, a in stored.items()}


def test_unzipped_keras_model_converts(tmp_path):
    keras.utils.set_random_seed(0)
    x = keras.Input((6,), name="x")
    model = keras.Model(x, keras.layers.Dense(3, activation="relu")(keras.layers.Dense(8)(x)))
    model.save(tmp_path / "folder", zipped=False)
    assert (tmp_path / "folder" / "model.weights.h5").is_file()
    result = portx.convert(tmp_path / "folder", to="torch-xla", out=tmp_path / "out", grad=False)
    assert result.ok


def test_missing_shard_is_named(tmp_path):
    _llama_preset(tmp_path / "preset")
    (tmp_path / "preset" / "model_00001.weights.h5").unlink()
    with pytest.raises(BadInput, match=r"model_00001\.weights\.h5: missing \(listed in model\.weights\.json\)"):
        load(tmp_path / "preset")


def test_index_naming_a_file_outside_the_folder_is_refused(tmp_path):
    _llama_preset(tmp_path / "preset")
    index = tmp_path / "preset" / "model.weights.json"
    data = json.loads(index.read_text())
    first = next(iter(data["weight_map"]))
    data["weight_map"][first] = "../../etc/model_00000.weights.h5"
    index.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=r"model\.weights\.json: shard '\.\./\.\./etc/model_00000\.weights\.h5' is not "
                                       r"a shard file name beside the index"):
        load(tmp_path / "preset")


def test_lambda_in_a_folder_is_refused_unless_unsafe(tmp_path):
    x = keras.Input((4,), name="x")
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)).save(tmp_path / "lam", zipped=False)
    with pytest.raises(BadInput, match=r"config\.json: Lambda layer double_it holds code .*refused in safe mode"):
        load(tmp_path / "lam")


def test_weights_of_another_model_are_refused_naming_the_variable(tmp_path):
    keras.utils.set_random_seed(0)
    x = keras.Input((6,), name="x")
    keras.Model(x, keras.layers.Dense(3, name="head")(x)).save(tmp_path / "folder", zipped=False)
    config = json.loads((tmp_path / "folder" / "config.json").read_text())
    config["config"]["layers"][1]["config"]["units"] = 5  # the stored kernel is (6, 3)
    config["config"]["layers"][1]["build_config"] = {"input_shape": [None, 6]}
    (tmp_path / "folder" / "config.json").write_text(json.dumps(config))
    with pytest.raises(BadInput, match=r"folder: Keras could not load the model"):
        load(tmp_path / "folder")


def test_bfloat16_folder_stays_bfloat16_in_torch(tmp_path):
    """A model that computes in bfloat16 (as keras-hub presets do) keeps a Dense layer's weights bfloat16 where its
    input is bfloat16: they were widened to float32 before, and the torch Linear then refused its bfloat16 input."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((6,), name="ids", dtype="int32")
    h = keras_hub.layers.ReversibleEmbedding(50, 16, dtype="bfloat16", name="embed")(ids)  # traced: bfloat16 out
    model = keras.Model(ids, keras.layers.Dense(8, dtype="bfloat16", name="head")(h))
    model.save(tmp_path / "folder", zipped=False)
    result = portx.convert(tmp_path / "folder", to="torch-xla", out=tmp_path / "out", grad=False)
    assert result.ok
    assert {str(t.dtype) for t in result.model.state_dict().values()} == {"torch.bfloat16"}
