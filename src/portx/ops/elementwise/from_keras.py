"""Keras import rules for activation layers, the layers that are identities at inference, and portx's Constant.

``Activation("gelu")`` goes through ``call.activation`` (frontends/keras/activations.py); ReLU with
``max_value`` / ``threshold`` / ``negative_slope`` follows ``keras.activations.relu`` term by term:
``clip(where(x > t, x, 0), 0, max) - slope * relu(t - x)``. Noise layers and ActivityRegularization
do nothing at inference and return their input (Dropout is kept: ``ops/dropout/``). Rules that build several
IR ops or none (Activation, PReLU, the identities, Constant) hang on no OpDef (``ir.imports``).
The Softmax layer is in reduce/from_keras.py.

Example:
    ReLU(max_value=6.0) -> clamp {min=0.0, max=6.0};  PReLU -> relu(x) - alpha * relu(-x)
"""
from __future__ import annotations

import numpy as np

from ...ir import imports
from ..elementwise import BINARY, WHERE
from ..elementwise.unary import UNARY

__all__ = []


def _scalar(call, value, hint):
    return call.const(np.array(value, np.float32), hint)


@imports("keras", "Activation")
def _activation_from_keras(call):
    """Activation(name): the Keras activation composed from IR ops."""
    return call.activation(call.inputs[0], call.layer.activation)


def _relu_positive(call, x, max_value, threshold):
    if threshold:
        zero = _scalar(call, 0.0, "zero")
        above = call.emit(BINARY["gt"], [x, _scalar(call, threshold, "threshold")])
        x = call.emit(WHERE, [above, x, zero])
        return x if max_value is None else call.emit(UNARY["clamp"], [x], {"min": 0.0, "max": float(max_value)})
    if max_value is None:
        return call.emit(UNARY["relu"], [x])
    return call.emit(UNARY["clamp"], [x], {"min": 0.0, "max": float(max_value)})


@UNARY["relu"].imports("keras", "ReLU")
def _relu_from_keras(call):
    """ReLU(max_value, negative_slope, threshold) as keras.activations.relu computes it."""
    layer, x = call.layer, call.inputs[0]
    slope = float(layer.negative_slope or 0.0)
    threshold = float(layer.threshold or 0.0)
    max_value = None if layer.max_value is None else float(layer.max_value)
    if slope and max_value is None and not threshold:
        return call.emit(UNARY["leaky_relu"], [x], {"negative_slope": slope})
    y = _relu_positive(call, x, max_value, threshold)
    if not slope:
        return y
    shifted = call.emit(UNARY["neg"], [x])
    if threshold:
        shifted = call.emit(BINARY["add"], [shifted, _scalar(call, threshold, "threshold")])
    negative = call.emit(BINARY["mul"], [_scalar(call, slope, "slope"), call.emit(UNARY["relu"], [shifted])])
    return call.emit(BINARY["sub"], [y, negative])


@UNARY["leaky_relu"].imports("keras", "LeakyReLU")
def _leaky_relu_from_keras(call):
    """LeakyReLU(negative_slope) (Keras 3 default 0.3)."""
    return call.emit(UNARY["leaky_relu"], [call.inputs[0]], {"negative_slope": float(call.layer.negative_slope)})


@imports("keras", "PReLU")
def _prelu_from_keras(call):
    """PReLU: relu(x) - alpha * relu(-x), alpha broadcast over its shared axes."""
    x = call.inputs[0]
    alpha = call.param(call.weight("alpha"), "alpha")
    negative = call.emit(UNARY["relu"], [call.emit(UNARY["neg"], [x])])
    return call.emit(BINARY["sub"], [call.emit(UNARY["relu"], [x]), call.emit(BINARY["mul"], [alpha, negative])])


@UNARY["elu"].imports("keras", "ELU")
def _elu_from_keras(call):
    """ELU(alpha)."""
    return call.emit(UNARY["elu"], [call.inputs[0]], {"alpha": float(call.layer.alpha)})


@imports("keras", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization", "Identity",
         "SizeCheck")
def _inference_identity_from_keras(call):
    """Noise and regularization layers: the input itself at inference (recorded as dropped; ``Dropout``
    is the ``dropout`` family's); portx's own ``SizeCheck`` (Note [size checks] in targets/size_checks.py)."""
    if type(call.layer).__name__ not in ("Identity", "SizeCheck"):
        call.dropped(call.inputs[0], type(call.layer).__name__)
    return call.inputs[0]


@imports("keras", "Constant")
def _stored_array_from_keras(call):
    """portx's own ``Constant`` layer (a stored array the Keras-JAX emitter writes): its value, as a parameter."""
    weights = call.layer.weights
    if len(weights) != 1 or not hasattr(call.layer, "value"):
        call.unsupported("a Constant layer that is not portx's (one stored array in .value)")
    return call.param(call.weight(weights[0].name), "value")  # trainable when the Constant is
