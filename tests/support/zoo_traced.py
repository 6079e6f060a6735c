"""Subclassed Keras models (lowered through a traced jaxpr), built with fixed seeds: the free-dims tests and
``benchmarks/free_dims.py`` (``keras-<name>``) use them (Note [jax symbols] in frontends/jax/symbols.py).

``TRACED[name]()`` gives (built model, example inputs, ``--dynamic`` axes).

Example:
    >>> model, inputs, dynamic = TRACED["unet"]()
    >>> inputs[0].shape, dynamic
    ((2, 8, 12, 3), ['x:1', 'x:2'])
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

__all__ = ["Mlp", "Rows", "Pooled", "UNet", "NeedsInt", "Encoder", "TRACED", "built"]


class Mlp(keras.Model):
    def __init__(self):
        super().__init__()
        self.up, self.down = layers.Dense(16, activation="gelu"), layers.Dense(4)

    def call(self, x):
        return self.down(self.up(x))


class Rows(keras.Model):
    """A reshape by the batch read from the input, and a constant of the batch's size (folded at static sizes)."""

    def __init__(self):
        super().__init__()
        self.fc = layers.Dense(8)

    def call(self, x):
        y = keras.ops.reshape(self.fc(x), (x.shape[0], 2, 4))
        return keras.ops.softmax(y, axis=-1) * keras.ops.ones((x.shape[0], 1, 1))


class Pooled(keras.Model):
    """Reads the first and last position by indexing (``h[:, 0]``): a gather with a symbolic batch, a slice without
    (Note [indexing with symbols] in frontends/jax/symbols.py)."""

    def __init__(self):
        super().__init__()
        self.fc, self.head = layers.Dense(8, activation="tanh"), layers.Dense(3)

    def call(self, x):
        h = self.fc(x)
        return self.head(h[:, 0] + h[:, -1] + h[:, 1:3].sum(axis=1))


class UNet(keras.Model):
    """Pools by 2 and upsamples back onto the skip: the image size is divided (``floordiv(d, 2)``). No two sizes of
    the example are equal (8 x 12 images, 5 channels): a literal equal to a moving size by chance is read as that
    size, and the graph is then lowered again (``_by_literals`` in passes/static_batch.py), as for torch."""

    def __init__(self):
        super().__init__()
        self.stem = layers.Conv2D(5, 3, padding="same", activation="relu")
        self.pool, self.mid = layers.MaxPooling2D(2), layers.Conv2D(5, 3, padding="same", activation="relu")
        self.up, self.head = layers.UpSampling2D(2), layers.Conv2D(2, 1)

    def call(self, x):
        skip = self.stem(x)
        return self.head(keras.ops.concatenate([skip, self.up(self.mid(self.pool(skip)))], axis=-1))


class NeedsInt(Rows):
    """Reads the batch as a Python int, which a symbolic size cannot be: JAX's symbolic trace fails."""

    def call(self, x):
        return keras.ops.reshape(self.fc(x), (int(x.shape[0]), 2, 4))


class Encoder(keras.Model):
    """Four pre-norm attention blocks over a sequence of 24 vectors of 64: batch and sequence free."""

    def __init__(self, blocks=4, dim=64):
        super().__init__()
        self.blocks = [(layers.LayerNormalization(), layers.MultiHeadAttention(4, dim // 4),
                        layers.LayerNormalization(), layers.Dense(2 * dim, activation="gelu"), layers.Dense(dim))
                       for _ in range(blocks)]

    def call(self, x):
        for norm1, attention, norm2, up, down in self.blocks:
            h = norm1(x)
            x = x + attention(h, h)
            x = x + down(up(norm2(x)))
        return x


def built(make, shape):
    """``make()`` seeded and built by one call on zeros of ``shape``."""
    keras.utils.set_random_seed(0)
    model = make()
    model(np.zeros(shape, np.float32))
    return model


def _entry(make, shape, dynamic=()):
    def build():
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        return built(make, shape), (x,), list(dynamic)
    return build


TRACED = {"mlp": _entry(Mlp, (2, 12)), "rows": _entry(Rows, (3, 6)), "pooled": _entry(Pooled, (2, 5, 6)),
          "unet": _entry(UNet, (2, 8, 12, 3), ["x:1", "x:2"]), "needs-int": _entry(NeedsInt, (3, 6)),
          "encoder": _entry(Encoder, (2, 24, 64), ["x:1"])}
