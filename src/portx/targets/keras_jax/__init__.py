"""The ``keras-jax`` target: a functional Keras 3 ``model.py`` + sharded weights (``model.weights.json``), run with JAX.

emitter.py writes the files, runtime.py loads and runs them (jitted) and observes intermediates,
tpu.py proves the TPU lowering and writes the ``jax.export`` artifact (``--export-tpu``).

Example:
    >>> emitted = KERAS_JAX.emit(graph, "out/")
    >>> KERAS_JAX.run(KERAS_JAX.load("out/"), arrays)[0].shape
"""
from __future__ import annotations

import math
import sys
import weakref
from pathlib import Path

from ...weights import release_all
from ..base import Target
from .emitter import HEADER, WEIGHTS_FILE, KerasEmitter, emit_keras
from ..codegen import import_by_path
from .sharded import DEFAULT_SHARD_GB, abstract_model
from .mesh_proof import prove_sharded
from .runtime import build_in_memory, jitted, load_folder, observe_layers, observe_locals
from .tpu import export_artifact, prove_tpu_lowering
from .cuts import keras_cutter

__all__ = ["KERAS_JAX", "KerasJax"]


class KerasJax(Target):
    """Keras 3 with the JAX backend; its op table is ``tpu`` (XLA:TPU through jax.export)."""

    name = "keras-jax"
    aliases = ("keras_jax", "tpu")
    table = "tpu"
    weights_file = WEIGHTS_FILE
    header = HEADER
    tpu_artifact = "model.tpu.jaxexport"
    framework = "keras"  # frontends.base.KERAS

    def emitter(self, graph):
        return KerasEmitter(graph)

    def emit(self, graph, folder, max_shard_size=DEFAULT_SHARD_GB) -> dict:
        """model.py and the weights in Keras' sharded layout (Note [sharded keras weights] in sharded.py)."""
        return emit_keras(graph, folder, max_shard_size)

    def load(self, path):
        return load_folder(path)

    def build(self, graph):
        """``graph``'s model built in memory, no weights file (Note [segments in memory] in runtime.py)."""
        return build_in_memory(graph)

    def load_abstract(self, path):
        """model.py's model with every variable uninitialised (Note [weight budget] in verification/budget.py)."""
        return abstract_model(import_by_path(Path(path) / "model.py" if Path(path).is_dir() else path))

    def runner(self, model):
        return jitted(model)

    def observe(self, model, arrays, names, code=None) -> dict:
        """From model.py, ``build_model``'s locals; from a live model, the outputs of layers named like ``names``."""
        if code is not None:
            return observe_locals(code, arrays, names, like=model)  # the loaded model's weights, not the file again
        return observe_layers(model, arrays, names)

    def cutter(self, model, graph, emitted):
        """A block as a sub-model between the loaded model's KerasTensors (Note [cut blocks] in cuts.py)."""
        return keras_cutter(model, graph, emitted.get("layer_of") or {})

    def input_shapes(self, model):
        return [tuple(t.shape) for t in model.inputs]

    def parameter_counts(self, model) -> dict:
        """Trainable variables; the non-trainable ones without Dropout's random-seed states."""
        return {"trainable": sum(math.prod(v.shape) for v in model.trainable_variables),
                "non_trainable": sum(math.prod(v.shape) for v in model.non_trainable_variables
                                     if "seed_generator" not in v.path)}

    def rebind(self, model, graph, like) -> bool:
        """Layer by layer, in emission order: ``graph``'s emitted weights into the layers ``like`` named
        (Note [streaming verification] in verification/streaming.py). False where the two disagree."""
        ours = _LAYOUTS.get(model)
        if ours is None or ours[0] is not like:  # like's layers, emitted once per model, not once per block
            ours = _LAYOUTS[model] = (like, _layout(_emitted_weights(like)))
        theirs = _emitted_weights(graph)
        if [shapes for _, shapes in ours[1]] != [shapes for _, shapes in _layout(theirs)]:
            return False
        built = {layer.name: layer for layer in model.layers}
        for (name, _), arrays in zip(ours[1], theirs.values()):
            if name in built:  # a layer Keras left out (unreachable) holds nothing to run
                built[name].set_weights(arrays)
                release_all(arrays)  # as build_in_memory: the variables hold their copy
        return True

    def prove_tpu(self, model, graph) -> dict:
        return prove_tpu_lowering(model, graph)

    def prove_sharded(self, folder, graph, mesh, arrays, abstract=False) -> dict:
        return prove_sharded(folder, mesh, arrays, abstract=abstract)

    def export_tpu(self, model, graph, path) -> dict:
        return export_artifact(model, graph, path)

    def owns(self, out) -> bool:
        """A live ``keras.Model`` too (verification of a model the user loaded), besides OUT folders."""
        keras = sys.modules.get("keras")
        return (keras is not None and isinstance(out, keras.Model)) or super().owns(out)


#: model -> (the graph it was emitted from, [(layer name, weight shapes)] in emission order); freed with the model
_LAYOUTS = weakref.WeakKeyDictionary()


def _layout(weights) -> list:
    return [(name, [tuple(a.shape) for a in arrays]) for name, arrays in weights.items()]


def _emitted_weights(graph) -> dict:
    """{layer name: its arrays}, in the order the emitter writes ``graph``'s layers (no files, no model)."""
    emitter = KerasEmitter(graph)
    emitter.emit_graph()
    return emitter.weights


KERAS_JAX = KerasJax()
