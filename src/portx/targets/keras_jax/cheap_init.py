"""Building a written Keras model whose weights are about to be overwritten, without running initializers.

Keras creates every weight by running its initializer (``GlorotUniform``, ``HeNormal``, ...). On JAX each
random initializer is one XLA compile per distinct weight shape, and portx overwrites the values right after
(``set_weights`` / ``load_weights``): on the bundled sample that was 5 of 16 seconds of emit, and a ResNet
has dozens of distinct shapes. Inside ``cheap_initializers()`` every ``Layer.add_weight`` gets NumPy zeros
instead (no compile, no device program), so the build costs only the allocation.

Only portx's own in-process builds use it (emit, reloading OUT for verification, the per-node trace); the
written ``model.py`` is unchanged and keeps Keras' initializers for a user who trains it from scratch.

Example:
    >>> with cheap_initializers():
    ...     model = module.build_model()
    >>> model.load_weights("out/model.weights.h5")
"""
from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["cheap_initializers"]


class _Zeros:
    """An initializer returning host zeros: Keras turns them into the variable without compiling anything."""

    def __call__(self, shape, dtype=None):
        from keras import backend

        name = backend.standardize_dtype(dtype or backend.floatx())
        return np.zeros(tuple(shape), dtype=_numpy_dtype(name))


def _numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


@contextlib.contextmanager
def cheap_initializers():
    """Within the block, weights Keras layers create start as zeros (see the module docstring)."""
    import keras

    layer_class = keras.layers.Layer
    original = layer_class.add_weight

    def add_weight(self, *args, **kwargs):
        if not args:  # the keyword form every Keras 3 layer uses; the legacy positional form is left alone
            kwargs["initializer"] = _Zeros()
        return original(self, *args, **kwargs)

    layer_class.add_weight = add_weight
    try:
        yield
    finally:
        layer_class.add_weight = original
