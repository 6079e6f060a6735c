"""Keras import of the pad family (ZeroPadding*D, Cropping*D): a one-layer functional model, lowered,
validated, the IR's NumPy reference compared with Keras (JAX backend), then each target's emitted model
compared with Keras.

Example:
    pytest tests/ops/pad/test_from_keras.py -k Cropping
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.ZeroPadding2D(((1, 2), (0, 3))), (2, 3, 2), id="ZeroPadding2D"),
    keras_case(lambda: L.ZeroPadding1D(2), (3, 2), id="ZeroPadding1D"),
    keras_case(lambda: L.Cropping2D(((1, 0), (2, 1))), (4, 5, 2), id="Cropping2D"),
    keras_case(lambda: L.Cropping1D((1, 2)), (6, 2), id="Cropping1D"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
