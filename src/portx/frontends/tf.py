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

Example:
    >>> src = load_saved_model("saved_model_dir/", trusted=True)
    >>> graph = src.lower(); reference = src.run(*arrays)       # TensorFlow's outputs
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

import numpy as np

from ..errors import BadInput, UnsupportedOps, first_line
from .keras.archive import iter_objects, read_stored_model
from .onnx.source import OnnxSource, load_onnx_source

__all__ = ["TF_OPSET", "UNSAFE_TF_OPS", "LEGACY_H5_CLASSES", "TfSource", "is_saved_model", "is_legacy_h5",
           "load_saved_model", "load_legacy_h5", "quiet_native_logs"]

#: the ONNX opset tf2onnx writes (its best-tested one)
TF_OPSET = 17
#: TensorFlow ops that read or write files or call back into Python: a graph holding one is refused
UNSAFE_TF_OPS = frozenset({
    "PyFunc", "PyFuncStateless", "EagerPyFunc", "ReadFile", "WriteFile", "MatchingFiles", "DeleteFile",
    "ImmutableConst", "FixedLengthRecordReader", "FixedLengthRecordReaderV2", "TextLineReader", "TextLineReaderV2",
    "WholeFileReader", "WholeFileReaderV2", "TFRecordReader", "TFRecordReaderV2", "IdentityReader", "LMDBReader",
    "SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "WriteSummary", "WriteScalarSummary",
    "CreateSummaryFileWriter", "DecodeProtoV2", "ExperimentalDatasetToTFRecord", "DatasetToTFRecord"})
#: layer classes only tf.keras 2 has (``tf.math.add(x, y)`` in a functional model, ``x[:, 1:]``)
LEGACY_H5_CLASSES = frozenset({"TFOpLambda", "SlicingOpLambda"})
#: what a missing extra tells the user
_EXTRA_HINT = "install the TensorFlow extra: pip install 'portx[tf]' (tensorflow-cpu, tf2onnx and tf_keras)"


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


