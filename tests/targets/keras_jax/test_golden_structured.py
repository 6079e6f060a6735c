"""Golden files of structured Keras code: blocks the source repeats written once as functions and called per
block, in a loop where the source stacks them (targets/keras_jax/blocks.py), from torch and from Keras sources
(keras-hub's GPT-2, a keras.applications-style ResNet).

Refresh after an intended change with: ./scripts/test tests/targets/keras_jax/test_golden_structured.py --update-golden
"""
from pathlib import Path

import numpy as np
import pytest

import portx
from tests.support.golden import check_golden
from tests.support.structured_code import assert_keras_trains_saves_reloads, assert_structured
from tests.support.structured_models import hf_llama, keras_resnet, small_decoder, small_resnet, small_vit

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = {"resnet": small_resnet, "vit": small_vit, "decoder": small_decoder, "hf_llama": hf_llama}
KERAS_CASES = ("keras_hub_gpt2", "keras_resnet")


def _keras_case(name):
    """A Keras source (no example inputs): keras-hub's GPT-2 (2 layers, dropout 0.1) or a keras.applications-style
    ResNet with three blocks a stage."""
    import keras

    if name == "keras_resnet":
        return keras_resnet(stages=(3, 3))
    keras_hub = pytest.importorskip("keras_hub")
    keras.backend.clear_session()  # Keras names its Softmax and Dropouts from a process-wide count
    keras.utils.set_random_seed(0)
    return keras_hub.models.GPT2Backbone(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64,
                                         num_heads=2, max_sequence_length=16)


@pytest.mark.parametrize("name", sorted(CASES) + list(KERAS_CASES))
def test_structured_source_matches_golden(name, tmp_path, request):
    if name == "hf_llama":
        pytest.importorskip("transformers")
    if name in KERAS_CASES:
        result = portx.convert(_keras_case(name), to="keras-jax", out=tmp_path / "out", verify=False, grad=False)
    else:
        model, inputs = CASES[name]()
        result = portx.convert(model, out=tmp_path / "out", example_inputs=inputs, verify=False)
    code = result.files["code"].read_text()
    check_golden(code, GOLDEN / f"{name}.py.txt", request)
    assert "\ndef " in code.split("def build_model", 1)[0], "no block function"
    written = code[code.index("\ndef "):code.index("\ndef load_model")]  # the blocks and build_model
    assert max(len(line) for line in written.splitlines()) <= 100


def test_structured_model_verifies_trains_saves_and_reloads(tmp_path):
    import keras

    model, inputs = small_resnet()
    result = portx.convert(model, out=tmp_path / "out", example_inputs=inputs)  # verifies, or raises
    rows = result.report["node_errors"]["rows"]  # traced on the flat emission (Note [flat model without values])
    assert any(row["node"].startswith("layer2.1.") for row in rows) and all(row["passed"] for row in rows)
    converted = result.model
    assert {"layer1_1_conv1", "layer2_1_bn3", "layer2_0_downsample_0"} <= {layer.name for layer in converted.layers}
    x = inputs[0].numpy()
    converted.compile(optimizer="sgd", loss="mse")
    converted.fit(x, np.zeros((1, 10), np.float32), epochs=1, verbose=0)
    converted.save(tmp_path / "resnet.keras")
    again = keras.saving.load_model(tmp_path / "resnet.keras")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(converted(x)), rtol=1e-5, atol=1e-5)


def test_hugging_face_llama_is_one_block_function_in_a_loop_verifies_saves_and_reloads(tmp_path):
    pytest.importorskip("transformers")
    import keras

    source, (ids,) = hf_llama(layers=4)
    result = portx.convert(source, out=tmp_path / "out", example_inputs=(ids,))  # verifies, or raises
    code = result.files["code"].read_text()
    # the nodes free dims prepend (the mask's counts) do not shift the layers' blocks (Note [blocks after free dims])
    assert code.count("\ndef llama_decoder_layer(") == 1 and "for i in range(4):" in code
    converted = result.model
    assert {"model_layers_0_self_attn_q_proj", "model_layers_3_mlp_down_proj"} <= {l.name for l in converted.layers}
    converted.save(tmp_path / "llama.keras")
    again = keras.saving.load_model(tmp_path / "llama.keras")
    x = ids.numpy()
    np.testing.assert_allclose(np.asarray(again(x)), source(ids).logits.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_keras_file_with_repeated_blocks_is_structured_verifies_trains_saves_and_reloads(tmp_path):
    """A ``.keras`` file (keras.applications' ``block1``, three a stage) to keras-jax: one function, its shortcut
    under ``conv_shortcut`` (Note [an optional shortcut] in targets/keras_jax/optional.py), the stages' later blocks
    called in a loop, every layer under its source name."""
    source = keras_resnet(stages=(3, 3))
    source.save(tmp_path / "resnet.keras")
    result = portx.convert(str(tmp_path / "resnet.keras"), to="keras-jax", out=tmp_path / "out")  # verifies
    assert result.report["verification"]["passed"]
    shape = assert_structured(result, "keras-jax")  # every block written by a function, shorter than flat
    code = result.files["code"].read_text()
    assert shape["defs"] == 1 and "for i in range(2, 4):  # source blocks conv2_block2 to conv2_block3" in code, code
    # a stage's first block takes its stride and its shortcut, as keras.applications' block1 does (Note [keywords
    # that vary in blocks])
    assert "\ndef conv_block(x, filters, strides, name, conv_shortcut=False):" in code
    assert "conv_block(conv2, 8, 2, conv_shortcut=True, name='conv3_block1')" in code
    assert "        conv2 = conv_block(conv2, 4, 1, name=f\"conv2_block{i}\")" in code
    converted = result.model
    assert {layer.name for layer in converted.layers} >= {layer.name for layer in source.layers} - {"input_layer"}
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(converted(x)), np.asarray(source(x)), rtol=1e-4, atol=1e-4)
    assert_keras_trains_saves_reloads(converted, x, (2, 10), tmp_path)
