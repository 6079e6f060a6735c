"""Running a written Keras-JAX model: load it as a user would, run it jitted, and observe its intermediates.

Example:
    >>> model = load_folder("out/")                 # what out/model.py's load_model() returns
    >>> outputs = run_jitted(model, [x])            # one XLA compile, weights as arguments
    >>> observe_locals("out/model.py", [x], {"block_0"})["block_0"].shape
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..codegen import flatten_outputs, import_by_path
from .emitter import WEIGHTS_FILE

__all__ = ["load_folder", "jitted", "run_jitted", "build_with_locals", "observe_locals", "observe_layers"]


def load_folder(path):
    """The Keras model written in ``path`` (an OUT folder or its model.py), weights loaded (``load_model()``)."""
    path = Path(path)
    return import_by_path(path / "model.py" if path.is_dir() else path).load_model()


def jitted(model):
    """``arrays -> [array]``: the model under one ``jax.jit`` (weights as arguments, not baked-in constants).

    One XLA compile of the whole graph is several times faster than eager op-by-op dispatch, it is
    how the model will run in production, and later batches of the same shapes reuse the compile.
    """
    import jax

    def forward(trainable, non_trainable, *inputs):
        args = list(inputs) if len(inputs) > 1 else (inputs or [None])[0]  # None: a ConstantModel (no inputs)
        out, _ = model.stateless_call(trainable, non_trainable, args)
        return flatten_outputs(out)  # inside jit: JAX would hand a dict back with its keys sorted

    run = jax.jit(forward)
    weights = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
    return lambda arrays: [np.asarray(o) for o in run(*weights, *arrays)]


def run_jitted(model, arrays) -> list:
    """Run a Keras model once under ``jax.jit``; outputs as a list of arrays (see ``jitted``)."""
    return jitted(model)(arrays)


def build_with_locals(module):
    """Call ``module.build_model()`` and capture its local variables (the intermediate KerasTensors).

    Used to observe every intermediate value of the emitted model when localizing a divergence.
    """
    captured = {}
    code = module.build_model.__code__

    def watch(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    sys.setprofile(watch)
    try:
        model = module.build_model()
    finally:
        sys.setprofile(None)
    return model, captured


def observe_locals(code, arrays, names) -> dict:
    """{variable: array} for the ``names`` among ``build_model``'s locals in ``code`` (a model.py), on ``arrays``.

    The file is imported again and built with the weights beside it; nothing else in OUT is run
    (Note [trust nothing in OUT] in verification/recheck.py).
    """
    import keras

    model, tensors = build_with_locals(import_by_path(code))
    model.load_weights(Path(code).parent / WEIGHTS_FILE)
    return _probe(model, {var: tensors.get(var) for var in names}, arrays, keras)


def observe_layers(model, arrays, names) -> dict:
    """{layer name: array} for the ``names`` that are single-output layers of a live functional ``model``."""
    import keras

    layers = {layer.name: layer for layer in model.layers}
    return _probe(model, {var: _layer_output(layers.get(var)) for var in names}, arrays, keras)


def _layer_output(layer):
    try:
        return layer.output  # raises for a layer called more than once (not written by portx)
    except (AttributeError, ValueError):
        return None


def _probe(model, tensors, arrays, keras) -> dict:
    """Run one model from ``model``'s inputs to every KerasTensor in ``tensors``: {name: array}."""
    pairs = [(var, t) for var, t in tensors.items() if isinstance(t, keras.KerasTensor)]
    if not pairs:
        return {}
    probe = keras.Model(model.inputs if len(model.inputs) > 1 else model.inputs[0], [t for _, t in pairs])
    values = probe(arrays if len(arrays) > 1 else arrays[0])
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return {var: np.asarray(a) for (var, _), a in zip(pairs, values)}
