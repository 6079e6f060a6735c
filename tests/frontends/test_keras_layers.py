"""Per-layer Keras import checks: a one-layer functional model, lowered, validated, and the IR's NumPy
reference compared with Keras (JAX backend) at 1e-5 on seeded inputs and re-drawn seeded weights.

Example:
    pytest tests/frontends/test_keras_layers.py -k Conv2DTranspose
"""
import functools

import keras
import pytest
from keras import layers as L

from keras_harness import check_keras_model, seeded, single_layer

__all__ = []

# id: (layer factory, batchless input shapes)
CASES = {
    "Conv2D-valid": (lambda: L.Conv2D(4, 3), [(6, 6, 3)]),
    "Conv2D-same-s2-odd": (lambda: L.Conv2D(4, 3, strides=2, padding="same"), [(7, 7, 3)]),
    "Conv2D-same-s2-even": (lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu"), [(8, 6, 3)]),
    "Conv2D-dilated-same": (lambda: L.Conv2D(2, 3, dilation_rate=2, padding="same", use_bias=False), [(7, 7, 2)]),
    "Conv2D-groups": (lambda: L.Conv2D(4, 3, groups=2, padding="same", activation="gelu"), [(5, 5, 4)]),
    "Conv2D-channels-first": (lambda: L.Conv2D(3, 3, padding="same", data_format="channels_first"), [(2, 5, 5)]),
    "Conv1D-causal": (lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2), [(9, 2)]),
    "Conv1D-same-s2": (lambda: L.Conv1D(3, 4, strides=2, padding="same"), [(9, 2)]),
    "Conv3D-same": (lambda: L.Conv3D(2, 2, padding="same"), [(3, 4, 3, 2)]),
    "DepthwiseConv2D": (lambda: L.DepthwiseConv2D(3, depth_multiplier=2, strides=2, padding="same"), [(7, 7, 3)]),
    "DepthwiseConv2D-valid": (lambda: L.DepthwiseConv2D(3, activation="relu6"), [(6, 6, 2)]),
    "DepthwiseConv1D": (lambda: L.DepthwiseConv1D(3, padding="same"), [(8, 3)]),
    "SeparableConv2D": (lambda: L.SeparableConv2D(5, 3, strides=2, padding="same", depth_multiplier=2), [(7, 7, 3)]),
    "SeparableConv1D": (lambda: L.SeparableConv1D(4, 3, use_bias=False), [(8, 3)]),
    "Conv2DTranspose-same-s2-k3": (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), [(4, 4, 2)]),
    "Conv2DTranspose-same-s2-k4": (lambda: L.Conv2DTranspose(3, 4, strides=2, padding="same"), [(4, 3, 2)]),
    "Conv2DTranspose-valid-s2-k3": (lambda: L.Conv2DTranspose(3, 3, strides=2), [(3, 4, 2)]),
    "Conv2DTranspose-valid-s3-k2": (lambda: L.Conv2DTranspose(2, 2, strides=3), [(3, 3, 2)]),
    "Conv2DTranspose-outpad": (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1),
                               [(4, 4, 2)]),
    "Conv2DTranspose-valid-outpad": (lambda: L.Conv2DTranspose(2, 3, strides=2, output_padding=1), [(3, 3, 2)]),
    "Conv2DTranspose-dilated": (lambda: L.Conv2DTranspose(2, 3, dilation_rate=2, padding="same"), [(4, 4, 2)]),
    "Conv1DTranspose": (lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same", activation="tanh"), [(5, 3)]),
    "Dense": (lambda: L.Dense(4), [(3,)]),
    "Dense-rank3-relu": (lambda: L.Dense(4, activation="relu"), [(5, 3)]),
    "Dense-rank4-nobias": (lambda: L.Dense(2, use_bias=False), [(2, 3, 4)]),
    "BatchNormalization-nhwc": (lambda: L.BatchNormalization(), [(4, 4, 3)]),
    "BatchNormalization-rank2": (lambda: L.BatchNormalization(epsilon=1e-2), [(5,)]),
    "BatchNormalization-axis1": (lambda: L.BatchNormalization(axis=1), [(3, 4, 4)]),
    "BatchNormalization-axis2-rank4": (lambda: L.BatchNormalization(axis=2), [(3, 4, 2)]),
    "BatchNormalization-no-affine": (lambda: L.BatchNormalization(center=False, scale=False), [(3, 4)]),
    "LayerNormalization": (lambda: L.LayerNormalization(), [(3, 5)]),
    "LayerNormalization-two-axes": (lambda: L.LayerNormalization(axis=[-2, -1]), [(3, 4, 5)]),
    "LayerNormalization-axis1": (lambda: L.LayerNormalization(axis=1), [(4, 5)]),
    "LayerNormalization-no-center": (lambda: L.LayerNormalization(center=False), [(2, 5)]),
    "LayerNormalization-no-scale": (lambda: L.LayerNormalization(scale=False), [(2, 5)]),
    "LayerNormalization-rms": (lambda: L.LayerNormalization(rms_scaling=True), [(2, 5)]),
    "GroupNormalization": (lambda: L.GroupNormalization(groups=2), [(3, 3, 4)]),
    "GroupNormalization-instance": (lambda: L.GroupNormalization(groups=-1, center=False), [(3, 3, 4)]),
    "GroupNormalization-rank3": (lambda: L.GroupNormalization(groups=3), [(5, 6)]),
    "ReLU": (lambda: L.ReLU(), [(3, 4)]),
    "ReLU-max": (lambda: L.ReLU(max_value=0.5), [(3, 4)]),
    "ReLU-slope": (lambda: L.ReLU(negative_slope=0.1), [(3, 4)]),
    "ReLU-threshold": (lambda: L.ReLU(threshold=0.3), [(3, 4)]),
    "ReLU-all": (lambda: L.ReLU(max_value=1.0, negative_slope=0.2, threshold=0.4), [(3, 4)]),
    "ReLU-slope-max": (lambda: L.ReLU(max_value=6.0, negative_slope=0.3), [(3, 4)]),
    "LeakyReLU": (lambda: L.LeakyReLU(), [(3, 4)]),
    "LeakyReLU-0.05": (lambda: L.LeakyReLU(negative_slope=0.05), [(3, 4)]),
    "PReLU": (lambda: L.PReLU(), [(2, 3, 2)]),
    "PReLU-shared": (lambda: L.PReLU(shared_axes=[1, 2]), [(2, 3, 2)]),
    "ELU": (lambda: L.ELU(alpha=0.5), [(3, 4)]),
    "Softmax": (lambda: L.Softmax(), [(3, 4)]),
    "Softmax-axis1": (lambda: L.Softmax(axis=1), [(3, 4)]),
    "Softmax-two-axes": (lambda: L.Softmax(axis=(1, 2)), [(3, 4)]),
    "ZeroPadding2D": (lambda: L.ZeroPadding2D(((1, 2), (0, 3))), [(2, 3, 2)]),
    "ZeroPadding1D": (lambda: L.ZeroPadding1D(2), [(3, 2)]),
    "Cropping2D": (lambda: L.Cropping2D(((1, 0), (2, 1))), [(4, 5, 2)]),
    "Cropping1D": (lambda: L.Cropping1D((1, 2)), [(6, 2)]),
    "MaxPooling2D": (lambda: L.MaxPooling2D(), [(4, 6, 2)]),
    "MaxPooling2D-same-odd": (lambda: L.MaxPooling2D(3, strides=2, padding="same"), [(5, 5, 2)]),
    "MaxPooling2D-same-even": (lambda: L.MaxPooling2D(3, strides=2, padding="same"), [(6, 6, 2)]),
    "AveragePooling2D": (lambda: L.AveragePooling2D(2, strides=1), [(4, 4, 2)]),
    "AveragePooling2D-same": (lambda: L.AveragePooling2D(3, strides=2, padding="same"), [(6, 5, 2)]),
    "MaxPooling1D": (lambda: L.MaxPooling1D(2), [(7, 3)]),
    "AveragePooling1D-same": (lambda: L.AveragePooling1D(3, strides=1, padding="same"), [(6, 2)]),
    "GlobalAveragePooling2D": (lambda: L.GlobalAveragePooling2D(), [(3, 4, 2)]),
    "GlobalAveragePooling2D-keepdims": (lambda: L.GlobalAveragePooling2D(keepdims=True), [(3, 4, 2)]),
    "GlobalMaxPooling2D": (lambda: L.GlobalMaxPooling2D(), [(3, 4, 2)]),
    "GlobalAveragePooling1D": (lambda: L.GlobalAveragePooling1D(), [(5, 2)]),
    "GlobalMaxPooling1D-keepdims": (lambda: L.GlobalMaxPooling1D(keepdims=True), [(5, 2)]),
    "Add-3": (lambda: L.Add(), [(3, 2), (3, 2), (3, 2)]),
    "Add-broadcast-rank": (lambda: L.Add(), [(4,), (3, 4)]),
    "Subtract": (lambda: L.Subtract(), [(3, 2), (3, 2)]),
    "Multiply": (lambda: L.Multiply(), [(3, 2), (3, 2)]),
    "Average-3": (lambda: L.Average(), [(3, 2), (3, 2), (3, 2)]),
    "Maximum": (lambda: L.Maximum(), [(3, 2), (3, 2)]),
    "Minimum": (lambda: L.Minimum(), [(3, 2), (3, 2)]),
    "Concatenate": (lambda: L.Concatenate(), [(3, 2), (3, 4)]),
    "Concatenate-axis1": (lambda: L.Concatenate(axis=1), [(2, 2), (3, 2)]),
    "Reshape": (lambda: L.Reshape((2, -1)), [(3, 4)]),
    "Flatten": (lambda: L.Flatten(), [(2, 3, 4)]),
    "Flatten-channels-first": (lambda: L.Flatten(data_format="channels_first"), [(2, 3, 4)]),
    "Permute": (lambda: L.Permute((2, 1, 3)), [(2, 3, 4)]),
    "RepeatVector": (lambda: L.RepeatVector(3), [(4,)]),
    "Dropout": (lambda: L.Dropout(0.5), [(3, 4)]),
    "SpatialDropout2D": (lambda: L.SpatialDropout2D(0.5), [(2, 2, 3)]),
    "GaussianNoise": (lambda: L.GaussianNoise(1.0), [(3, 4)]),
    "GaussianDropout": (lambda: L.GaussianDropout(0.3), [(3, 4)]),
    "AlphaDropout": (lambda: L.AlphaDropout(0.3), [(3, 4)]),
    "ActivityRegularization": (lambda: L.ActivityRegularization(l1=0.1), [(3, 4)]),
    "Identity": (lambda: L.Identity(), [(3, 4)]),
}

ACTIVATIONS = ["linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "hard_sigmoid",
               "hard_silu", "hard_swish", "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "softsign",
               "mish", "exponential"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_keras_layer_matches_reference(case):
    factory, shapes = CASES[case]
    model = single_layer(factory(), *shapes)
    arrays = [seeded((1,) + tuple(s), seed=i) for i, s in enumerate(shapes)]
    check_keras_model(model, *arrays)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_keras_activation_matches_keras(name):
    model = single_layer(L.Activation(name), (3, 5))
    check_keras_model(model, seeded((1, 3, 5), scale=3.0))


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_activation_forms(approximate):
    model = single_layer(L.Activation(functools.partial(keras.activations.gelu, approximate=approximate)), (6,))
    graph = check_keras_model(model, seeded((1, 6), scale=3.0))
    assert graph.nodes[-1].attrs["approximate"] == ("tanh" if approximate else "none")


def test_batch_of_two_via_input_spec():
    model = single_layer(L.Conv2D(2, 3, padding="same"), (5, 5, 3))
    graph = check_keras_model(model, seeded((2, 5, 5, 3)), specs=["2x5x5x3"])
    assert graph.inputs[0].type.shape == (2, 5, 5, 3)
