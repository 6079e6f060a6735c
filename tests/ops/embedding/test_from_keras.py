"""Keras import of the embedding family (Embedding, on int and float ids): lowered, validated, the IR's NumPy
reference compared with Keras (JAX backend), then each target's emitted model compared with Keras."""
import keras
import numpy as np
from keras import layers as L

from tests.support.keras_harness import check_keras_model


def test_embedding_int_and_float_ids(target):
    keras.utils.set_random_seed(0)
    ids = keras.Input((6,), dtype="int32")
    model = keras.Model(ids, L.Embedding(10, 4)(ids))
    check_keras_model(model, np.array([[0, 3, 9, 2, 2, 7]], np.int32), target=target)
    floats = keras.Input((5,))
    model = keras.Model(floats, L.Embedding(8, 3)(floats))
    check_keras_model(model, np.array([[0.0, 1.0, 7.0, 3.0, 2.0]], np.float32), target=target)
