"""``OnnxSource``: a checked ONNX model at static example sizes, run by onnxruntime (a Source).

Note [onnx free dims]: a graph input's ``dim_param`` (or unnamed unknown) dims are free: ``dynamic_dims``
declares them (one symbol per name, shared across inputs), and the example takes 1 on axis 0 and 8 elsewhere
unless ``--input`` says otherwise. ``resized`` re-runs strict ONNX shape inference at the new sizes, so a
model that cannot run there is refused (BadInput) before it is lowered; a fixed dim is never resized.

Note [contradicted dim_param]: a file may declare a dim free that its graph fixes (``["batch", "feat"]`` into a
MatMul with a (12, 4) weight, ``["N", 8]`` into a Reshape to a constant ``(4, 4)``). Where shape inference, or
a node's shape rule when the graph is lowered, fails at the default example and no ``--input`` was given,
each free dim is tried alone (axis 0, most likely a batch, last) at the sizes of the graph's initializers'
axes (a weight's input features); the first size that infers is taken with a warning naming the dim, and the
free-dim check then pins it there. Where none does, or the sizes were given, one BadInput line (exit 2) names
the free dims or the node and asks for ``--input``.

Example:
    >>> src = load_onnx_source("model.onnx")
    >>> graph = src.lower(); outs = src.run(*arrays)
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import MAX_INPUT_ELEMENTS, BadInput, Unsupported, UnsupportedOps, first_line
from ...ir import IRError, TensorType
from ..base import SourceBase
from ..input_spec import parse_input_spec
from .files import check_proto, infer_shapes, read_model
from .tensors import dtype_name
from .walk import data_inputs, input_type, lower_onnx

__all__ = ["OnnxSource", "load_onnx_source", "declared_dims"]

#: example sizes of a free dim: axis 0 (a batch), any other axis
_DEFAULT_BATCH, _DEFAULT_SIZE = 1, 8


def free_sites(proto) -> dict:
    """{dim_param name (``INPUT_AXIS`` for an unnamed one): [(input index, axis), ...]} over the data inputs."""
    infos, found = data_inputs(proto.graph), {}
    for i, dims in enumerate(declared_dims(proto)):
        for axis, d in enumerate(dims):
            if isinstance(d, str):
                found.setdefault(d or f"{infos[i].name}_{axis}", []).append((i, axis))
    return found


def declared_dims(proto) -> list:
    """Per data input, per axis: an int for a fixed dim, the ``dim_param`` name (or "") for a free one."""
    rows = []
    for info in data_inputs(proto.graph):
        shape = info.type.tensor_type.shape
        rows.append([d.dim_value if d.HasField("dim_value") else (d.dim_param or "") for d in shape.dim])
    return rows


class OnnxSource(SourceBase):
    """A loaded ONNX model (a Source, frontends/__init__): ``proto`` as saved, ``input_types`` its example."""

    def __init__(self, proto, input_types, label, path=None, notes=None):
        self.proto, self.input_types, self.label, self.path = proto, list(input_types), label, path
        self.notes = list(notes or [])
        self.inferred = _static_types(proto, self.input_types, label)
        self._session, self._paired = None, {}
        # where the free dims' sizes come from: "default" (``lower`` may pin one: Note [contradicted dim_param]),
        # "--input", or "resized" (another size of a free dim, tried by the free-dim check)
        self.sizes_from = "resized"

    def lower(self, name="model", strict_tpu=False):
        """The IR Graph (UnsupportedOps names every node without a rule; Note [onnx walk]).

        ``strict_tpu`` is accepted for the Source protocol: data-dependent control flow is refused anyway.
        """
        try:
            return lower_onnx(self.proto, self.input_types, name, self.inferred, self._paired)
        except Unsupported as exc:  # an initializer of a dtype the IR has no name for
            raise UnsupportedOps([("initializer", [self.label], str(exc))], where=f"ONNX model {self.label}") from None
        except IRError as exc:  # a node's shape rule refuses the sizes chosen for free dims (Note [contradicted ...])
            if not free_sites(self.proto):
                raise
            if self.sizes_from != "default":
                given = self.sizes_from == "--input"
                hint = "give the sizes the model runs at with --input NAME:SHAPE" if given else ""
                raise BadInput(f"{self.label}: the graph does not run at input shapes "
                               f"{[tuple(t.shape) for t in self.input_types]}: {first_line(exc, 200)}",
                               hint=hint) from None
            self.input_types = _pinned_example(self.proto, self.input_types, self.label, exc, self.notes,
                                               lambda types: self._lowers(types, name))
            self.inferred, self.sizes_from = _static_types(self.proto, self.input_types, self.label), "pinned"
            return lower_onnx(self.proto, self.input_types, name, self.inferred, self._paired)

    def _lowers(self, types, name) -> bool:
        """True where the graph lowers at input ``types`` (ONNX shape inference and every node's shape rule)."""
        try:
            lower_onnx(self.proto, types, name, _static_types(self.proto, types, self.label), {})
        except (BadInput, IRError):
            return False
        return True

    def session(self):
        """The onnxruntime session (CPU, no graph optimizations: the model as written) that ``run`` uses."""
        if self._session is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.log_severity_level = 3
            model = str(self.path) if self.path is not None else self.proto.SerializeToString()
            self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return self._session

    def run(self, *arrays) -> list:
        """The model's outputs from onnxruntime (a real runtime, not portx's reference) on NumPy inputs."""
        session = self.session()
        try:
            return [np.asarray(a) for a in session.run(None, self._feeds(arrays))]
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise BadInput(f"{self.label}: onnxruntime cannot run the model at input shapes "
                           f"{[tuple(np.shape(a)) for a in arrays]} ({first_line(exc, 200)})") from None

    def intermediates(self, arrays, keep=None, release=None) -> dict:
        """{IR value name: onnxruntime's value} for every ONNX node output that became an IR value (the model
        run once more with those as extra outputs), so a trace names the first node where the two part."""
        import onnx
        import onnxruntime as ort

        typed = {v.name: v for v in list(self.proto.graph.value_info) + list(self.proto.graph.output)}
        wanted = {onnx_name: ir for ir, onnx_name in self._paired.items() if onnx_name in typed}
        if not wanted:
            return {}
        probe = onnx.ModelProto()
        probe.CopyFrom(self.proto)
        known = {o.name for o in probe.graph.output}
        probe.graph.output.extend(typed[n] for n in wanted if n not in known)
        session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return {wanted[n]: np.asarray(v) for n, v in zip(names, session.run(None, self._feeds(arrays))) if n in wanted}

    def _feeds(self, arrays) -> dict:
        """onnxruntime's feeds: the arrays by input name, in the model's dtypes."""
        return {info.name: np.asarray(a).astype(t.dtype if t.dtype != "bfloat16" else "float32", copy=False)
                for info, a, t in zip(data_inputs(self.proto.graph), arrays, self.input_types)}

    def dynamic_dims(self) -> list:
        """The free dims of the inputs (Note [onnx free dims]); one row per ``dim_param`` name."""
        return [{"symbol": _symbol(symbol), "sites": [list(site) for site in sites], "min": 1, "max": None,
                 "declared": True} for symbol, sites in free_sites(self.proto).items()]

    def resized(self, sizes):
        """This model at other input sizes ({(input index, axis): size}); BadInput for a fixed dim, or where
        ONNX shape inference fails at those sizes."""
        declared = declared_dims(self.proto)
        types = []
        for i, t in enumerate(self.input_types):
            shape = list(t.shape)
            for (k, axis), n in sizes.items():
                if k == i and shape[axis] != n:
                    if not isinstance(declared[i][axis], str):
                        raise BadInput(f"{self.label}: input {data_inputs(self.proto.graph)[i].name} fixes axis "
                                       f"{axis} to {declared[i][axis]}")
                    shape[axis] = n
            types.append(t.with_shape(shape))
        return OnnxSource(self.proto, types, self.label, self.path, [])


def _symbol(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "dim"
    return cleaned if not cleaned[0].isdigit() else f"d{cleaned}"


def _static_types(proto, input_types, label) -> dict:
    """{value name: TensorType} from strict ONNX shape inference with the inputs pinned to ``input_types``."""
    import onnx

    pinned = onnx.ModelProto()
    pinned.CopyFrom(proto)
    for info, t in zip(data_inputs(pinned.graph), input_types):
        dims = info.type.tensor_type.shape.dim
        for d, n in zip(dims, t.shape):
            d.Clear()
            d.dim_value = int(n)
    inferred = infer_shapes(pinned, f"{label} at input shapes {[tuple(t.shape) for t in input_types]}", [])
    types = {}
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        tensor = info.type.tensor_type
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            try:
                shape = tuple(d.dim_value for d in tensor.shape.dim)
                types[info.name] = TensorType(shape, dtype_name(tensor.elem_type))
            except Unsupported:
                continue
    return types


def _example_types(proto, specs, label) -> list:
    """Static input types: declared dims, free ones at the defaults, ``--input`` specs over both."""
    given = [parse_input_spec(s) for s in specs]
    infos = data_inputs(proto.graph)
    by_name = {name: (shape, dtype) for name, shape, dtype in given if name}
    unnamed = [(shape, dtype) for name, shape, dtype in given if not name]
    types = []
    for i, (info, dims) in enumerate(zip(infos, declared_dims(proto))):
        try:
            t = input_type(info, [d if isinstance(d, int) else (_DEFAULT_BATCH if a == 0 else _DEFAULT_SIZE)
                                  for a, d in enumerate(dims)])
        except Unsupported as exc:
            raise BadInput(f"{label}: input {info.name}: {exc}") from None
        spec = by_name.get(info.name) or (unnamed[i] if i < len(unnamed) else None)
        if spec is not None:
            shape = spec[0]
            if len(shape) != len(dims) or any(isinstance(d, int) and d != n for d, n in zip(dims, shape)):
                raise BadInput(f"{label}: --input for {info.name} gives shape {shape}; the model declares "
                               f"{tuple(d if isinstance(d, int) else (d or '?') for d in dims)}",
                               hint="change only the free (named) dims, keeping the rank")
            t = t.with_shape(shape)
        if any(d < 1 for d in t.shape) or math.prod(t.shape) > MAX_INPUT_ELEMENTS:
            raise BadInput(f"{label}: input {info.name} shape {t.shape} is empty or too large",
                           hint="pass --input NAME:SHAPE with dimensions >= 1")
        types.append(t)
    unknown = sorted(set(by_name) - {i.name for i in infos})
    if unknown:
        raise BadInput(f"{label}: --input names {unknown}, which the model does not have",
                       hint=f"its inputs are {[i.name for i in infos]}")
    return types


def load_onnx_source(source, input_specs=()) -> OnnxSource:
    """An OnnxSource for a ``.onnx`` path or an in-memory ``onnx.ModelProto`` (Note [onnx loading])."""
    import onnx

    notes = []
    if isinstance(source, onnx.ModelProto):
        label = f"ONNX model {source.graph.name or 'in memory'}"
        proto, path = check_proto(source, label, None, notes), None
    else:
        proto, path, label = read_model(source, notes), source, str(source)
    types = _example_types(proto, input_specs, label)
    try:
        src = OnnxSource(proto, types, label, path, notes)
    except BadInput as exc:
        if input_specs or not free_sites(proto):
            raise
        return OnnxSource(proto, _pinned_example(proto, types, label, exc, notes), label, path, notes)
    src.sizes_from = "--input" if input_specs else "default"
    return src


#: the most sizes tried for one contradicted free dim (Note [contradicted dim_param])
_MAX_TRIED = 24


def _candidate_sizes(proto) -> list:
    """The sizes of the graph's initializers' axes (a weight's input features), smallest first."""
    found = {int(d) for tensor in proto.graph.initializer for d in tensor.dims}
    return sorted(n for n in found if 1 < n <= MAX_INPUT_ELEMENTS)[:_MAX_TRIED]


def _infers(proto, types, label) -> bool:
    """True where strict ONNX shape inference takes input ``types``."""
    try:
        _static_types(proto, types, label)
    except BadInput:
        return False
    return True


def _pinned_example(proto, types, label, failure, notes, runs=None) -> list:
    """Input types with one contradicted free dim pinned where the graph runs (Note [contradicted dim_param]):
    where ``runs(types)`` (default: ONNX shape inference takes them)."""
    infos, sites = data_inputs(proto.graph), free_sites(proto)
    runs = runs or (lambda tried: _infers(proto, tried, label))
    for name, where in sorted(sites.items(), key=lambda item: any(axis == 0 for _, axis in item[1])):
        for n in _candidate_sizes(proto):
            tried = [t.with_shape([n if (i, a) in where else s for a, s in enumerate(t.shape)])
                     for i, t in enumerate(types)]
            if not runs(tried):
                continue
            i, axis = where[0]
            notes.append(f"{label}: input {infos[i].name} declares axis {axis} ({name!r}) free, but the graph fixes "
                         f"it to {n} (it does not run at the example's {types[i].shape[axis]}: "
                         f"{first_line(failure, 120)}); converted at {n}")
            return tried
    free = ", ".join(f"{k}={types[i].shape[a]}" for k, [(i, a), *_] in sites.items())
    raise BadInput(f"{label}: the graph does not run at the example sizes of the free input dims it declares "
                   f"({free}), nor with one of them at a size its weights hold: {first_line(failure, 200)}",
                   hint="give the sizes the model runs at with --input NAME:SHAPE") from None
