"""Keras import of the norm family (BatchNormalization, LayerNormalization, GroupNormalization): a one-layer
functional model with re-drawn seeded weights, lowered, validated, the IR's NumPy reference compared with Keras
(JAX backend) at 1e-5, then each target's emitted model compared with Keras.

Example:
    pytest tests/ops/norm/test_from_keras.py -k GroupNormalization
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.BatchNormalization(), (4, 4, 3), id="BatchNormalization-nhwc"),
    keras_case(lambda: L.BatchNormalization(epsilon=1e-2), (5,), id="BatchNormalization-rank2"),
    keras_case(lambda: L.BatchNormalization(axis=1), (3, 4, 4), id="BatchNormalization-axis1"),
    keras_case(lambda: L.BatchNormalization(axis=2), (3, 4, 2), id="BatchNormalization-axis2-rank4"),
    keras_case(lambda: L.BatchNormalization(center=False, scale=False), (3, 4), id="BatchNormalization-no-affine"),
    keras_case(lambda: L.LayerNormalization(), (3, 5), id="LayerNormalization"),
    keras_case(lambda: L.LayerNormalization(axis=[-2, -1]), (3, 4, 5), id="LayerNormalization-two-axes"),
    keras_case(lambda: L.LayerNormalization(axis=1), (4, 5), id="LayerNormalization-axis1"),
    keras_case(lambda: L.LayerNormalization(center=False), (2, 5), id="LayerNormalization-no-center"),
    keras_case(lambda: L.LayerNormalization(scale=False), (2, 5), id="LayerNormalization-no-scale"),
    keras_case(lambda: L.LayerNormalization(rms_scaling=True), (2, 5), id="LayerNormalization-rms"),
    keras_case(lambda: L.GroupNormalization(groups=2), (3, 3, 4), id="GroupNormalization"),
    keras_case(lambda: L.GroupNormalization(groups=-1, center=False), (3, 3, 4), id="GroupNormalization-instance"),
    keras_case(lambda: L.GroupNormalization(groups=3), (5, 6), id="GroupNormalization-rank3"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
