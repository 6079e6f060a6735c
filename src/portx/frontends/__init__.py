"""Sources: ``load`` opens a model file or a live model, whichever framework wrote it, as one ``Source``.

Every Source (``TorchSource``, ``KerasSource``, ``SubclassedKerasSource``, ``OnnxSource``) answers the same
questions, so api and verification never ask which framework a model came from:

- ``label``: how messages and reports name it; ``notes``: warnings for the report;
- ``lower(name="model", strict_tpu=False) -> Graph``: the IR (UnsupportedOps lists every op without a rule);
- ``run(*arrays) -> [array]``: the source's own outputs on NumPy inputs, flat, in the IR's output order
  (onnxruntime's for an ONNX model);
- ``intermediates(arrays) -> {IR value name: array}``: its own values where it can pair them with IR
  values (torch programs, ONNX node outputs), ``{}`` otherwise; ``keep`` (IR names) limits what is kept, and
  ``release(weight key, tensor)`` is told when a weight is read for the last time, where the source can say (torch);
- ``dynamic_dims() -> [{"symbol", "sites": [[input, axis]], "min", "max"}]``: the dims the source declares
  free (torch.export Dims, Keras None dims, ONNX ``dim_param``); ``resized({(input, axis): size}) -> Source``:
  the same model at other input sizes, BadInput where it cannot run there (Note [free dims] in ir/types.py);
- ``differentiable()``, ``examples()``, ``stream_intermediates(...)``: what the gradient check differentiates, the
  example inputs, intermediates one at a time; each with a default in ``SourceBase`` (frontends/base.py), which
  every Source derives from.

Loading this package imports no framework: ``load`` imports the frontend it needs.

Example:
    >>> src = load("model.pt2")                  # or load(module, example_inputs=(x,)), load("m.keras"), load("m.onnx")
    >>> graph = src.lower()
    >>> outputs = src.run(*make_inputs(graph, seed=0))
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import BadInput
from ..weights import is_hf_folder
from .base import Differentiable, SourceBase
from .input_spec import resize_array

__all__ = ["Source", "SourceBase", "Differentiable", "load", "at_batch", "is_keras_source", "is_onnx_source",
           "resize_array", "KERAS_SUFFIXES", "ONNX_SUFFIXES"]

#: source file suffixes read by the Keras frontend (what neither it nor the ONNX frontend reads goes to torch)
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
#: source file suffixes read by the ONNX frontend (frontends/onnx)
ONNX_SUFFIXES = (".onnx",)


class Source(Protocol):
    """What every frontend's loaded model offers (see the module docstring)."""

    label: str
    notes: list

    def lower(self, name: str = "model", strict_tpu: bool = False): ...

    def run(self, *arrays) -> list: ...

    def intermediates(self, arrays, keep=None, release=None) -> dict: ...

    def dynamic_dims(self) -> list: ...

    def resized(self, sizes) -> "Source": ...

    def differentiable(self) -> Differentiable: ...

    def examples(self) -> list | None: ...

    def stream_intermediates(self, arrays, keep=None, release=None) -> tuple | None: ...

    def given_batch(self) -> int: ...

    def pinned_dims(self) -> dict | None: ...

    def fallback_notes(self) -> list: ...


def is_keras_source(source) -> bool:
    """True for a Keras file or folder path (Note [keras folders]) or a live ``keras.Model`` (without importing
    Keras when it was never loaded)."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source).suffix.lower() in KERAS_SUFFIXES or _is_keras_folder(source)
    from .keras.files import is_keras_model

    return is_keras_model(source)


def is_onnx_source(source) -> bool:
    """True for a ``.onnx`` path or an in-memory ``onnx.ModelProto`` (without importing onnx when never loaded)."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source).suffix.lower() in ONNX_SUFFIXES
    import sys

    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(source, onnx.ModelProto)


