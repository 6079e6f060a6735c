"""keras.applications models (weights=None, seeded) lowered by the Keras frontend and checked against Keras.

Each model is built at the smallest input it accepts with ``include_top=False`` (32x32; Xception
71, InceptionV3 75), its BatchNormalization statistics and affine weights redrawn from a fixed seed
(so BN is not the identity that fresh ``weights=None`` models start with), lowered to IR,
validated, and the IR's NumPy reference compared with Keras' jitted ``predict``.

Tolerance: float32 rounding grows with depth, so a model passes when
``max|ir - keras| <= 1e-5 + RTOL * max|keras|`` with RTOL 1e-5 (up to ~600 IR nodes) or 2e-5
(deeper: DenseNet121, InceptionV3, NASNetMobile). Measured relative errors are 1e-7 .. 7e-7.

MobileNetV2 and ResNet50 run in the normal suite (about 30 s together: building the Keras model
dominates, each weight initializer compiles once per shape); the rest are marked slow
(``PORTX_SLOW=1``).

Example:
    PORTX_SLOW=1 pytest tests/frontends/test_keras_applications.py -k NASNet
"""
import keras
import numpy as np
import pytest

import portx.ops  # noqa: F401  (registers rules)
from portx.equivalence import compare_arrays, run_reference
from portx.frontends.keras_files import from_keras_model
from portx.ir import validate

__all__ = []

_A = keras.applications

# name: (constructor, input side, RTOL, pixel range, slow)
MODELS = {
    "MobileNetV2": (_A.MobileNetV2, 32, 1e-5, 1.0, False),
    "ResNet50": (_A.ResNet50, 32, 1e-5, 1.0, False),
    "MobileNetV3Small": (_A.MobileNetV3Small, 32, 1e-5, 255.0, True),
    "EfficientNetB0": (_A.EfficientNetB0, 32, 1e-5, 255.0, True),
    "EfficientNetV2B0": (_A.EfficientNetV2B0, 32, 1e-5, 255.0, True),
    "DenseNet121": (_A.DenseNet121, 32, 2e-5, 1.0, True),
    "ConvNeXtTiny": (_A.ConvNeXtTiny, 32, 1e-5, 255.0, True),
    "Xception": (_A.Xception, 71, 1e-5, 1.0, True),
    "InceptionV3": (_A.InceptionV3, 75, 2e-5, 1.0, True),
    "NASNetMobile": (_A.NASNetMobile, 32, 2e-5, 1.0, True),
}


def _redraw_batch_norms(model, seed=0):
    """Seeded BN statistics and affine weights, kept near their usual scale so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    draws = {"moving_mean": lambda s: rng.normal(0, 0.1, s), "moving_variance": lambda s: rng.uniform(0.5, 1.5, s),
             "beta": lambda s: rng.normal(0, 0.1, s)}
    for var in model.weights:
        leaf, shape = var.path.split("/")[-1], tuple(var.shape)
        if leaf == "gamma" and "layer_scale" not in var.path:
            var.assign(rng.uniform(0.8, 1.2, shape).astype(np.float32))
        elif leaf in draws:
            var.assign(draws[leaf](shape).astype(np.float32))


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if row[-1] else [])
                                  for n, row in MODELS.items()])
def test_application_lowers_and_matches_keras(name):
    make, side, rtol, pixels, _ = MODELS[name]
    keras.utils.set_random_seed(0)
    model = make(weights=None, include_top=False, input_shape=(side, side, 3))
    _redraw_batch_norms(model)
    x = np.random.default_rng(0).uniform(0, pixels, (1, side, side, 3)).astype(np.float32)
    graph = from_keras_model(model).lower(name)
    validate(graph)
    got = run_reference(graph, [x])[graph.outputs[0]]
    result = compare_arrays(model.predict(x, verbose=0), got, atol=1e-5, rtol=rtol)
    assert result["passed"], f"{name}: {result}"
