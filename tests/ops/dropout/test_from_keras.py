"""Keras import of Dropout (with noise_shape) and SpatialDropout1D/2D/3D: a one-layer functional model,
lowered, validated, compared with Keras in inference mode, then each target's emitted model.

Example:
    pytest tests/ops/dropout/test_from_keras.py -k Spatial
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.Dropout(0.5), (3, 4), id="Dropout"),
    keras_case(lambda: L.Dropout(0.2, noise_shape=(None, 1, 4)), (3, 4), id="Dropout-noise-shape"),
    keras_case(lambda: L.SpatialDropout1D(0.3), (5, 3), id="SpatialDropout1D"),
    keras_case(lambda: L.SpatialDropout2D(0.5), (2, 2, 3), id="SpatialDropout2D"),
    keras_case(lambda: L.SpatialDropout2D(0.5, data_format="channels_first"), (3, 2, 2),
               id="SpatialDropout2D-channels-first"),
    keras_case(lambda: L.SpatialDropout3D(0.1), (2, 2, 2, 3), id="SpatialDropout3D"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
