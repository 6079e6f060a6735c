"""Keras import of the conv family (Conv*D, DepthwiseConv*D, SeparableConv*D, Conv*DTranspose): a one-layer
functional model, lowered, validated, the IR's NumPy reference compared with Keras (JAX backend) at 1e-5 on
seeded inputs and re-drawn seeded weights, then each target's emitted model compared with Keras.

Example:
    pytest tests/ops/conv/test_from_keras.py -k Conv2DTranspose
"""
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, keras_case

CASES = [
    keras_case(lambda: L.Conv2D(4, 3), (6, 6, 3), id="Conv2D-valid"),
    keras_case(lambda: L.Conv2D(4, 3, strides=2, padding="same"), (7, 7, 3), id="Conv2D-same-s2-odd"),
    keras_case(lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu"), (8, 6, 3),
               id="Conv2D-same-s2-even"),
    keras_case(lambda: L.Conv2D(2, 3, dilation_rate=2, padding="same", use_bias=False), (7, 7, 2),
               id="Conv2D-dilated-same"),
    keras_case(lambda: L.Conv2D(4, 3, groups=2, padding="same", activation="gelu"), (5, 5, 4), id="Conv2D-groups"),
    keras_case(lambda: L.Conv2D(3, 3, padding="same", data_format="channels_first"), (2, 5, 5),
               id="Conv2D-channels-first"),
    keras_case(lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2), (9, 2), id="Conv1D-causal"),
    keras_case(lambda: L.Conv1D(3, 4, strides=2, padding="same"), (9, 2), id="Conv1D-same-s2"),
    keras_case(lambda: L.Conv3D(2, 2, padding="same"), (3, 4, 3, 2), id="Conv3D-same"),
    keras_case(lambda: L.DepthwiseConv2D(3, depth_multiplier=2, strides=2, padding="same"), (7, 7, 3),
               id="DepthwiseConv2D"),
    keras_case(lambda: L.DepthwiseConv2D(3, activation="relu6"), (6, 6, 2), id="DepthwiseConv2D-valid"),
    keras_case(lambda: L.DepthwiseConv1D(3, padding="same"), (8, 3), id="DepthwiseConv1D"),
    keras_case(lambda: L.SeparableConv2D(5, 3, strides=2, padding="same", depth_multiplier=2), (7, 7, 3),
               id="SeparableConv2D"),
    keras_case(lambda: L.SeparableConv1D(4, 3, use_bias=False), (8, 3), id="SeparableConv1D"),
    keras_case(lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), (4, 4, 2), id="Conv2DTranspose-same-s2-k3"),
    keras_case(lambda: L.Conv2DTranspose(3, 4, strides=2, padding="same"), (4, 3, 2), id="Conv2DTranspose-same-s2-k4"),
    keras_case(lambda: L.Conv2DTranspose(3, 3, strides=2), (3, 4, 2), id="Conv2DTranspose-valid-s2-k3"),
    keras_case(lambda: L.Conv2DTranspose(2, 2, strides=3), (3, 3, 2), id="Conv2DTranspose-valid-s3-k2"),
    keras_case(lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1), (4, 4, 2),
               id="Conv2DTranspose-outpad"),
    keras_case(lambda: L.Conv2DTranspose(2, 3, strides=2, output_padding=1), (3, 3, 2),
               id="Conv2DTranspose-valid-outpad"),
    keras_case(lambda: L.Conv2DTranspose(2, 3, dilation_rate=2, padding="same"), (4, 4, 2),
               id="Conv2DTranspose-dilated"),
    keras_case(lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same", activation="tanh"), (5, 3),
               id="Conv1DTranspose"),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)
