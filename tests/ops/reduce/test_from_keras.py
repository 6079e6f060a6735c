"""Keras import of the reduce family's layers (Softmax): a one-layer functional model, lowered, validated, the
IR's NumPy reference compared with Keras (JAX backend) at 1e-5, then each target's emitted model compared
with Keras. keras.ops reductions are in tests/frontends/test_keras_ops.py.

Example:
    pytest tests/ops/reduce/test_from_keras.py
"""
import keras
import numpy as np
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, check_keras_model, keras_case, seeded

CASES = [
    keras_case(lambda: L.Softmax(), (3, 4), id="Softmax"),
    keras_case(lambda: L.Softmax(axis=1), (3, 4), id="Softmax-axis1"),
    keras_case(lambda: L.Softmax(axis=(1, 2)), (3, 4), id="Softmax-two-axes"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)


@pytest.mark.parametrize("dtype", ["bool", "int32"])
def test_softmax_with_a_broadcast_mask(target, dtype):
    """Masked scores drop out; a fully masked row is all zeros (Keras' where(mask, softmax, 0))."""
    x, m = keras.Input((2, 3, 4), name="scores"), keras.Input((1, 3, 4), dtype=dtype, name="mask")
    model = keras.Model([x, m], L.Softmax()(x, mask=m))
    mask = np.array([[[[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 1]]]]).astype(dtype)
    check_keras_model(model, seeded((1, 2, 3, 4)), mask, target=target)
