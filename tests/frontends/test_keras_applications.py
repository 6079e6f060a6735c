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
import numpy as np
import pytest

import portx.ops  # noqa: F401  (registers rules)
from keras_harness import APPLICATIONS, build_application
from portx.equivalence import compare_arrays, run_reference
from portx.frontends.keras_files import from_keras_model
from portx.ir import validate

__all__ = []


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if row[-1] else [])
                                  for n, row in APPLICATIONS.items()])
def test_application_lowers_and_matches_keras(name):
    model, x = build_application(name)
    rtol = APPLICATIONS[name][1]
    graph = from_keras_model(model).lower(name)
    validate(graph)
    got = run_reference(graph, [x])[graph.outputs[0]]
    result = compare_arrays(model.predict(x, verbose=0), got, atol=1e-5, rtol=rtol)
    assert result["passed"], f"{name}: {result}"
