"""Reading Keras sources safely: ``.keras`` archives, legacy ``.h5`` files and live models.

Note [keras safe mode]: files are loaded with ``safe_mode=True``, which refuses Lambda layers (their
Python code would run while loading). Before loading, the stored config is scanned so the refusal
names every Lambda layer; ``unsafe=True`` (``--unsafe-keras``) loads with ``safe_mode=False``. A
custom layer class that is not registered cannot be rebuilt from a file at all: the message names
the layer and class and says to register it and pass the live model instead. A class whose ``module`` lies
outside Keras is refused before Keras sees the file, with or without ``unsafe`` (Keras would not import it
either). The file itself is checked first (Note [keras archive checks]) and Keras loads it under
Note [keras load guards].

Note [keras input checks]: ``--input`` specs and example arrays may change the batch and the dimensions a
model leaves unknown, never the rank or a fixed dimension, and their dtype must be the model's: a float16
array for a model that computes float32 is the user's mistake, named as such (float64, NumPy's default, and
any integer width for an integer input are accepted). Every input dimension is at least 1 and an input holds
at most ``MAX_INPUT_ELEMENTS`` elements, checked before anything is allocated.

Example:
    >>> src = load_keras_source("model.keras")
    >>> graph = src.lower("model"); outs = src.run(*arrays)
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import BadInput
from ..base import KERAS, Differentiable, SourceBase
from ..input_spec import parse_input_spec
from . import functional_of, input_name, input_types_for, lower_keras, sequence_limit
from .archive import iter_objects, json_kind, object_name, read_stored_model, stored_layers
from .guards import load_guards
from .pairs import run_layers

__all__ = ["KerasSource", "load_keras_source", "from_keras_model", "is_keras_model", "stored_layers", "packed_inputs",
           "checked_config", "vet_config", "guarded_load", "stored_source"]

_MIXED = ("float16", "bfloat16", "mixed_float16", "mixed_bfloat16")


def packed_inputs(model, flat):
    """The flat input arrays (or tensors) in the structure ``model`` is called with: a dict for keras-hub's
    ``{"token_ids": ..., "padding_mask": ...}``, else one array or a list."""
    import keras

    struct = getattr(model, "_inputs_struct", None)
    if struct is not None:
        return keras.tree.pack_sequence_as(struct, list(flat))
    return flat[0] if len(flat) == 1 else list(flat)


@dataclass
class KerasSource(SourceBase):
    """A loaded Keras model with static input types, a runner and a lowering to IR (a Source, frontends/__init__)."""

    model: object
    input_types: list
    label: str
    notes: list = field(default_factory=list)
    pairs: dict = field(default_factory=dict)  # the last lowering's meta["layer_outputs"]
    batch_given: int = 0  # its example batch of 1, resized to 2 rows (Note [batch of one, lowered] in frontends/)
    given_types: list = None  # the input types given, where resized so

    def run(self, *arrays) -> list:
        """The Keras model's outputs (KERAS_BACKEND=jax, inference mode) on NumPy inputs."""
        import keras

        out = self.model(packed_inputs(self.model, [np.asarray(a) for a in arrays]), training=False)
        return [np.asarray(t) for t in keras.tree.flatten(out)]

    def differentiable(self) -> Differentiable:
        """The Keras model, differentiated with ``jax.grad`` (frontends/base.py)."""
        return Differentiable(self.model, KERAS)

    def given_batch(self) -> int:
        """Its example batch of 1 where resized to 2 rows (Note [batch of one, lowered] in frontends/)."""
        return self.batch_given

    def lower(self, name="model", strict_tpu=False):
        """The IR Graph (UnsupportedOps lists every layer without a rule).

        ``strict_tpu`` is accepted for the Source protocol: a functional graph has no data-dependent op to refuse.
        """
        try:
            graph = lower_keras(self.model, self.input_types, name)
        except Exception:  # noqa: BLE001 - not at 2 rows: at the batch of 1 given (Note [batch of one, lowered])
            if not self.batch_given:
                raise
            self.input_types, self.batch_given = self.given_types, 0
            return self.lower(name, strict_tpu)
        self.pairs = graph.meta["layer_outputs"]
        return graph

    def intermediates(self, arrays, keep=None, release=None) -> dict:
        """The top-level layers' outputs, by the IR value each was lowered to (Note [keras layer outputs]);
        ``release`` is told of a layer's weights once it ran."""
        return run_layers(functional_of(self.model), arrays, self.pairs, keep, release)

    def dynamic_dims(self) -> list:
        """The ``None`` dims of the model's inputs other than the batch, one symbol per axis and example size
        shared across inputs (a sequence length that ids and mask share), up to the model's ``sequence_limit``:
        Note [free dims] in ir/types.py."""
        import keras

        found, limit = {}, None
        for i, (tensor, t) in enumerate(zip(keras.tree.flatten(functional_of(self.model).inputs), self.input_types)):
            for axis, d in enumerate(tuple(tensor.shape)[1:], start=1):
                if d is None:
                    limit = limit or sequence_limit(self.model)
                    row = found.setdefault((axis, t.shape[axis]), {"symbol": f"{input_name(tensor)}_{axis}",
                                                                   "sites": [], "min": 1, "max": limit,
                                                                   "declared": True})
                    row["sites"].append([i, axis])
        return list(found.values())

    def resized(self, sizes):
        """This model with other input sizes ({(input index, axis): size}); BadInput where an Input fixes one."""
        import keras

        types = []
        for i, (tensor, t) in enumerate(zip(keras.tree.flatten(functional_of(self.model).inputs), self.input_types)):
            shape = list(t.shape)
            for (k, axis), n in sizes.items():
                if k == i:
                    if tensor.shape[axis] is not None:
                        raise BadInput(f"Keras model {self.model.name}: input {input_name(tensor)} fixes axis "
                                       f"{axis} to {tensor.shape[axis]} (keras.Input with that size)")
                    shape[axis] = n
            types.append(t.with_shape(shape))
        return KerasSource(self.model, types, self.label, [])


