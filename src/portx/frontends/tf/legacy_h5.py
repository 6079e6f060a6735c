"""A tf.keras 2 ``.h5`` file that Keras 3 cannot read, through tf_keras and tf2onnx (Note [tf sources] in
frontends/tf/__init__.py).

Example:
    >>> src = load_legacy_h5("old_model.h5")
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import BadInput, first_line
from ..keras.files import checked_config
from .source import EXTRA_HINT, TF_OPSET, TfSource, import_tf, tf_source, to_onnx

__all__ = ["LEGACY_H5_CLASSES", "load_legacy_h5"]

#: layer classes only tf.keras 2 has (``tf.math.add(x, y)`` in a functional model, ``x[:, 1:]``)
LEGACY_H5_CLASSES = frozenset({"TFOpLambda", "SlicingOpLambda"})


def load_legacy_h5(path, input_specs=(), unsafe=False) -> TfSource:
    """A TfSource for a tf.keras 2 ``.h5`` file Keras 3 cannot read (Note [tf sources])."""
    label = str(path)
    checked_config(Path(path), unsafe)  # safe mode: no Lambda code, before tf_keras reads anything
    tf, tf2onnx = import_tf(label)
    try:
        import tf_keras
    except ImportError:
        raise BadInput(f"{label}: a tf.keras 2 file (layers {sorted(LEGACY_H5_CLASSES)}) needs tf_keras to read",
                       hint=EXTRA_HINT) from None
    try:
        model = tf_keras.models.load_model(label, compile=False, safe_mode=not unsafe)
    except Exception as exc:  # noqa: BLE001 - tf_keras raises ValueError/OSError/... for bad files
        raise BadInput(f"{label}: tf.keras could not load the model ({first_line(exc, 200)})",
                       hint="re-save it with tf.keras, or load it in Python and save it as .keras") from None
    specs = [tf.TensorSpec(tuple(x.shape), x.dtype, name=f"input_{i}") for i, x in enumerate(model.inputs)]
    function = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False),
                           input_signature=specs)
    proto = to_onnx(tf2onnx, lambda: tf2onnx.convert.from_function(function, input_signature=specs,
                                                                     opset=TF_OPSET), label)

    def reference(arrays):
        got = model([tf.constant(a) for a in arrays] if len(arrays) > 1 else tf.constant(arrays[0]), training=False)
        return [np.asarray(o) for o in (got if isinstance(got, (list, tuple)) else [got])]

    notes = [f"tf.keras 2 model converted to ONNX opset {TF_OPSET} by tf2onnx {tf2onnx.__version__}; verified "
             f"against tf_keras {tf_keras.__version__}"]
    return tf_source(proto, label, reference, input_specs, notes)
