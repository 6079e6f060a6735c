"""Keras name scopes kept in emitted keras-jax code (Note [keras name scopes] in frontends/keras/__init__.py, Note
[emitted name scopes] in targets/keras_jax/scopes.py): a layer the source built inside ``keras.name_scope`` is
written inside the same scopes, so every emitted weight path is the source's, in flat code and in block functions.
"""
import importlib.util

import numpy as np

import portx
from tests.support.structured_code import assert_keras_trains_saves_reloads

__all__ = []


def _scoped_model(blocks=3):
    """A stem under nested scopes (``stem/norm/stem_bn``) and ``blocks`` keras.applications-style blocks, each under
    ``conv2_block{i}`` with a branch under a constant scope ``branch_1`` and the last conv outside it (seed 0)."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3), name="input_layer")
    with keras.name_scope("stem"):
        x = layers.Conv2D(8, 3, padding="same", name="stem_conv")(inputs)
        with keras.name_scope("norm"):
            x = layers.BatchNormalization(name="stem_bn")(x)
    x = layers.Activation("relu", name="stem_relu")(x)
    for i in range(1, blocks + 1):
        name = f"conv2_block{i}"
        with keras.name_scope(name):
            with keras.name_scope("branch_1"):
                y = layers.Conv2D(8, 1, name=name + "_1_conv")(x)
                y = layers.BatchNormalization(name=name + "_1_bn")(y)
                y = layers.Activation("relu", name=name + "_1_relu")(y)
            y = layers.Conv2D(8, 3, padding="same", name=name + "_2_conv")(y)
            y = layers.BatchNormalization(name=name + "_2_bn")(y)
            x = layers.Activation("relu", name=name + "_out")(layers.Add(name=name + "_add")([x, y]))
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(inputs, layers.Dense(4, name="predictions")(x), name="scoped")


def _paths(model) -> list:
    return sorted(w.path for w in model.weights)


def test_name_scopes_flat_and_in_blocks_keep_the_source_paths_verify_train_save_and_reload(tmp_path):
    source = _scoped_model()
    assert "conv2_block2/branch_1/conv2_block2_1_conv/kernel" in _paths(source)  # the scopes are in the paths
    result = portx.convert(source, to="keras-jax", out=tmp_path / "out", grad=False)  # verifies, or raises
    assert result.report["verification"]["passed"]
    converted = result.model
    assert _paths(converted) == _paths(source)
    code = result.files["code"].read_text()
    # flat: the stem's nested scopes; in the block function: the block's scope from ``name``, the branch a constant
    assert "    with keras.name_scope('stem'):\n        stem_conv = " in code, code
    assert "        with keras.name_scope('norm'):\n" in code, code
    assert "with keras.name_scope(name):" in code and "with keras.name_scope('branch_1'):" in code, code
    assert code.count("keras.name_scope(") == 4, code  # each written once: the blocks share one function
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(converted(x)), np.asarray(source(x)), rtol=1e-4, atol=1e-4)
    assert_keras_trains_saves_reloads(converted, x, (2, 4), tmp_path)
    # model.py's load_model builds the scoped model and loads the weights file portx wrote (Keras' h5 groups follow
    # the layers, not the paths)
    emitted = _module(result.files["code"]).load_model()
    assert _paths(emitted) == _paths(source)
    np.testing.assert_allclose(np.asarray(emitted(x)), np.asarray(source(x)), rtol=1e-4, atol=1e-4)


def _module(path):
    spec = importlib.util.spec_from_file_location("scoped_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def test_a_model_without_name_scopes_opens_none(tmp_path):
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,), name="input_layer")
    source = keras.Model(inputs, layers.Dense(2, name="dense")(inputs))
    result = portx.convert(source, to="keras-jax", out=tmp_path / "out", grad=False)
    assert "name_scope" not in result.files["code"].read_text()


def test_scopes_open_around_their_statements_and_names_with_quotes_stay_python():
    from portx.targets.keras_jax.scopes import _named, open_scopes

    rows = [(1, "a = f(x)", ""), (1, "b = g(a)", ""), (1, "c = h(b)", ""), (2, "d = c", ""), (1, "e = k(d)", "")]
    got = open_scopes(rows, [("s", "t"), None, ("s",), None, None])
    assert got == [(1, "with keras.name_scope('s'):", ""), (2, "with keras.name_scope('t'):", ""),
                   (3, "a = f(x)", ""), (2, "b = g(a)", ""), (2, "c = h(b)", ""), (3, "d = c", ""),
                   (1, "e = k(d)", "")]

    class Block:
        suffix, prefix = "0", "cell"

    for scope, want in (("normal_A_block_0", "normal_A_block_7"), ('a"b\\_0', 'a"b\\_7'), ("x{y}_0", "x{y}_7"),
                        ("block_1", "block_1"), ("0", "7")):
        assert eval(_named(scope, Block), {"name": "7"}) == want  # noqa: S307 trusted: the test's own scope names


def _nested_model(blocks=5):
    """keras.applications' ConvNeXt in small: a ``Sequential`` stem and ``blocks`` ``Sequential`` blocks whose layers
    carry the block's number (``down_block_1`` holds ``down_ln_1``), each followed by a LayerScale, whose weight Keras
    names by its counter (``variable_7``; seed 0)."""
    import keras
    from keras import layers
    from keras.src.applications.convnext import LayerScale

    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3), name="input_layer")
    stem = [layers.Conv2D(8, 2, strides=2, name="stem_conv"), layers.LayerNormalization(name="stem_ln")]
    x = keras.Sequential(stem, name="stem")(inputs)
    for i in range(blocks):
        down = [layers.LayerNormalization(name=f"down_ln_{i}"), layers.Conv2D(8, 1, name=f"down_conv_{i}"),
                layers.Conv2D(8, 1, name=f"down_pw_{i}"), layers.Conv2D(8, 1, name=f"down_out_{i}")]
        x = keras.Sequential(down, name=f"down_block_{i}")(x)
        x = LayerScale(0.5, 8, name=f"stage_{i}_layer_scale")(x)
    return keras.Model(inputs, layers.GlobalAveragePooling2D(name="avg_pool")(x), name="nested")


def test_nested_sequentials_and_counter_named_weights_keep_the_source_paths(tmp_path):
    import keras

    source = _nested_model()
    paths = [w.path for w in source.weights]
    assert "down_block_1/down_ln_1/gamma" in paths and any(p.startswith("stage_0_layer_scale/variable") for p in paths)
    result = portx.convert(source, to="keras-jax", out=tmp_path / "out", grad=False)  # verifies, or raises
    assert [w.path for w in result.model.weights] == paths
    code = result.files["code"].read_text()
    # Note [nested models' scopes]: one function for the numbered blocks, their scope and names from its arguments
    assert "with keras.name_scope('stem'):\n        stem_conv = " in code, code
    assert "with keras.name_scope(name):" in code and 'name=f"down_ln_{n}"' in code, code
    assert code.count("layers.LayerNormalization(") == 2, code
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)
    assert_keras_trains_saves_reloads(result.model, x, (2, 8), tmp_path)
    # Note [counter-named weights]: built again after the process's counter moved on, the names are the source's
    keras.Variable(np.zeros(1, np.float32))
    emitted = _module(result.files["code"]).load_model()
    assert [w.path for w in emitted.weights] == paths
    np.testing.assert_allclose(np.asarray(emitted(x)), np.asarray(source(x)), rtol=1e-4, atol=1e-4)


def test_a_scope_stays_open_across_statements_of_another_it_does_not_depend_on():
    """Note [scopes kept open]: ``c`` moves up beside ``a`` (same scopes, reads neither ``b`` nor what follows); ``e``
    reads ``d``, so it stays after it, and nothing moves past a line that is not one statement."""
    from portx.targets.keras_jax.scopes import open_scopes

    rows = [(1, "a = f(x)", ""), (1, "b = g(x)", ""), (1, "c = h(a)", ""), (1, "d = k(b)", ""), (1, "e = m(d)", "")]
    got = open_scopes(rows, [("s",), ("t",), ("s",), ("t",), ("s",)])
    assert [text for _, text, _ in got] == ["with keras.name_scope('s'):", "a = f(x)", "c = h(a)",
                                            "with keras.name_scope('t'):", "b = g(x)", "d = k(b)",
                                            "with keras.name_scope('s'):", "e = m(d)"]
    rows[1:1] = [(1, "for i in range(2):", ""), (2, "x = f(x)", "")]
    got = open_scopes(rows, [("s",), None, None, ("t",), ("s",), ("t",), ("s",)])
    assert [text for _, text, _ in got][:4] == ["with keras.name_scope('s'):", "a = f(x)", "for i in range(2):",
                                                "x = f(x)"]
