"""Builders of hostile ``.keras`` and ``.h5`` files: a real Keras model saved, then its config or members edited.

Every code-execution payload creates a marker file when it runs; the tests assert it never exists.
"""
import base64
import json
import marshal
import pickle
import warnings
import zipfile

import keras
from tests.support.pt2_hostile import Marker  # one payload class for every format

__all__ = ["small_dense", "small_cnn", "rewrite", "edit_config", "lambda_code", "marker_lambda", "Marker",
           "pickle_payload", "layer_config", "one_error_line"]


def small_dense(path, name="fc", units=3):
    """Input x (4,) -> Dense(units) named ``name``, saved as ``path`` (.keras or .h5)."""
    keras.utils.set_random_seed(0)
    x = keras.Input((4,), name="x")
    keras.Model(x, keras.layers.Dense(units, name=name)(x), name="small").save(path)
    return path


def small_cnn(path):
    """A small functional CNN with a residual branch, batch norm, pooling and a softmax head."""
    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 3), name="img")
    y = keras.layers.Conv2D(4, 3, padding="same", name="conv")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.Add(name="add")([y, keras.layers.Conv2D(4, 1, name="skip")(x)])
    y = keras.layers.MaxPooling2D(2, name="pool")(y)
    y = keras.layers.Dense(5, activation="softmax", name="fc")(keras.layers.Flatten(name="flat")(y))
    keras.Model(x, y, name="cnn").save(path)
    return path


def rewrite(src, dst, members=None, drop=(), extra=()):
    """Copy the zip ``src`` to ``dst`` with ``members`` {name: bytes} replaced, ``drop`` left out and
    ``extra`` (name, bytes[, compress_type]) appended (names may repeat)."""
    members = members or {}
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # a repeated name is the point
        for info in z.infolist():
            if info.filename not in drop:
                out.writestr(info.filename, members.get(info.filename, z.read(info.filename)))
        for name, data, *compress in extra:
            out.writestr(zipfile.ZipInfo(name), data, compress_type=compress[0] if compress else zipfile.ZIP_STORED)
    return dst


def edit_config(src, dst, edit):
    """``dst``: ``src`` with ``edit(config)`` applied to config.json (``edit`` may return a replacement)."""
    with zipfile.ZipFile(src) as z:
        config = json.loads(z.read("config.json"))
    config = edit(config) or config
    data = config if isinstance(config, bytes) else json.dumps(config).encode()
    return rewrite(src, dst, members={"config.json": data})


def layer_config(config, name):
    """The serialized layer called ``name`` in a functional model's config."""
    return next(layer for layer in config["config"]["layers"] if layer["config"]["name"] == name)


def marker_lambda(marker):
    """A lambda that creates ``marker`` and returns its input: the code a hostile file would carry."""
    return f"lambda x: (__import__('builtins').open({str(marker)!r}, 'w').close(), x)[1]"


def lambda_code(marker) -> str:
    """``marker_lambda`` marshalled and base64-encoded, as Keras stores a Lambda's code."""
    code = compile(marker_lambda(marker), "<payload>", "eval").co_consts[0]
    return base64.b64encode(marshal.dumps(code)).decode()


def pickle_payload(marker) -> bytes:
    """Pickle bytes whose loading creates ``marker``."""
    return pickle.dumps(Marker(marker))


def one_error_line(output) -> str:
    """The single ``portx:`` line of a failed run; fails when there are several lines or a traceback."""
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith("  ")]
    assert len(lines) == 1 and lines[0].startswith("portx: "), output
    assert "Traceback" not in output and "internal error" not in output, output
    return lines[0]
