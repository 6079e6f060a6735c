"""Reading Keras sources safely: ``.keras`` archives, legacy ``.h5`` files and live models.

Note [keras safe mode]: files are loaded with ``safe_mode=True``, which refuses Lambda layers (their
Python code would run while loading). Before loading, the stored config is scanned so the refusal
names every Lambda layer; ``unsafe=True`` (``--unsafe-keras``) loads with ``safe_mode=False``. A
custom layer class that is not registered cannot be rebuilt from a file at all: the message names
the layer and class and says to register it and pass the live model instead.

Example:
    >>> src = load_keras_source("model.keras")
    >>> graph = src.lower("model"); outs = src.run(*arrays)
"""
from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import BadInput
from .keras import input_types_for, lower_keras

__all__ = ["KerasSource", "load_keras_source", "from_keras_model", "is_keras_model", "stored_layers"]

_MIXED = ("float16", "bfloat16", "mixed_float16", "mixed_bfloat16")


@dataclass
class KerasSource:
    """A loaded Keras model with static input types, a runner and a lowering to IR."""

    model: object
    input_types: list
    label: str
    notes: list = field(default_factory=list)

    def run(self, *arrays) -> list:
        """The Keras model's outputs (KERAS_BACKEND=jax, inference mode) on NumPy inputs."""
        import keras

        flat = [np.asarray(a) for a in arrays]
        struct = getattr(self.model, "_inputs_struct", None)
        inputs = keras.tree.pack_sequence_as(struct, flat) if struct is not None else (
            flat[0] if len(flat) == 1 else flat)
        out = self.model(inputs, training=False)
        return [np.asarray(t) for t in keras.tree.flatten(out)]

    def lower(self, name="model"):
        """The IR Graph (UnsupportedOps lists every layer without a rule)."""
        return lower_keras(self.model, self.input_types, name)


def is_keras_model(obj) -> bool:
    """True for a live keras.Model (without importing Keras when it was never loaded)."""
    import sys

    keras = sys.modules.get("keras")
    return keras is not None and isinstance(obj, keras.Model)


def _overrides(specs) -> dict:
    """``["x:1x8x8x3", ...]`` (or a {name: shape} dict) -> {name: shape}; unnamed specs keep their order."""
    if isinstance(specs, dict):
        return {k: tuple(v) for k, v in specs.items()}
    from .torch_files import parse_input_spec  # the same NAME:SHAPE[:DTYPE] grammar as for torch

    found = {}
    for i, spec in enumerate(specs or ()):
        name, shape, _ = parse_input_spec(spec)
        found[name or i] = shape
    return found


def _policy_notes(model) -> list:
    notes = []
    for layer in getattr(model, "_flatten_layers", lambda: [])():
        policy = getattr(layer, "dtype_policy", None)
        compute = getattr(policy, "compute_dtype", "float32")
        if compute != "float32":
            notes.append(f"layer {layer.name}: dtype policy {policy.name} computes in {compute}; "
                         "portx converts in float32")
    return notes[:5]


def from_keras_model(model, input_specs=(), label=None) -> KerasSource:
    """Wrap a live Sequential/Functional model; ``input_specs`` fix shapes (``["x:2x32x32x3"]``)."""
    if not is_keras_model(model):
        raise BadInput(f"{type(model).__name__} is not a keras.Model", hint="pass a keras.Model or a .keras file")
    if not model.built or getattr(model, "_functional", "n/a") is None:
        raise BadInput(f"Keras model {model.name} is not built, so its input shapes are unknown",
                       hint="start it with keras.Input(shape=...) or call model.build(input_shape) first")
    overrides = _overrides(input_specs)
    names = _input_names(model)
    for key in [k for k in overrides if isinstance(k, int)]:
        if key < len(names):
            overrides[names[key]] = overrides.pop(key)
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise BadInput(f"--input {unknown[0]}: the Keras model has no input of that name",
                       hint=f"its inputs are {', '.join(names)}")
    return KerasSource(model, input_types_for(model, overrides), label or model.name, _policy_notes(model))


def _input_names(model) -> list:
    import keras

    from .keras import _functional_of, _input_name

    fn = _functional_of(model)
    return [_input_name(t) for t in keras.tree.flatten(fn.inputs)] if fn is not None else []


def _read_config(path) -> dict:
    """The stored model config (``config.json`` of a .keras zip; ``model_config`` of an .h5)."""
    if path.suffix.lower() == ".keras":
        try:
            with zipfile.ZipFile(path) as z:
                return json.loads(z.read("config.json"))
        except (zipfile.BadZipFile, KeyError, OSError, ValueError):
            raise BadInput(f"{path}: not a readable .keras archive (no config.json in a zip file)",
                           hint="the file may be truncated or of another kind; re-save it with model.save()") from None
    import h5py

    try:
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
    except OSError:
        raise BadInput(f"{path}: not a readable HDF5 file",
                       hint="the file may be truncated or of another kind; re-save it with model.save()") from None
    if raw is None:
        raise BadInput(f"{path}: holds weights but no model architecture",
                       hint="save the whole model (model.save('model.keras')) or pass the live model")
    return json.loads(raw.decode() if isinstance(raw, bytes) else raw)


def stored_layers(config) -> list:
    """Every (class_name, layer name) in a stored config, nested models included."""
    found = []
    if isinstance(config, dict):
        if "class_name" in config and isinstance(config.get("config"), dict) and "name" in config["config"]:
            found.append((config["class_name"], config["config"]["name"]))
        for value in config.values():
            found += stored_layers(value)
    elif isinstance(config, list):
        for value in config:
            found += stored_layers(value)
    return found


def _refuse_lambdas(path, layers):
    names = [name for cls, name in layers if cls == "Lambda"]
    if names:
        raise BadInput(f"{path}: Lambda layer{'s' if len(names) > 1 else ''} {', '.join(names)} hold Python code "
                       "that loading would run; refused in safe mode",
                       hint="pass --unsafe-keras (unsafe=True) only if you trust the file's author: the Lambda "
                            "code then runs while loading")


_MISSING_CLASS = re.compile(r"(?:Could not locate class|Unknown layer:|Unknown object:?)\s*'([^']+)'")


def _load_failure(path, exc, layers) -> BadInput:
    text = str(exc)
    missing = {m.split(">")[-1] for m in _MISSING_CLASS.findall(text)}
    for cls, name in layers:
        bare = cls.split(">")[-1]
        if bare in missing:
            return BadInput(f"{path}: layer {name} has custom class {bare}, which is not registered",
                            hint="define it with @keras.saving.register_keras_serializable(), load the model in "
                                 "Python and pass the live model to portx.convert")
    first = text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
    return BadInput(f"{path}: Keras could not load the model ({type(exc).__name__}: {first})",
                    hint="check that it was saved by Keras 3 with model.save(); custom classes must be "
                         "registered and the live model passed to portx.convert")


def load_keras_source(path, input_specs=(), unsafe=False) -> KerasSource:
    """Open a ``.keras`` or ``.h5`` model (see Note [keras safe mode])."""
    import keras

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
    layers = stored_layers(_read_config(path))
    if not unsafe:
        _refuse_lambdas(path, layers)
    try:
        model = keras.saving.load_model(os.fspath(path), safe_mode=not unsafe, compile=False)
    except Exception as exc:  # Keras raises ValueError/TypeError/OSError/KeyError for bad files
        raise _load_failure(path, exc, layers) from None
    return from_keras_model(model, input_specs, path.name)
