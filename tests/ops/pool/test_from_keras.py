"""Keras import of the pool family (MaxPooling*D, AveragePooling*D, Global*Pooling*D): a one-layer functional
model, lowered, validated, the IR's NumPy reference compared with Keras (JAX backend) at 1e-5, then each
target's emitted model compared with Keras.

Example:
    pytest tests/ops/pool/test_from_keras.py -k same
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.MaxPooling2D(), (4, 6, 2), id="MaxPooling2D"),
    keras_case(lambda: L.MaxPooling2D(3, strides=2, padding="same"), (5, 5, 2), id="MaxPooling2D-same-odd"),
    keras_case(lambda: L.MaxPooling2D(3, strides=2, padding="same"), (6, 6, 2), id="MaxPooling2D-same-even"),
    keras_case(lambda: L.AveragePooling2D(2, strides=1), (4, 4, 2), id="AveragePooling2D"),
    keras_case(lambda: L.AveragePooling2D(3, strides=2, padding="same"), (6, 5, 2), id="AveragePooling2D-same"),
    keras_case(lambda: L.MaxPooling1D(2), (7, 3), id="MaxPooling1D"),
    keras_case(lambda: L.AveragePooling1D(3, strides=1, padding="same"), (6, 2), id="AveragePooling1D-same"),
    keras_case(lambda: L.GlobalAveragePooling2D(), (3, 4, 2), id="GlobalAveragePooling2D"),
    keras_case(lambda: L.GlobalAveragePooling2D(keepdims=True), (3, 4, 2), id="GlobalAveragePooling2D-keepdims"),
    keras_case(lambda: L.GlobalMaxPooling2D(), (3, 4, 2), id="GlobalMaxPooling2D"),
    keras_case(lambda: L.GlobalAveragePooling1D(), (5, 2), id="GlobalAveragePooling1D"),
    keras_case(lambda: L.GlobalMaxPooling1D(keepdims=True), (5, 2), id="GlobalMaxPooling1D-keepdims"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
