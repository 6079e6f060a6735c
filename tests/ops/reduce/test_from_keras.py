"""Keras import of the reduce family's layers (Softmax): a one-layer functional model, lowered, validated, the
IR's NumPy reference compared with Keras (JAX backend) at 1e-5, then each target's emitted model compared
with Keras. keras.ops reductions are in tests/frontends/test_keras_ops.py.

Example:
    pytest tests/ops/reduce/test_from_keras.py
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.Softmax(), (3, 4), id="Softmax"),
    keras_case(lambda: L.Softmax(axis=1), (3, 4), id="Softmax-axis1"),
    keras_case(lambda: L.Softmax(axis=(1, 2)), (3, 4), id="Softmax-two-axes"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
