"""Golden files of structured Keras code: blocks the source repeats written once as functions and called per
block, in a loop where the source stacks them (targets/keras_jax/blocks.py).

Refresh after an intended change with: ./scripts/test tests/targets/keras_jax/test_golden_structured.py --update-golden
"""
from pathlib import Path

import numpy as np
import pytest

import portx
from tests.support.golden import check_golden
from tests.support.structured_models import small_decoder, small_resnet, small_vit

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = {"resnet": small_resnet, "vit": small_vit, "decoder": small_decoder}


@pytest.mark.parametrize("name", sorted(CASES))
def test_structured_source_matches_golden(name, tmp_path, request):
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
    converted = result.model
    assert {"layer1_1_conv1", "layer2_1_bn3", "layer2_0_downsample_0"} <= {layer.name for layer in converted.layers}
    x = inputs[0].numpy()
    converted.compile(optimizer="sgd", loss="mse")
    converted.fit(x, np.zeros((1, 10), np.float32), epochs=1, verbose=0)
    converted.save(tmp_path / "resnet.keras")
    again = keras.saving.load_model(tmp_path / "resnet.keras")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(converted(x)), rtol=1e-5, atol=1e-5)
