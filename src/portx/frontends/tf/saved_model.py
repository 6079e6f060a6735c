"""A TensorFlow SavedModel folder, read only when trusted, through its serving signature (Note [tf sources] in
frontends/tf/__init__.py).

Example:
    >>> src = load_saved_model("saved_model_dir/", trusted=True)
"""
from __future__ import annotations

from ...errors import BadInput, first_line
from .source import TF_OPSET, TfSource, import_tf, tf_source, to_onnx

__all__ = ["UNSAFE_TF_OPS", "load_saved_model"]

#: TensorFlow ops that read or write files or call back into Python: a graph holding one is refused
UNSAFE_TF_OPS = frozenset({
    "PyFunc", "PyFuncStateless", "EagerPyFunc", "ReadFile", "WriteFile", "MatchingFiles", "DeleteFile",
    "ImmutableConst", "FixedLengthRecordReader", "FixedLengthRecordReaderV2", "TextLineReader", "TextLineReaderV2",
    "WholeFileReader", "WholeFileReaderV2", "TFRecordReader", "TFRecordReaderV2", "IdentityReader", "LMDBReader",
    "SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "WriteSummary", "WriteScalarSummary",
    "CreateSummaryFileWriter", "DecodeProtoV2", "ExperimentalDatasetToTFRecord", "DatasetToTFRecord"})


def refuse_unsafe(graph_def, label):
    """BadInput naming every node (and function body) that reads or writes files or runs Python."""
    found = [(node.name, node.op) for node in graph_def.node if node.op in UNSAFE_TF_OPS]
    for fn in graph_def.library.function:
        found += [(f"{fn.signature.name}/{node.name}", node.op) for node in fn.node_def if node.op in UNSAFE_TF_OPS]
    if found:
        listed = ", ".join(f"{name} ({op})" for name, op in found[:5]) + (" ..." if len(found) > 5 else "")
        raise BadInput(f"{label}: the graph holds ops that touch files or run Python: {listed}; refused",
                       hint="export a serving signature of the computation alone (no file I/O, no tf.py_function)")


def load_saved_model(path, input_specs=(), trusted=False) -> TfSource:
    """A TfSource for a SavedModel folder (Note [tf sources]); BadInput unless ``trusted``: converting and
    verifying it runs its TensorFlow graph."""
    label = str(path)
    if not trusted:
        raise BadInput(f"{label}: a SavedModel is a TensorFlow graph that portx runs to convert and to verify it, "
                       "and a graph can hold any TensorFlow op; refused unless trusted",
                       hint="pass --trust-savedmodel (trust_savedmodel=True) if you trust its author; ops that touch "
                            "files or run Python are refused even then")
    tf, tf2onnx = import_tf(label)
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
    refuse_unsafe(graph_def, label)
    proto = to_onnx(tf2onnx, lambda: tf2onnx.convert.from_graph_def(
        graph_def, input_names=inputs, output_names=outputs, opset=TF_OPSET, tensors_to_rename=renames), label)
    fn = signatures[key]
    in_names = [renames.get(name, name) for name in inputs]
    out_names = [renames.get(name, name) for name in outputs]

    def reference(arrays):
        got = fn(**{name: tf.constant(a) for name, a in zip(in_names, arrays)})
        return [got[name].numpy() for name in out_names]

    notes = [f"TensorFlow SavedModel signature {key!r} converted to ONNX opset {TF_OPSET} by tf2onnx "
             f"{tf2onnx.__version__}; verified against TensorFlow {tf.__version__}"]
    return tf_source(proto, label, reference, input_specs, notes)