def load(source, *, example_inputs=None, inputs=(), trust=None, trust_pickle=False, unsafe_keras=False,
         trust_savedmodel=False, batch=None, trust_remote_code=False, dtype="config", free=()) -> Source:
    """Open ``source`` (a path or a live model) as a Source.

    Torch sources are ``.pt2``, ``.pt`` files and ``nn.Module`` (with ``example_inputs``); Keras sources are
    ``.keras``, ``.h5`` files, Keras folders (keras-hub presets, sharded weights: frontends/keras/preset.py) and
    ``keras.Model`` (subclassed models need ``example_inputs``); ONNX sources are
    ``.onnx`` files and ``onnx.ModelProto`` (frontends/onnx); TensorFlow SavedModel folders and tf.keras 2
    ``.h5`` files that Keras 3 cannot read go through tf2onnx (frontends/tf/, the ``[tf]`` extra; a SavedModel
    runs its TensorFlow graph, so it needs ``trust_savedmodel``). ``inputs`` are
    ``NAME:SHAPE[:DTYPE]`` specs (frontends/input_spec.py). Loading is safe by default (Note [safe loading],
    Note [keras safe mode]). ``batch``: a live nn.Module's example batch of 1 is traced at this many rows
    (Note [batch of one] in frontends/torch/live.py); ``free``: its ``--dynamic`` axes, exported symbolic (Note
    [symbolic export] in frontends/torch/symbols.py). A Hugging Face checkpoint folder (config.json and
    safetensors weights) is built by transformers and traced with its weights left on disk (frontends/hf.py;
    ``trust_remote_code`` for a config with auto_map, ``dtype`` to widen). ``trust``: a ``portx.Trust``, as
    ``convert``, ``verify`` and ``inspect`` take it (Note [one trust] in options.py); its flags replace the flat
    ones. Example: ``load("model.pt2").lower()``; ``load("m.keras", trust=Trust(unsafe_keras=True))``.
    """
    if trust is not None:
        trust_pickle, unsafe_keras, trust_savedmodel, trust_remote_code = (
            trust.trust_pickle, trust.unsafe_keras, trust.trust_savedmodel, trust.trust_remote_code)
    if isinstance(source, (str, os.PathLike)) and is_hf_folder(source):
        from .hf import load_hf_folder

        return load_hf_folder(source, trust_remote_code, dtype)
    if is_onnx_source(source):
        from .onnx import load_onnx_source

        return load_onnx_source(source, inputs)  # its batch of 1 is lowered there: Note [batch of one, lowered]
    if isinstance(source, (str, os.PathLike)) and _is_keras_folder(source):  # Note [keras folders]
        from .keras.preset import load_keras_folder

        return load_keras_folder(source, inputs, unsafe_keras)
    if isinstance(source, (str, os.PathLike)) and (Path(source).is_dir() or Path(source).suffix.lower() in
                                                   (".h5", ".hdf5")):
        from .tf import is_legacy_h5, is_saved_model, load_legacy_h5, load_saved_model

        if is_saved_model(source):
            return load_saved_model(source, inputs, trusted=trust_savedmodel)
        if is_legacy_h5(source):
            return load_legacy_h5(source, inputs, unsafe_keras)
    if is_keras_source(source):
        return _load_keras(source, example_inputs, inputs, unsafe_keras, batch)
    from .torch.files import load_torch_source
    from .torch.live import from_module

    if isinstance(source, (str, os.PathLike)):
        return load_torch_source(source, inputs, trust_pickle)
    return from_module(source, example_inputs, batch=batch, free=free)


# Note [batch of one, lowered]: a Keras file or functional model lowers at a batch of 1 by default (its batch is
# None: ``input_types_for``), then lowered again at 2 (ONE_TRACED_AT: the IR folds size-1 axes differently at 1, a
# broadcast or a squeeze that at 2 is a real axis, so the free-dims diff is taken at 2 and 3), and the lowering at 1
# was thrown away. ``at_batch`` resizes it to 2 rows before its first lowering, as a live module is traced at 2
# (Note [batch of one] in frontends/torch/live.py): one lowering fewer. It keeps the 1 as ``batch_given`` (convert
# verifies there) and the types given as ``given_types``, which ``KerasSource.lower`` goes back to where the model
# does not lower at 2. A Keras batch is None in the model itself, so any batch runs. Not for ONNX files: their
# ``dim_param`` is a claim the graph may contradict (Note [contradicted dim_param] in onnx/source.py: a Reshape to
# a constant (4, 4) of an ``["N", 8]`` input runs at N=2 only); lowered at 2 first, such a file would be converted
# at 2 where the user's ``--input x:1x8`` must be refused, and the default example's warning that names the
# contradiction would be lost, so an ONNX batch of 1 is lowered at 1, then at 2 and 3. Models traced through JAX
# keep their example too (their symbols read the batch without a second lowering).
def at_batch(src, n):
    """``src`` resized to ``n`` rows where its example batch (``batch_inputs``) is 1 (Note [batch of one,
    lowered]); ``src`` itself otherwise. Example: ``at_batch(load("m.keras"), 2).input_types[0].shape[0] == 2``."""
    from ..ir import batch_inputs

    shapes = [tuple(t.shape) for t in src.input_types]
    axes = batch_inputs(shapes)
    if not n or not axes or shapes[axes[0]][0] != 1 or any(
            len(s) and s[0] == n for i, s in enumerate(shapes) if i not in axes):
        return src
    try:
        wider = src.resized({(i, 0): n for i in axes})
    except BadInput:  # a batch the model fixes at 1 (keras.Input(batch_size=1)): lowered there
        return src
    wider.notes, wider.given_types, wider.batch_given = src.notes, src.input_types, 1
    return wider


def _is_keras_folder(path) -> bool:
    from .keras.archive import is_keras_folder

    return is_keras_folder(path)


def _load_keras(source, example_inputs, inputs, unsafe_keras, batch):
    """A Keras file or model as a Source: a functional one at ``batch`` rows (``at_batch``), a subclassed one traced
    through JAX at its example's (Note [batch of one, lowered])."""
    from .keras.files import from_keras_model, load_keras_source
    from .keras.subclassed import SubclassedKerasSource, needs_tracing

    if isinstance(source, (str, os.PathLike)):
        return at_batch(load_keras_source(source, input_specs=inputs, unsafe=unsafe_keras), batch)
    if needs_tracing(source):
        if not example_inputs:
            raise BadInput(f"subclassed Keras model {source.name} has no functional graph to read input "
                           "shapes from", hint="pass example_inputs=(array, ...) to portx.convert")
        return SubclassedKerasSource(source, [np.asarray(a) for a in example_inputs])
    return at_batch(from_keras_model(source, input_specs=inputs, example_inputs=example_inputs), batch)
