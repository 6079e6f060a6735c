"""Note [an unnumbered first block] in src/portx/passes/blocks_first.py: keras.applications' MobileNetV2 names its
first block's layers ``expanded_conv_depthwise`` (no number, no expand conv) and the rest ``block_1_expand``, ...
"""
import portx

__all__ = []


def _mobilenet_like():
    """A Keras model whose first block (``expanded_conv_``, no expand layer) comes before ``block_1``, ``block_2``."""
    import keras

    x = inputs = keras.Input((8,))
    x = keras.layers.Dense(8, name="stem")(x)
    for name in ("expanded_conv", "block_1", "block_2"):
        h = x if name == "expanded_conv" else keras.layers.Dense(16, name=f"{name}_expand")(x)
        h = keras.layers.ReLU(name=f"{name}_relu")(keras.layers.Dense(8, name=f"{name}_project")(h))
        x = h if name == "expanded_conv" else keras.layers.Add(name=f"{name}_add")([x, h])
    return keras.Model(inputs, x)


def test_the_unnumbered_first_block_joins_its_family(tmp_path):
    model = _mobilenet_like()
    result = portx.convert(model, to="keras-jax", out=tmp_path / "k", verify=False)
    blocks = result.graph.meta["blocks"]
    assert [(b["key"], b["parent"], b["index"]) for b in blocks] == [
        ("expanded_conv", "block", 0), ("block_1", "block", 1), ("block_2", "block", 2)]
    assert {w.path for w in result.model.weights} == {w.path for w in model.weights}  # the source's layer names


def test_torch_xla_holds_the_first_block_at_the_source_s_names(tmp_path):
    result = portx.convert(_mobilenet_like(), to="torch-xla", out=tmp_path / "t", verify=False)
    keys = set(result.model.state_dict())
    assert {"expanded_conv_project.weight", "expanded_conv_project.bias"} <= keys, sorted(keys)
    assert not any(key.startswith("expanded_conv.") for key in keys), sorted(keys)


def _mobilenet_v3_like():
    """A Keras model whose first block (``expanded_conv_``) has no expand conv but pads before its stride-2 depthwise
    conv, and whose ReLUs Keras names model-wide (``re_lu``, ``re_lu_1``, ...), as MobileNetV3's."""
    import keras

    keras.utils.set_random_seed(0)
    x = inputs = keras.Input((8, 8, 4))
    for name, expand, stride in (("expanded_conv", False, 2), ("expanded_conv_1", True, 2),
                                 ("expanded_conv_2", True, 1), ("expanded_conv_3", True, 1)):
        h = keras.layers.ReLU()(keras.layers.Conv2D(8, 1, name=f"{name}_expand")(x)) if expand else x
        if stride == 2:
            h = keras.layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"{name}_depthwise_pad")(h)
        h = keras.layers.DepthwiseConv2D(3, strides=stride, padding="valid" if stride == 2 else "same",
                                         name=f"{name}_depthwise")(h)
        h = keras.layers.Conv2D(4, 1, name=f"{name}_project")(keras.layers.ReLU()(h))
        x = keras.layers.Add(name=f"{name}_add")([x, h]) if stride == 1 else h
    return keras.Model(inputs, x)


def test_a_first_block_without_the_expand_conv_joins_its_family_s_function(tmp_path):
    """Note [a part beside a choice] and Note [Keras' names in a first block] in src/portx/targets: the first block
    is called as the others are, its ReLUs named as theirs, its weight paths the source's."""
    import keras

    keras.backend.clear_session()
    model = _mobilenet_v3_like()
    result = portx.convert(model, to="keras-jax", out=tmp_path / "k")
    code = result.files["code"].read_text()
    assert [line for line in code.splitlines() if line.startswith("def ") and "_block(" in line] == [
        "def expanded_conv_block(x, name, optional=True, strided=True, residual=False):"], code  # most blocks' flags
    assert "block(input_layer, optional=False, name='expanded_conv')" in code, code  # no expand conv: flag off
    assert {w.path for w in result.model.weights} == {w.path for w in model.weights}
    names = {layer.name for layer in result.model.layers}
    assert {"expanded_conv_activation_1", "expanded_conv_1_activation_1"} <= names and "re_lu" not in names, names
