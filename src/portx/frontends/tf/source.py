"""A TensorFlow model as a ``TfSource``: its tf2onnx graph, run by TensorFlow itself (Note [tf sources] in
frontends/tf/__init__.py); TensorFlow's quiet import and the tf2onnx call both loaders share.

Example:
    >>> tf, tf2onnx = import_tf("saved_model_dir/")
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from ...errors import BadInput, UnsupportedOps, first_line
from ...logs import quiet_native_logs
from ..onnx.source import OnnxSource, load_onnx_source

__all__ = ["TF_OPSET", "EXTRA_HINT", "TfSource", "quiet_native_logs", "import_tf", "to_onnx", "tf_source"]

#: the ONNX opset tf2onnx writes (its best-tested one)
TF_OPSET = 17
#: what a missing extra tells the user
EXTRA_HINT = "install the TensorFlow extra: pip install 'portx[tf]' (tensorflow-cpu, tf2onnx and tf_keras)"


class TfSource(OnnxSource):
    """A TensorFlow model lowered through its tf2onnx graph; ``run`` is TensorFlow's own (Note [tf sources])."""

    def __init__(self, proto, input_types, label, reference, notes=None):
        super().__init__(proto, input_types, label, None, notes)
        self.reference = reference

    def run(self, *arrays) -> list:
        """TensorFlow's outputs on NumPy inputs, in the ONNX graph's output order."""
        feeds = [np.asarray(a).astype(t.dtype, copy=False) for a, t in zip(arrays, self.input_types)]
        try:
            return [np.asarray(out) for out in self.reference(feeds)]
        except Exception as exc:  # noqa: BLE001 - TensorFlow raises its own error types
            raise BadInput(f"{self.label}: TensorFlow cannot run the model at input shapes "
                           f"{[tuple(np.shape(a)) for a in arrays]} ({first_line(exc, 200)})") from None

    def resized(self, sizes):
        """The same model at other input sizes (BadInput where a dim is fixed; see ``OnnxSource.resized``)."""
        other = super().resized(sizes)
        return TfSource(self.proto, other.input_types, self.label, self.reference)


def import_tf(label):
    """(tensorflow, tf2onnx), quiet; BadInput naming the extra when they are not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        with quiet_native_logs():
            import tensorflow as tf
            import tf2onnx

            tf.constant(0.0).numpy()  # the first op probes for devices (and logs it)
    except ImportError:
        raise BadInput(f"{label}: reading a TensorFlow model needs tensorflow and tf2onnx", hint=EXTRA_HINT) \
            from None
    tf.get_logger().setLevel(logging.ERROR)
    for name in ("tf2onnx", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return tf, tf2onnx


def to_onnx(tf2onnx, convert, label):
    """The ModelProto from ``convert()``; UnsupportedOps listing the TensorFlow ops tf2onnx has no rule for."""
    try:
        proto, _ = convert()
    except Exception as exc:  # noqa: BLE001 - tf2onnx raises ValueError/KeyError/... for what it cannot take
        raise UnsupportedOps([("tf2onnx", [label], first_line(exc, 200))], where=f"TensorFlow model {label}") \
            from None
    import onnx

    foreign = sorted({(n.op_type, n.name) for n in proto.graph.node
                      if n.domain not in ("", "ai.onnx") or not onnx.defs.has(n.op_type)})
    if foreign:
        raise UnsupportedOps([(op, [name], "a TensorFlow op tf2onnx does not convert") for op, name in foreign],
                             where=f"TensorFlow model {label}")
    return proto


def tf_source(proto, label, reference, input_specs, notes) -> TfSource:
    """The TfSource of ``proto`` (tf2onnx's graph) that ``reference`` runs."""
    proto.graph.name = Path(label).name or "tensorflow"
    base = load_onnx_source(proto, input_specs)
    src = TfSource(base.proto, base.input_types, label, reference, notes + base.notes)
    src.sizes_from = base.sizes_from  # Note [contradicted dim_param] in onnx/source.py
    return src
