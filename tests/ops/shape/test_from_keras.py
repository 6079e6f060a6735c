"""Keras import of the shape family's layers (the merges Add/Subtract/Multiply/Average/Maximum/Minimum,
Concatenate, Reshape, Flatten, Permute, RepeatVector; rules in ops/shape/from_keras.py): a one-layer functional
model, lowered, validated, the IR's NumPy reference compared with Keras (JAX backend), then each target's
emitted model compared with Keras. keras.ops shape ops are in tests/frontends/test_keras_ops.py.

Example:
    pytest tests/ops/shape/test_from_keras.py -k Flatten
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.Add(), (3, 2), (3, 2), (3, 2), id="Add-3"),
    keras_case(lambda: L.Add(), (4,), (3, 4), id="Add-broadcast-rank"),
    keras_case(lambda: L.Subtract(), (3, 2), (3, 2), id="Subtract"),
    keras_case(lambda: L.Multiply(), (3, 2), (3, 2), id="Multiply"),
    keras_case(lambda: L.Average(), (3, 2), (3, 2), (3, 2), id="Average-3"),
    keras_case(lambda: L.Maximum(), (3, 2), (3, 2), id="Maximum"),
    keras_case(lambda: L.Minimum(), (3, 2), (3, 2), id="Minimum"),
    keras_case(lambda: L.Concatenate(), (3, 2), (3, 4), id="Concatenate"),
    keras_case(lambda: L.Concatenate(axis=1), (2, 2), (3, 2), id="Concatenate-axis1"),
    keras_case(lambda: L.Reshape((2, -1)), (3, 4), id="Reshape"),
    keras_case(lambda: L.Flatten(), (2, 3, 4), id="Flatten"),
    keras_case(lambda: L.Flatten(data_format="channels_first"), (2, 3, 4), id="Flatten-channels-first"),
    keras_case(lambda: L.Permute((2, 1, 3)), (2, 3, 4), id="Permute"),
    keras_case(lambda: L.RepeatVector(3), (4,), id="RepeatVector"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
