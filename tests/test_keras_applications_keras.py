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
import numpy as np
import pytest

import portx
from tests.support.structured_code import assert_structured
from tests.support.zoo_keras import APPLICATIONS, build_application

__all__ = []

#: the CI set: keras.applications' ``conv2_block1_`` and MobileNetV3's ``expanded_conv_1_`` with Keras-named layers
#: inside its blocks (Note [layers Keras names in blocks])
CI = ("MobileNetV3Small", "ResNet50")
#: applications whose emitted weight paths still differ from the source's (#32, still owed); verification and
#: structure hold for them. ConvNeXt: its stem and downsampling blocks are ``Sequential`` layers, whose weights' paths
#: nest (``convnext_tiny_stem/convnext_tiny_stem_conv/kernel``) where the emitted functional model writes one layer
#: ``convnext_tiny_stem_convnext_tiny_stem_conv``, and its LayerScale's weight is one Keras named itself
#: (``..._layer_scale/variable_3``, a counter of the process) where the emitted Constant is
#: ``..._layer_scale_gamma/value``. The others' paths are the source's: NASNet's Keras name scopes
#: (``normal_A_block_0/block_1/...``) are opened by the emitted code (Note [emitted name scopes] in
#: targets/keras_jax/scopes.py), MobileNetV2's ``block_2_expand_BN`` keeps its letter case (Note [layer names in the
#: source's case]), and a SeparableConv2D (Xception, NASNet) is one layer (Note [separable convs] in
#: ops/conv/to_keras.py). The torch-xla keys of the same layers: tests/test_keras_applications_torch.py,
#: ``BLOCK_PATHS``.
PATHS_DIFFER = {"ConvNeXtTiny"}
#: blocks that stay flat: ConvNeXt's downsampling blocks name their layers after the block's number as well
#: (``convnext_tiny_downsampling_block_0`` holds ``convnext_tiny_downsampling_layernorm_0``), so one function would
#: rename them (structured only while Namespace cut both names to ``..._block_0_convnext_tiny``; #32: names are cut
#: after a block's prefix, Note [names in longer blocks] in targets/keras_jax/style.py)
FLAT = r"convnext_tiny_downsampling_block_\d+"
CASES = [pytest.param(name, marks=() if name in CI else pytest.mark.slow) for name in sorted(APPLICATIONS)]
#: functions written for blocks that differ by optional parts, as keras.applications writes one (Note [optional
#: parts] in src/portx/targets/optional_parts.py): MobileNetV3Small's ReLU blocks without squeeze-excite are a second;
#: EfficientNetB0's stride-2 blocks (their pads differ per block) and block6b-d (their dropout's noise shape, 1x1
#: here) stay functions of their own
DEFS = {"EfficientNetB0": 3, "MobileNetV2": 1, "MobileNetV3Small": 2}


@pytest.mark.parametrize("name", CASES)
def test_application_converts_to_keras_verifies_and_is_structured(name, tmp_path):
    model, x = build_application(name)
    result = portx.convert(model, to="keras-jax", out=tmp_path / "out")
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    got = np.asarray(result.model(x, training=False))
    want = np.asarray(model(x, training=False))
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    shape = assert_structured(result, "keras-jax", longer=True, flat=FLAT)
    assert shape["defs"] == DEFS.get(name, shape["defs"]), shape
    # the layers holding weights keep their source names (Note [layers Keras names in blocks]); a Normalization's
    # statistics are folded into constants
    renamed = {w.path for w in result.model.weights} - {w.path for w in model.weights}
    assert bool(renamed) == (name in PATHS_DIFFER), (sorted(renamed)[:5], "update PATHS_DIFFER" if not renamed else "")