@contextlib.contextmanager
def quiet_native_logs():
    """Within the block, file descriptor 2 goes to /dev/null: TensorFlow 2.21's C++ start-up lines (oneDNN,
    CUDA probing) ignore TF_CPP_MIN_LOG_LEVEL and write there directly. Python exceptions are unaffected."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _import_tf(label):
    """(tensorflow, tf2onnx), quiet; BadInput naming the extra when they are not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        with quiet_native_logs():
            import tensorflow as tf
            import tf2onnx

            tf.constant(0.0).numpy()  # the first op probes for devices (and logs it)
    except ImportError:
        raise BadInput(f"{label}: reading a TensorFlow model needs tensorflow and tf2onnx", hint=_EXTRA_HINT) \
            from None
    tf.get_logger().setLevel(logging.ERROR)
    for name in ("tf2onnx", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return tf, tf2onnx


def _refuse_unsafe(graph_def, label):
    """BadInput naming every node (and function body) that reads or writes files or runs Python."""
    found = [(node.name, node.op) for node in graph_def.node if node.op in UNSAFE_TF_OPS]
    for fn in graph_def.library.function:
        found += [(f"{fn.signature.name}/{node.name}", node.op) for node in fn.node_def if node.op in UNSAFE_TF_OPS]
    if found:
        listed = ", ".join(f"{name} ({op})" for name, op in found[:5]) + (" ..." if len(found) > 5 else "")
        raise BadInput(f"{label}: the graph holds ops that touch files or run Python: {listed}; refused",
                       hint="export a serving signature of the computation alone (no file I/O, no tf.py_function)")


def _to_onnx(tf2onnx, convert, label):
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


def _source(proto, label, reference, input_specs, notes):
    proto.graph.name = Path(label).name or "tensorflow"
    base = load_onnx_source(proto, input_specs)
    src = TfSource(base.proto, base.input_types, label, reference, notes + base.notes)
    src.sizes_from = base.sizes_from  # Note [contradicted dim_param] in onnx/source.py
    return src


def load_saved_model(path, input_specs=(), trusted=False) -> TfSource:
    """A TfSource for a SavedModel folder (Note [tf sources]); BadInput unless ``trusted``: converting and
    verifying it runs its TensorFlow graph."""
    label = str(path)
    if not trusted:
        raise BadInput(f"{label}: a SavedModel is a TensorFlow graph that portx runs to convert and to verify it, "
                       "and a graph can hold any TensorFlow op; refused unless trusted",
                       hint="pass --trust-savedmodel (trust_savedmodel=True) if you trust its author; ops that touch "
                            "files or run Python are refused even then")
    tf, tf2onnx = _import_tf(label)
    from tf2onnx import tf_loader

    try:
        loaded = tf.saved_model.load(label)
        signatures = dict(loaded.signatures)
        key = "serving_default" if "serving_default" in signatures else next(iter(sorted(signatures)), None)
        if key is None:
            raise BadInput(f"{label}: the SavedModel has no signature to convert",
                           hint="save it with tf.saved_model.save(obj, dir, signatures=obj.__call__.get_concrete_"
                                "function(tf.TensorSpec(...)))")
        graph_def, inputs, outputs, _, renames = tf_loader.from_saved_model(
            label, None, None, signatures=[key], return_initialized_tables=True, return_tensors_to_rename=True)
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - TensorFlow raises OSError, ValueError, its own errors...
        raise BadInput(f"{label}: TensorFlow could not load the SavedModel ({first_line(exc, 200)})",
                       hint="check that the folder was written by tf.saved_model.save or model.export") from None
    _refuse_unsafe(graph_def, label)
    proto = _to_onnx(tf2onnx, lambda: tf2onnx.convert.from_graph_def(
        graph_def, input_names=inputs, output_names=outputs, opset=TF_OPSET, tensors_to_rename=renames), label)
    fn = signatures[key]
    in_names = [renames.get(name, name) for name in inputs]
    out_names = [renames.get(name, name) for name in outputs]

    def reference(arrays):
        got = fn(**{name: tf.constant(a) for name, a in zip(in_names, arrays)})
        return [got[name].numpy() for name in out_names]

    notes = [f"TensorFlow SavedModel signature {key!r} converted to ONNX opset {TF_OPSET} by tf2onnx "
             f"{tf2onnx.__version__}; verified against TensorFlow {tf.__version__}"]
    return _source(proto, label, reference, input_specs, notes)


def load_legacy_h5(path, input_specs=(), unsafe=False) -> TfSource:
    """A TfSource for a tf.keras 2 ``.h5`` file Keras 3 cannot read (Note [tf sources])."""
    from .keras.files import checked_config

    label = str(path)
    checked_config(Path(path), unsafe)  # safe mode: no Lambda code, before tf_keras reads anything
    tf, tf2onnx = _import_tf(label)
    try:
        import tf_keras
    except ImportError:
        raise BadInput(f"{label}: a tf.keras 2 file (layers {sorted(LEGACY_H5_CLASSES)}) needs tf_keras to read",
                       hint=_EXTRA_HINT) from None
    try:
        model = tf_keras.models.load_model(label, compile=False, safe_mode=not unsafe)
    except Exception as exc:  # noqa: BLE001 - tf_keras raises ValueError/OSError/... for bad files
        raise BadInput(f"{label}: tf.keras could not load the model ({first_line(exc, 200)})",
                       hint="re-save it with tf.keras, or load it in Python and save it as .keras") from None
    specs = [tf.TensorSpec(tuple(x.shape), x.dtype, name=f"input_{i}") for i, x in enumerate(model.inputs)]
    function = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False),
                           input_signature=specs)
    proto = _to_onnx(tf2onnx, lambda: tf2onnx.convert.from_function(function, input_signature=specs,
                                                                     opset=TF_OPSET), label)

    def reference(arrays):
        got = model([tf.constant(a) for a in arrays] if len(arrays) > 1 else tf.constant(arrays[0]), training=False)
        return [np.asarray(o) for o in (got if isinstance(got, (list, tuple)) else [got])]

    notes = [f"tf.keras 2 model converted to ONNX opset {TF_OPSET} by tf2onnx {tf2onnx.__version__}; verified "
             f"against tf_keras {tf_keras.__version__}"]
    return _source(proto, label, reference, input_specs, notes)
