"""Keras import of the linear family (Dense, EinsumDense): a one-layer functional model, lowered, validated,
the IR's NumPy reference compared with Keras (JAX backend) at 1e-5, then each target's emitted model
compared with Keras.

Example:
    pytest tests/ops/linear/test_from_keras.py -k EinsumDense
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

#: Keras' own initial weights from seed 0 (EinsumDense), not re-drawn
OWN_WEIGHTS = {"seed": 0, "randomize": False}

CASES = [
    keras_case(lambda: L.Dense(4), (3,), id="Dense"),
    keras_case(lambda: L.Dense(4, activation="relu"), (5, 3), id="Dense-rank3-relu"),
    keras_case(lambda: L.Dense(2, use_bias=False), (2, 3, 4), id="Dense-rank4-nobias"),
    keras_case(lambda: L.EinsumDense("abc,cd->abd", (4, 5), bias_axes="d"), (4, 3), id="EinsumDense", **OWN_WEIGHTS),
    keras_case(lambda: L.EinsumDense("abc,cde->abde", (4, 2, 3), bias_axes="de", activation="relu"), (4, 3),
               id="EinsumDense-heads", **OWN_WEIGHTS),
    keras_case(lambda: L.EinsumDense("abcd,cde->abe", (4, 5)), (4, 2, 3), id="EinsumDense-reduce-in", **OWN_WEIGHTS),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
