"""Reading ``.onnx`` files safely: parse, external data, opsets, custom domains, checker, shape inference.

Note [onnx loading]: an ONNX file holds no code, but it may name external-data files. Every ``location``
is resolved before anything is read: an absolute path, a ``..`` part or a symlink that leaves the model's
folder is refused, and a missing file is named. Only then is the data read (``load_external_data_for_model``).
Opsets below 13 are refused with the ``onnx.version_converter`` call that upgrades them; opsets newer than the
installed ``onnx`` defines are refused too (its checker and reference could not read them). Nodes of custom
domains, and op types no ONNX schema knows, are listed together (UnsupportedOps, exit 3) before the checker,
which would stop at the first of them. Then ``onnx.checker`` and ``onnx.shape_inference`` (strict) run; their
first message line becomes a BadInput naming the file.

Example:
    >>> proto = read_model("model.onnx")          # checked, shapes inferred, external data loaded
"""
from __future__ import annotations

import os
from pathlib import Path

from ...errors import BadInput, UnsupportedOps, first_line

__all__ = ["MIN_OPSET", "read_model", "check_proto", "infer_shapes", "newest_opset", "external_locations",
           "unknown_nodes"]

#: the oldest default-domain opset the frontend reads (older files: onnx.version_converter)
MIN_OPSET = 13
#: protobuf's hard limit: larger models must keep their weights in external data
_PROTO_LIMIT = 2 ** 31


def newest_opset() -> int:
    """The newest default-domain opset the installed ``onnx`` defines."""
    import onnx

    return onnx.defs.onnx_opset_version()


def read_model(path, notes=None):
    """Parse, check and shape-infer the ``.onnx`` file at ``path`` (Note [onnx loading]); warnings go to ``notes``."""
    import onnx

    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{path}: no such ONNX file", hint="check the path")
    if path.stat().st_size >= _PROTO_LIMIT:
        raise BadInput(f"{path}: {path.stat().st_size / 2**30:.1f} GB is over protobuf's 2 GB limit",
                       hint="save the model with external data (onnx.save(..., save_as_external_data=True))")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeError, ...
        raise BadInput(f"{path}: not a readable ONNX model ({first_line(exc, 160, type(exc).__name__)})",
                       hint="re-export it, or check that the file was copied whole") from None
    if not proto.graph.node and not proto.graph.output:
        raise BadInput(f"{path}: holds no ONNX graph (empty or not an ONNX file)", hint="re-export the model")
    locations = external_locations(proto, path.parent)
    if locations:
        try:
            onnx.load_external_data_for_model(proto, str(path.parent))
        except Exception as exc:  # noqa: BLE001
            raise BadInput(f"{path}: external data could not be read ({first_line(exc, 160)})",
                           hint="keep the .onnx.data file next to the model, as it was saved") from None
    return check_proto(proto, str(path), path, notes)


def check_proto(proto, label: str, path=None, notes=None):
    """Opsets, unknown ops, ``onnx.checker`` (on ``path`` when given: it reads external data itself) and
    strict shape inference on a ModelProto."""
    import onnx

    _check_opsets(proto, label)
    unknown = unknown_nodes(proto)
    if unknown:
        raise UnsupportedOps(unknown, where=f"ONNX model {label}")
    try:
        onnx.checker.check_model(str(path) if path is not None else proto)
    except onnx.checker.ValidationError as exc:
        raise BadInput(f"{label}: fails onnx.checker: {first_line(exc, 240).rstrip('.')}",
                       hint="fix or re-export the model; portx reads only valid ONNX") from None
    return infer_shapes(proto, label, notes)


def infer_shapes(proto, label, notes=None):
    """Strict ONNX shape inference; where only onnx's own function expansions fail it (MeanVarianceNormalization
    trips over a Constant in its body), the non-strict result with a note. BadInput for a model it refutes."""
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as exc:  # noqa: BLE001 - InferenceError, ValueError for >2GB protos
        text = first_line(exc, 240).rstrip('.')
        if "(op_type:Constant)" in text and notes is not None:
            notes.append(f"{label}: ONNX shape inference failed inside a function body ({text[:120]}); "
                         "shapes come from portx's own rules")
            return onnx.shape_inference.infer_shapes(proto)
        raise BadInput(f"{label}: ONNX shape inference fails: {text}",
                       hint="check the model's input shapes and re-export it") from None


def _check_opsets(proto, label):
    versions = {imp.domain or "ai.onnx": imp.version for imp in proto.opset_import}
    version = versions.get("ai.onnx")
    if version is None:
        raise BadInput(f"{label}: imports no default-domain (ai.onnx) opset", hint="re-export the model")
    if version < MIN_OPSET:
        raise BadInput(f"{label}: opset {version} is older than portx reads ({MIN_OPSET})",
                       hint=f"upgrade it: onnx.save(onnx.version_converter.convert_version(onnx.load(path), "
                            f"{MIN_OPSET}), new_path)")
    if version > newest_opset():
        raise BadInput(f"{label}: opset {version} is newer than the installed onnx defines ({newest_opset()})",
                       hint="upgrade the onnx package, or export at an older opset")


def unknown_nodes(proto) -> list:
    """(op, [node names], reason) for nodes of custom domains and op types no ONNX schema defines."""
    import onnx

    found = {}
    for node, scope in _all_nodes(proto.graph, ""):
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        if domain:
            key, why = f"{domain}::{node.op_type}", f"custom domain {domain}"
        elif not onnx.defs.has(node.op_type):
            key, why = node.op_type, "not an ONNX op"
        else:
            continue
        found.setdefault((key, why), []).append(scope + (node.name or node.op_type))
    return [(key, names, why) for (key, why), names in found.items()]


def _all_nodes(graph, prefix):
    for node in graph.node:
        yield node, prefix
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from _all_nodes(sub, f"{prefix}{node.name or node.op_type}/")


def _tensors(graph):
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from _tensors(sub)


def external_locations(proto, folder) -> list:
    """The external-data files ``proto`` names, each checked to lie inside ``folder`` (Note [onnx loading])."""
    import onnx

    root = Path(os.path.realpath(folder))
    found = []
    for tensor in _tensors(proto.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        where = f"{folder}: initializer {tensor.name!r} keeps its data in {location!r}"
        if not location or Path(location).is_absolute() or ".." in Path(location).parts:
            raise BadInput(f"{where}, outside the model's folder", hint="external data must sit next to the "
                           "model (a relative path without '..'); portx reads nothing else")
        target = Path(os.path.realpath(root / location))
        if root not in target.parents:
            raise BadInput(f"{where}, which links outside the model's folder",
                           hint="copy the data file next to the model instead of linking it")
        if not target.is_file():
            raise BadInput(f"{where}, which is missing", hint="copy the .data file saved with the model next to it")
        found.append(target)
    return found
