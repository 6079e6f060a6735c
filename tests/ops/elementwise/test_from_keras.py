"""Keras import of the elementwise family: activation layers and ``Activation(name)``, the affine layers
(Rescaling, Normalization, ConvNeXt's LayerScale/StochasticDepth) and the layers that are the identity at
inference (Dropout, noise, ActivityRegularization). Each is a tiny functional model, lowered, validated, the
IR's NumPy reference compared with Keras (JAX backend) at 1e-5, then each target's emitted model compared
with Keras. keras.ops arithmetic is in tests/frontends/test_keras_ops.py.

Example:
    pytest tests/ops/elementwise/test_from_keras.py -k ReLU
"""
import functools

import keras
import numpy as np
import pytest
from keras import layers as L

from tests.support.keras_harness import check_keras_layer, check_keras_model, keras_case, seeded, single_layer

#: Keras' own initial weights from seed 0 (adapted or given statistics), not re-drawn
OWN_WEIGHTS = {"seed": 0, "randomize": False}


def _adapted_normalization(**kwargs):
    layer = L.Normalization(**kwargs)
    layer.adapt(seeded((16, 4, 4, 3), seed=3) * 2.0 + 1.0)
    return layer


CASES = [
    keras_case(lambda: L.ReLU(), (3, 4), id="ReLU"),
    keras_case(lambda: L.ReLU(max_value=0.5), (3, 4), id="ReLU-max"),
    keras_case(lambda: L.ReLU(negative_slope=0.1), (3, 4), id="ReLU-slope"),
    keras_case(lambda: L.ReLU(threshold=0.3), (3, 4), id="ReLU-threshold"),
    keras_case(lambda: L.ReLU(max_value=1.0, negative_slope=0.2, threshold=0.4), (3, 4), id="ReLU-all"),
    keras_case(lambda: L.ReLU(max_value=6.0, negative_slope=0.3), (3, 4), id="ReLU-slope-max"),
    keras_case(lambda: L.LeakyReLU(), (3, 4), id="LeakyReLU"),
    keras_case(lambda: L.LeakyReLU(negative_slope=0.05), (3, 4), id="LeakyReLU-0.05"),
    keras_case(lambda: L.PReLU(), (2, 3, 2), id="PReLU"),
    keras_case(lambda: L.PReLU(shared_axes=[1, 2]), (2, 3, 2), id="PReLU-shared"),
    keras_case(lambda: L.ELU(alpha=0.5), (3, 4), id="ELU"),
    keras_case(lambda: L.GaussianNoise(1.0), (3, 4), id="GaussianNoise"),
    keras_case(lambda: L.GaussianDropout(0.3), (3, 4), id="GaussianDropout"),
    keras_case(lambda: L.AlphaDropout(0.3), (3, 4), id="AlphaDropout"),
    keras_case(lambda: L.ActivityRegularization(l1=0.1), (3, 4), id="ActivityRegularization"),
    keras_case(lambda: L.Identity(), (3, 4), id="Identity"),
    keras_case(lambda: L.Rescaling(1 / 255.0), (4, 4, 3), id="Rescaling", **OWN_WEIGHTS),
    keras_case(lambda: L.Rescaling(np.array([0.5, 2.0, -1.0]), offset=-1.0), (4, 4, 3),
               id="Rescaling-offset-per-channel", **OWN_WEIGHTS),
    keras_case(_adapted_normalization, (4, 4, 3), id="Normalization-adapted", **OWN_WEIGHTS),
    keras_case(lambda: _adapted_normalization(axis=None), (4, 4, 3), id="Normalization-adapted-axis-none",
               **OWN_WEIGHTS),
    keras_case(lambda: L.Normalization(axis=(1, 2), mean=np.arange(12.0).reshape(4, 3),
                                       variance=np.linspace(0.5, 3.0, 12).reshape(4, 3)),
               (4, 3, 2), id="Normalization-given-axis-1-2", **OWN_WEIGHTS),
    keras_case(lambda: L.Normalization(mean=[0.5, -1.0, 2.0], variance=[4.0, 0.25, 0.0], invert=True), (5, 3),
               id="Normalization-invert", **OWN_WEIGHTS),
]

ACTIVATIONS = ["linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "hard_sigmoid",
               "hard_silu", "hard_swish", "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "softsign",
               "mish", "exponential"]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_keras_activation_matches_keras(target, name):
    model = single_layer(L.Activation(name), (3, 5))
    check_keras_model(model, seeded((1, 3, 5), scale=3.0), target=target)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_activation_forms(target, approximate):
    model = single_layer(L.Activation(functools.partial(keras.activations.gelu, approximate=approximate)), (6,))
    graph = check_keras_model(model, seeded((1, 6), scale=3.0), target=target)
    assert graph.nodes[-1].attrs["approximate"] == ("tanh" if approximate else "none")


def test_convnext_custom_layers(target):
    from keras.src.applications.convnext import LayerScale, StochasticDepth

    keras.utils.set_random_seed(3)
    x = keras.Input((3, 3, 4))
    y = x + StochasticDepth(0.3)(LayerScale(0.5, 4)(L.Dense(4)(x)))
    check_keras_model(keras.Model(x, y), seeded((1, 3, 3, 4)), target=target)