def is_keras_model(obj) -> bool:
    """True for a live keras.Model (without importing Keras when it was never loaded)."""
    import sys

    keras = sys.modules.get("keras")
    return keras is not None and isinstance(obj, keras.Model)


def _overrides(specs) -> dict:
    """``["x:1x8x8x3:float16", ...]`` (or a {name: shape} dict) -> {name: (shape, dtype or None)}.

    Unnamed specs are keyed by their position; the dtype is None where the spec gives none.
    """
    if isinstance(specs, dict):
        return {k: (tuple(v), None) for k, v in specs.items()}
    found = {}
    for i, spec in enumerate(specs or ()):
        name, shape, dtype = parse_input_spec(spec)
        tail = spec.strip().rsplit(":", 1)[-1]
        found[name or i] = (shape, dtype if ":" in spec and tail == dtype else None)
    return found


def _example_overrides(arrays) -> dict:
    """Example arrays (a tuple, or one array) -> {position: (shape, dtype)} like ``_overrides``."""
    arrays = arrays if isinstance(arrays, (tuple, list)) else (arrays,)
    return {i: (tuple(np.shape(a)), str(a.dtype) if hasattr(a, "dtype") else None) for i, a in enumerate(arrays)}


def _policy_notes(model) -> list:
    notes = []
    for layer in getattr(model, "_flatten_layers", lambda: [])():
        policy = getattr(layer, "dtype_policy", None)
        compute = getattr(policy, "compute_dtype", "float32")
        if compute != "float32":
            notes.append(f"layer {layer.name}: dtype policy {policy.name} computes in {compute}; "
                         "portx converts in float32")
    return notes[:5]


def from_keras_model(model, input_specs=(), label=None, example_inputs=None) -> KerasSource:
    """Wrap a live Sequential/Functional model; ``input_specs`` (``["x:2x32x32x3"]``) or ``example_inputs``
    (arrays) fix its input shapes within Note [keras input checks]."""
    if not is_keras_model(model):
        raise BadInput(f"{type(model).__name__} is not a keras.Model", hint="pass a keras.Model or a .keras file")
    if not model.built or getattr(model, "_functional", "n/a") is None:
        raise BadInput(f"Keras model {model.name} is not built, so its input shapes are unknown",
                       hint="start it with keras.Input(shape=...) or call model.build(input_shape) first")
    overrides = _overrides(input_specs) if input_specs or example_inputs is None else \
        _example_overrides(example_inputs)
    names = _input_names(model)
    for key in [k for k in overrides if isinstance(k, int)]:
        if key < len(names):
            overrides[names[key]] = overrides.pop(key)
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise BadInput(f"--input {unknown[0]}: the Keras model has no input of that name",
                       hint=f"its inputs are {', '.join(names)}")
    _check_overrides(model, overrides)
    shapes = {name: shape for name, (shape, _) in overrides.items()}
    return KerasSource(model, input_types_for(model, shapes), label or model.name, _policy_notes(model))


