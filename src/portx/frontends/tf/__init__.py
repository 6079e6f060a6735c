"""TensorFlow sources (the ``[tf]`` extra): SavedModel folders and legacy tf.keras ``.h5`` files, through tf2onnx.

tf2onnx turns the TensorFlow graph into ONNX at opset ``TF_OPSET``; the ONNX frontend lowers that (so every
ONNX import rule serves TensorFlow too), while verification runs the TensorFlow model itself as the
reference: a ``TfSource`` is an ``OnnxSource`` whose ``run`` calls TensorFlow.

Note [tf sources]:
- A SavedModel is read only with ``trust_savedmodel`` (``--trust-savedmodel``): converting and verifying it
  runs its graph. It is read through its serving signature (``serving_default``, else the only one). Before
  anything runs, its frozen graph is scanned for ops that touch files or run Python (``UNSAFE_TF_OPS``):
  loading a SavedModel runs no Python, but running its graph runs every op in it.
- A ``.h5`` file goes to the Keras frontend whenever Keras 3 can read it. Only files naming layer classes
  that exist in tf.keras 2 alone (``LEGACY_H5_CLASSES``: the ``tf.math.*`` and slicing calls of a functional
  model) come here, read by ``tf_keras`` after the Keras frontend's safe-mode checks (no Lambda code).
- The batch stays free: tf2onnx keeps TensorFlow's ``None`` dims as ONNX ``dim_param``s. A signature with a fixed
  batch (``tf.TensorSpec([2, ...])``) is a static program, as an ONNX file with fixed dims is: its batch is freed
  by the ops' shape rules where rows are independent (Note [static batch] in passes/static_batch.py) and checked
  against TensorFlow itself run on row chunks of the signature's batch (Note [rows independent]).

The package: ``source.py`` (``TfSource``, TensorFlow's import, the tf2onnx call), ``saved_model.py`` and
``legacy_h5.py`` (one loader each); this module tells the two kinds of file apart without importing TensorFlow.

Example:
    >>> src = load_saved_model("saved_model_dir/", trusted=True)
    >>> graph = src.lower(); reference = src.run(*arrays)       # TensorFlow's outputs
"""
from __future__ import annotations

import os
from pathlib import Path

from ...errors import BadInput
from ..keras.archive import iter_objects, read_stored_model
from .legacy_h5 import LEGACY_H5_CLASSES, load_legacy_h5
from .saved_model import UNSAFE_TF_OPS, load_saved_model
from .source import TF_OPSET, TfSource, quiet_native_logs

__all__ = ["TF_OPSET", "UNSAFE_TF_OPS", "LEGACY_H5_CLASSES", "TfSource", "is_saved_model", "is_legacy_h5",
           "load_saved_model", "load_legacy_h5", "quiet_native_logs"]


def is_saved_model(source) -> bool:
    """True for a folder holding ``saved_model.pb`` (without importing TensorFlow)."""
    return isinstance(source, (str, os.PathLike)) and (Path(source) / "saved_model.pb").is_file()


def is_legacy_h5(path) -> bool:
    """True for a ``.h5`` model whose config names a layer class only tf.keras 2 has (Note [tf sources])."""
    path = Path(path)
    if path.suffix.lower() not in (".h5", ".hdf5") or not path.is_file():
        return False
    try:
        config = read_stored_model(path).config
    except BadInput:
        return False  # the Keras frontend says what is wrong with it
    return any(obj["class_name"] in LEGACY_H5_CLASSES for obj, _ in iter_objects(config))
