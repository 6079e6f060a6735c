"""Keras folders as a source: keras-hub presets and unzipped ``.keras`` models, sharded weights included.

Note [keras folders]: ``backbone.save_to_preset(folder)`` writes ``config.json``, ``metadata.json`` and either
``model.weights.h5`` or, past its ``max_shard_size``, Keras 3's sharded layout: ``model.weights.json`` (a
``weight_map`` from variable paths to shard files) beside ``model_00000.weights.h5``, ``model_00001...``.
``model.save(path, zipped=False)`` writes the same files. portx reads such a folder without a second copy of
the weights:

- the config and every ``.h5`` file are checked first (Note [keras archive checks]) and the config vetted as a
  ``.keras`` file's is (Note [keras safe mode]: Lambda layers refused unless ``unsafe``, no classes from
  outside Keras or keras-hub);
- the model is built inside ``keras.StatelessScope(initialize_variables=False)``, so its variables have shapes
  but no values: the randomly initialised copy that ``from_preset`` makes first is never allocated;
- Keras' ``load_weights`` then gives each variable its value straight from its HDF5 dataset, one variable
  (and one shard file) at a time: a memory-mapped view of the dataset's bytes, read only when used (Note
  [mapped keras weights] in keras_mapped.py);
- lowering reads each variable as a view of that value (``np.asarray`` of a JAX CPU buffer shares its memory;
  traced layers read ``variable.value`` the same way), a re-laid-out kernel stays a view of it (Note [lazy
  relayout] in ops/_jax.py), and the torch-xla writer copies one tensor at a time (Note [torch shards]).

So the weights stay in the files, paged in by the stage that reads them and released after it, beside what
the later stages add (a float32 copy of a bfloat16 weight a layer rule widens; above the weight budget no stage
holds the emitted model: verification streams one top-level layer at a time, Note [keras layer outputs]).
A variable that no file gives a value is refused, naming it.

Example:
    >>> src = load_keras_folder("llama3_preset/")
    >>> graph = src.lower()
"""
from __future__ import annotations

from pathlib import Path

from ...errors import BadInput
from ...weights import LazyStore
from .archive import is_keras_folder, read_stored_folder
from .files import KerasSource, guarded_load, stored_source, vet_config
from .mapped import mapped_weights

__all__ = ["is_keras_folder", "load_keras_folder"]

#: packages whose classes a folder's config may name; imported first so that their classes are registered
_REGISTERING = ("keras_hub",)


def load_keras_folder(folder, input_specs=(), unsafe=False) -> KerasSource:
    """Open a Keras folder (Note [keras folders]) as a KerasSource; BadInput names the file at fault."""
    folder = Path(folder)
    stored = read_stored_folder(folder)
    config_path = folder / "config.json"
    vet_config(config_path, stored.config, unsafe)
    _import_registering(stored.config)
    model, notes = guarded_load(folder, stored, unsafe, lambda: _built_then_filled(stored, unsafe))
    return stored_source(model, folder, input_specs, notes)


def _import_registering(config):
    """Import keras-hub when the config names one of its classes (its classes register on import)."""
    import importlib

    module = config.get("module") if isinstance(config.get("module"), str) else ""
    for package in _REGISTERING:
        if module.split(".")[0] == package:
            try:
                importlib.import_module(package)
            except ImportError:
                raise BadInput(f"config.json names {config.get('class_name')} from {package}, which is not "
                               "installed", hint=f"pip install {package.replace('_', '-')}") from None


def _built_then_filled(stored, unsafe):
    """The model built without values, then filled from its weights files (Note [keras folders])."""
    import keras
    from keras.src.backend.common import global_state

    with keras.StatelessScope(initialize_variables=False):
        model = keras.saving.deserialize_keras_object(stored.config, safe_mode=not unsafe)
    pending = {id(v) for v in model.variables}
    waiting = global_state.get_global_attribute("uninitialized_variables", [])
    global_state.set_global_attribute("uninitialized_variables", [v for v in waiting if id(v) not in pending])
    with mapped_weights(LazyStore({})) as store:  # Note [mapped keras weights]
        model.load_weights(stored.weights)
    model._portx_mapped = store  # the store lives as long as its views: release_pages finds their files through it
    empty = [v.path for v in model.variables if getattr(v, "_value", True) is None]
    if empty:
        more = f" (and {len(empty) - 3} more)" if len(empty) > 3 else ""
        raise BadInput(f"{stored.weights}: holds no value for variable {', '.join(empty[:3])}{more}",
                       hint="the weights were saved from another model; save the config and weights together "
                            "with save_to_preset() or model.save()")
    return model