def _check_overrides(model, overrides):
    """BadInput for a given shape or dtype the model cannot take (Note [keras input checks])."""
    import keras

    for tensor in keras.tree.flatten(functional_of(model).inputs):
        name = input_name(tensor)
        if name not in overrides:
            continue
        shape, dtype = overrides[name]
        want = tuple(tensor.shape)
        if len(shape) != len(want) or any(w is not None and i > 0 and w != d
                                          for i, (w, d) in enumerate(zip(want, shape))):
            raise BadInput(f"--input {name}: shape {shape} does not fit the Keras model's input {name} of shape "
                           f"{want} (None: any size)", hint=f"give {len(want)} dimensions and keep the fixed ones, "
                           f"e.g. {name}:" + "x".join(str(d or 1) for d in want))
        expected = keras.backend.standardize_dtype(tensor.dtype)
        if dtype is not None and _dtype_mistake(dtype, expected):
            compute = getattr(getattr(model, "dtype_policy", None), "compute_dtype", expected)
            raise BadInput(f"--input {name}: dtype {dtype} given, but the Keras model's input {name} is {expected} "
                           f"(the model computes in {compute})",
                           hint=f"give {expected} data (drop ':{dtype}' from --input, or cast example arrays with "
                                f".astype('{expected}')); portx converts for the model's own input dtype")


def _dtype_mistake(given, expected) -> bool:
    given = str(given)
    if given == expected or (given == "float64" and expected == "float32"):  # float64: NumPy's default
        return False
    ints = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    return not (given in ints and expected in ints)


def _input_names(model) -> list:
    import keras

    fn = functional_of(model)
    return [input_name(t) for t in keras.tree.flatten(fn.inputs)] if fn is not None else []


_KERAS_PACKAGES = {"keras", "keras_hub", "keras_cv", "keras_nlp"}  # the packages Keras itself imports from
_SPECIAL = {"__keras_tensor__", "__tensor__", "__numpy__", "__bytes__", "__ellipsis__", "__slice__", "__typespec__",
            "__lambda__"}


#: layer classes whose loading runs code from the file: Python bytecode, a pickle, an external SavedModel graph
_CODE_LAYERS = ("Lambda", "TorchModuleWrapper", "TFSMLayer")


def _refuse_code(path, config):
    """BadInput naming every layer that carries code: Lambda-like layers and serialized lambdas (Note [keras
    safe mode]). Keras' safe mode refuses them too; portx names them all, before Keras reads anything."""
    found = {}  # what -> layer names
    for obj, layer in iter_objects(config):
        if obj["class_name"] in _CODE_LAYERS:
            found.setdefault(f"{obj['class_name']} layer", []).append(object_name(obj) or layer or "?")
        elif obj["class_name"] == "__lambda__" and not any(layer in names for names in found.values()):
            found.setdefault("layer", []).append(layer or "<top>")
    if not found:
        return
    what = [f"{kind}{'s' if len(names) > 1 else ''} {', '.join(dict.fromkeys(names))}"
            + (" (a serialized lambda)" if kind == "layer" else "") for kind, names in found.items()]
    verb = "holds" if sum(map(len, found.values())) == 1 else "hold"
    raise BadInput(f"{path}: {' and '.join(what)} {verb} code that loading would run; refused in safe mode",
                   hint="pass --unsafe-keras (unsafe=True) only if you trust the file's author: the Lambda "
                        "code then runs while loading")


def _unresolvable(path, config):
    """BadInput listing objects whose fields have the wrong type or that name code outside Keras."""
    import keras

    problems, damaged = [], []
    for obj, layer in iter_objects(config):
        where = f"layer {layer}" if layer else "the model"
        fields = {key: obj.get(key) for key in ("class_name", "module", "registered_name")}
        wrong = [k for k, v in fields.items() if not (isinstance(v, str) or (v is None and k != "class_name"))]
        if wrong:
            damaged.append(f"{where}: field {wrong[0]} is {json_kind(fields[wrong[0]])}, expected a string")
            continue
        cls, module = fields["class_name"], fields["module"]
        if cls in _SPECIAL or "config" not in obj or module is None:
            continue  # Keras' own encodings, plain dicts, and legacy .h5 entries Keras resolves by name
        lookup = obj["config"] if cls == "function" else obj.get("registered_name", cls)
        if module.split(".")[0] in _KERAS_PACKAGES or (cls == "function" and module == "builtins") or (
                isinstance(lookup, str) and keras.saving.get_registered_object(lookup) is not None):
            continue
        problems.append(f"{where} has custom class {cls} (module {module}), which is not registered")
    if damaged:
        more = f" (and {len(damaged) - 3} more)" if len(damaged) > 3 else ""
        raise BadInput(f"{path}: {'; '.join(damaged[:3])}{more}",
                       hint="Keras writes strings there, so the file was edited or damaged; re-save the model")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise BadInput(f"{path}: {'; '.join(problems[:3])}{more}",
                       hint="a file cannot name code for portx to import: portx rebuilds Keras classes and classes "
                            "registered with @keras.saving.register_keras_serializable(); load the model in Python "
                            "and pass the live model to portx.convert")


_MISSING_CLASS = re.compile(r"(?:Could not locate class|Unknown layer:|Unknown object:?)\s*'([^']+)'"
                            r"|Could not deserialize '(?:[\w.]+\.)?([^'.]+)' because it is not a KerasSaveable")
