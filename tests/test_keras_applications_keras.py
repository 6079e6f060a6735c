"""keras.applications models converted Keras -> Keras-JAX (``--to keras-jax``), verified, and their code structured:
each kind of block the application repeats (``conv2_block1``, EfficientNet's ``block2b``, MobileNetV3's
``expanded_conv_4``) written once as a function and called per block (Note [structured code] in
src/portx/targets/structure.py), as keras.applications writes them.

- CI: ResNet50 and MobileNetV3Small at the smallest input each accepts (``zoo_keras.build_application``: 32x32),
  through ``portx.convert`` with verification on: 16 s and 29 s of CPU (EfficientNetB0 would add 38 s; its
  lettered blocks are checked to torch-xla in CI, tests/test_keras_applications_torch.py).
- ``PORTX_SLOW=1``: the other keras.applications models the same way.

Example:
    PORTX_SLOW=1 pytest tests/test_keras_applications_keras.py -k EfficientNet
"""
import re

import numpy as np
import pytest

import portx
from tests.support.structured_code import assert_structured
from tests.support.zoo_keras import APPLICATIONS, build_application

__all__ = []

#: the CI set: keras.applications' ``conv2_block1_`` and MobileNetV3's ``expanded_conv_1_`` with Keras-named layers
#: inside its blocks (Note [layers Keras names in blocks])
CI = ("MobileNetV3Small", "ResNet50")
#: every application's emitted weight paths are the source's, in the source's order: NASNet's Keras name scopes
#: (``normal_A_block_0/block_1/...``) and ConvNeXt's nested ``Sequential`` stem and downsampling blocks
#: (``convnext_tiny_downsampling_block_0/convnext_tiny_downsampling_conv_0/kernel``) are opened by the emitted code
#: (Note [emitted name scopes], Note [nested models' scopes] in targets/keras_jax/scopes.py), ConvNeXt's LayerScale
#: weight keeps the name Keras' counter gave it (Note [counter-named weights] there), MobileNetV2's
#: ``block_2_expand_BN`` keeps its letter case (Note [layer names in the source's case]), and a SeparableConv2D
#: (Xception, NASNet) is one layer (Note [separable convs] in ops/conv/to_keras.py). The torch-xla keys of the same
#: layers: tests/test_keras_applications_torch.py, ``BLOCK_PATHS``.
CASES = [pytest.param(name, marks=() if name in CI else pytest.mark.slow) for name in sorted(APPLICATIONS)]
#: functions written for blocks that differ by optional parts, one as keras.applications writes one (Note [optional
#: parts] in src/portx/targets/optional_parts.py): EfficientNetB0's stride-2 blocks pass their pad, MobileNetV3Small's
#: ReLU and hard-swish blocks their activation (Note [pad widths as one argument], Note [the activation as an
#: argument] in src/portx/targets/joinable.py)
DEFS = {"EfficientNetB0": 1, "MobileNetV2": 1, "MobileNetV3Small": 1}
#: the first block, which keras.applications names without a number (``expanded_conv_depthwise``), is called through
#: its family's function (Note [an unnumbered first block] in src/portx/passes/blocks_first.py)
FIRST = ("MobileNetV2", "MobileNetV3Small")


@pytest.mark.parametrize("name", CASES)
def test_application_converts_to_keras_verifies_and_is_structured(name, tmp_path):
    model, x = build_application(name)
    result = portx.convert(model, to="keras-jax", out=tmp_path / "out")
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    got = np.asarray(result.model(x, training=False))
    want = np.asarray(model(x, training=False))
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    shape = assert_structured(result, "keras-jax", longer=True)
    assert shape["defs"] == DEFS.get(name, shape["defs"]), shape  # one function with optional parts
    # arguments named for what they feed (Note [arguments named for what differs] in src/portx/targets/arg_names.py)
    code = result.files["code"].read_text()
    assert not re.search(r"def \w+\([^)]*\b(filters|units)_\d", code)
    if name in FIRST:
        assert "name='expanded_conv'" in code and "name='expanded_conv_depthwise'" not in code
    # the layers holding weights keep their source paths (Note [layers Keras names in blocks]); a Normalization's
    # statistics are folded into constants
    renamed = {w.path for w in result.model.weights} - {w.path for w in model.weights}
    assert not renamed, sorted(renamed)[:5]
