"""keras.applications models for the whole-model tests, built in a second or two instead of half a minute.

``build_application(name)`` gives the model at the smallest input it accepts (``keras_harness.APPLICATIONS``:
32x32; Xception 71, InceptionV3 75) with ``weights=None`` and ``include_top=False``, and a seeded batch in the
model's own pixel range (0..255 for MobileNetV3Small, EfficientNetB0/V2B0 and ConvNeXtTiny, whose
preprocessing is inside the model; 0..1 otherwise). ``side="full"`` builds the ImageNet size instead (224;
Xception and InceptionV3 299).

Note [fast build]: with the JAX backend, building a keras.applications model spends nearly all its time
compiling one XLA random-number program per distinct weight shape for the initializers (EfficientNetB0: 33 s
of CPU, 162 compilations). Here the model is built inside ``keras.StatelessScope(initialize_variables=False)``,
which leaves every variable uninitialized with its initializer recorded; each initializer is then replaced by
a NumPy draw with the same mean and variance (Keras' own fan rule, ``compute_fans``) and the variables are
initialized on leaving a second scope. Nothing else changes: the layers, their configs and the graph are
Keras' own. Batch-norm statistics and affine weights are then redrawn (``redraw_batch_norms``), since fresh
ones are the identity and would hide a folding error.

Example:
    >>> model, x = build_application("InceptionV3")
    >>> x.shape
    (1, 75, 75, 3)
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import initializers  # noqa: E402
from keras.src.initializers.random_initializers import compute_fans  # noqa: E402

from tests.support.keras_harness import APPLICATIONS, redraw_batch_norms  # noqa: E402

__all__ = ["APPLICATIONS", "FULL_SIDES", "build_application", "numpy_initial_value"]

#: constructor name -> the input side of its ImageNet weights (the full-size sweep)
FULL_SIDES = {name: 299 if name in ("Xception", "InceptionV3") else 224 for name in APPLICATIONS}


def numpy_initial_value(init, shape, rng):
    """A float32 draw from ``rng`` with the mean and variance of Keras initializer ``init``, or None.

    Example: ``numpy_initial_value(keras.initializers.HeNormal(), (3, 3, 8, 16), rng).std()`` is about
    ``sqrt(2 / 72)``.
    """
    if isinstance(init, initializers.VarianceScaling):
        fan_in, fan_out = compute_fans(shape, init.input_axes, init.output_axes)
        fan = {"fan_in": fan_in, "fan_out": fan_out}.get(init.mode, (fan_in + fan_out) / 2.0)
        value = rng.normal(0.0, np.sqrt(init.scale / max(1.0, fan)), shape)
    elif isinstance(init, (initializers.RandomNormal, initializers.TruncatedNormal)):
        value = rng.normal(init.mean, init.stddev, shape)
    elif isinstance(init, initializers.RandomUniform):
        value = rng.uniform(init.minval, init.maxval, shape)
    elif isinstance(init, (initializers.Zeros, initializers.Ones, initializers.Constant)):
        fill = {initializers.Zeros: 0.0, initializers.Ones: 1.0}.get(type(init), getattr(init, "value", None))
        value = np.full(shape, fill)
    else:
        return None
    return value.astype(np.float32)


def _built_without_initializers(name, side, **kwargs):
    """Note [fast build]: the model, its variables initialized from NumPy draws (seed 0)."""
    rng = np.random.default_rng(0)
    with keras.StatelessScope(initialize_variables=False) as scope:
        model = getattr(keras.applications, name)(weights=None, include_top=False, input_shape=(side, side, 3),
                                                  **kwargs)
    if scope.state_mapping:  # an assign during construction would be lost in the scope
        raise RuntimeError(f"{name}: {len(scope.state_mapping)} variable updates while building; build it "
                           "with keras_harness.build_application instead")
    for var in model.weights:
        value = numpy_initial_value(var._initializer, tuple(var.shape), rng)
        if value is not None:
            var._initializer = lambda shape, dtype=None, value=value: value
    with keras.StatelessScope():
        pass  # leaving the outermost scope initializes every deferred variable
    return model


def build_application(name, side=None, **kwargs):
    """(model, x): keras.applications ``name`` at ``side`` (default the smallest; "full": ImageNet size) with its
    other arguments ``kwargs``, weights drawn from seed 0, batch norms redrawn, and a seeded (1, side, side, 3)
    batch in its pixel range.

    Example: ``model, x = build_application("MobileNetV2", alpha=0.35)``; ``x.shape == (1, 32, 32, 3)``.
    """
    side = FULL_SIDES[name] if side == "full" else side or APPLICATIONS[name][0]
    keras.utils.set_random_seed(0)
    model = _built_without_initializers(name, side, **kwargs)
    redraw_batch_norms(model)
    x = np.random.default_rng(0).uniform(0, APPLICATIONS[name][2], (1, side, side, 3)).astype(np.float32)
    return model, x