# Keras rewraps a failing from_config as "... could not be deserialized properly ... Exception encountered: <cause>"
_CAUSE = re.compile(r"Exception encountered:\s*(.*)$", re.S)
_CONFIG_DUMP = re.compile(r"\s*(Full object config:|Received: config=|config=\{).*", re.S)


def _load_failure(path, exc, layers) -> BadInput:
    text = str(exc)
    while _CAUSE.search(text):
        text = _CAUSE.search(text).group(1)
    text = _CONFIG_DUMP.sub("", text)
    missing = {m.split(">")[-1] for pair in _MISSING_CLASS.findall(str(exc)) for m in pair if m}
    for cls, name in layers:
        bare = cls.split(">")[-1]
        if bare in missing:
            return BadInput(f"{path}: layer {name} has custom class {bare}, which is not registered",
                            hint="define it with @keras.saving.register_keras_serializable(), load the model in "
                                 "Python and pass the live model to portx.convert")
    if isinstance(exc, RecursionError):
        return BadInput(f"{path}: Keras ran out of stack rebuilding the model (RecursionError)",
                        hint="the model's graph is deeper than portx allows for its layer count; report it if the "
                             "file is genuine")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = (" ".join(lines[:2]) if lines[0].endswith(":") and len(lines) > 1 else lines[0])[:300] if lines \
        else type(exc).__name__
    return BadInput(f"{path}: Keras could not load the model ({type(exc).__name__}: {first})",
                    hint="check that it was saved by Keras 3 with model.save(); custom classes must be "
                         "registered and the live model passed to portx.convert")


def load_keras_source(path, input_specs=(), unsafe=False) -> KerasSource:
    """Open a ``.keras`` or ``.h5`` model (see Note [keras safe mode])."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path}: no such file", hint="check the path")
    if path.is_dir():
        raise BadInput(f"{path}: is a directory (a TensorFlow SavedModel?), expected a .keras file",
                       hint="in Python: keras.models.load_model(...) then model.save('model.keras')")
    if path.suffix.lower() not in (".keras", ".h5", ".hdf5"):
        raise BadInput(f"{path}: unknown Keras model format {path.suffix or '(no extension)'}",
                       hint="portx reads .keras archives and legacy .h5 full-model files")
    if path.stat().st_size == 0:
        raise BadInput(f"{path}: is empty", hint="re-save the model")
    stored = read_stored_model(path)
    vet_config(path, stored.config, unsafe)
    model, notes = guarded_load(path, stored, unsafe)
    return stored_source(model, path, input_specs, notes)


def stored_source(model, path, input_specs, notes) -> KerasSource:
    """The KerasSource of a model loaded from ``path``: BadInput about its inputs names the file, and Keras'
    load ``notes`` come first in the report."""
    try:
        src = from_keras_model(model, input_specs, path.name)
    except BadInput as exc:  # name the file the input belongs to
        raise BadInput(f"{path}: {exc.message}", hint=exc.hint) from None
    src.notes = notes + src.notes
    return src


def checked_config(path, unsafe=False) -> dict:
    """The stored config of a ``.keras``/``.h5`` file after the safe-mode check (no code-carrying layers unless
    ``unsafe``), for readers other than Keras 3 (frontends/tf/)."""
    stored = read_stored_model(path)
    if not unsafe:
        _refuse_code(path, stored.config)
    return stored.config


def vet_config(path, config, unsafe=False):
    """BadInput for a stored config that names code (unless ``unsafe``) or classes outside Keras
    (Note [keras safe mode]); nothing is imported or built."""
    if not unsafe:
        _refuse_code(path, config)
    _unresolvable(path, config)


def guarded_load(path, stored, unsafe, load=None):
    """``load()`` (default ``keras.saving.load_model(path)``) under Note [keras load guards]: Keras' failures become
    one BadInput naming ``path``, its warnings report notes. Returns (model, notes)."""
    import keras

    layers = stored_layers(stored.config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with load_guards(stored.weight_bytes, len(layers), str(path)):
                model = load() if load else keras.saving.load_model(os.fspath(path), safe_mode=not unsafe,
                                                                     compile=False)
        except BadInput:
            raise
        except MemoryError:
            raise BadInput(f"{path}: rebuilding the model ran out of memory",
                           hint="the model is too large for this machine, or its config is hostile") from None
        except Exception as exc:  # Keras raises ValueError/TypeError/OSError/KeyError/RecursionError for bad files
            raise _load_failure(path, exc, layers) from None
    notes = [f"Keras: {str(w.message).splitlines()[0][:200]}" for w in caught
             if not issubclass(w.category, (DeprecationWarning, FutureWarning))]
    return model, list(dict.fromkeys(notes))[:5]
