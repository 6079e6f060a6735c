"""keras.applications models (weights=None, seeded) lowered by the Keras frontend and checked against Keras.

Each model is built at the smallest input it accepts with ``include_top=False`` (32x32; Xception
71, InceptionV3 75) by ``zoo_keras.build_application`` (weights drawn in NumPy from seed 0, see its
Note [fast build]; BatchNormalization statistics and affine weights redrawn so BN is not the identity),
lowered to IR, validated, and the IR's NumPy reference compared with Keras' jitted ``predict`` on a batch
in the model's pixel range.

Tolerance: float32 rounding grows with depth, so a model passes when
``max|ir - keras| <= 1e-5 + RTOL * max|keras|`` with RTOL 1e-5 (up to ~600 IR nodes) or 2e-5
(deeper: DenseNet121, InceptionV3, NASNetMobile). Measured relative errors are 1e-7 .. 7e-7.

All ten run in the normal suite (CI).

Example:
    pytest tests/frontends/test_keras_applications.py -k NASNet
"""
import pytest

import portx.ops  # noqa: F401  (registers rules)
from portx.verification.compare import compare_arrays, run_reference
from portx.frontends.keras.files import from_keras_model
from portx.ir import validate
from tests.support.zoo_keras import APPLICATIONS, build_application

__all__ = []


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_application_lowers_and_matches_keras(name):
    model, x = build_application(name)
    rtol = APPLICATIONS[name][1]
    graph = from_keras_model(model).lower(name)
    validate(graph)
    got = run_reference(graph, [x])[graph.outputs[0]]
    result = compare_arrays(model.predict(x, verbose=0), got, atol=1e-5, rtol=rtol)
    assert result["passed"], f"{name}: {result}"
