"""What every Keras model.py holds around its layers: the module docstring and imports, the ``Constant`` layer,
``build_model``'s return and ``load_model`` (emitter.py writes the layers, blocks.py the block functions).

Example:
    >>> text = module_text(emitter, body, ["logits"])   # the whole model.py
    >>> text.startswith(HEADER)
    True
"""
from __future__ import annotations

import re

from ..codegen import LineWriter, literal, module_sentences, nested_outputs
from .sharded import SHARDED_FILE
from .style import layout_sentence

__all__ = ["CONSTANT_LAYER", "HEADER", "LOAD_MODEL", "WEIGHTS_FILE", "WIDTH", "model_name", "module_text"]

WEIGHTS_FILE = SHARDED_FILE  # the index of the shards (Note [sharded keras weights])
#: the first line of every model.py this emitter writes (how targets.KERAS_JAX recognises its folders)
HEADER = '"""Keras 3 model written by portx.'
WIDTH = 100  # lines of the written model.py wrap at this width
_DEEP_GRAPH = 300  # Note [deep graphs]: Keras' functional graph walk recurses per layer

# Note [deep graphs]: Keras builds, calls and saves a functional model by walking its graph recursively, a few Python
# frames per layer, so a model of a few thousand layers (a 32-layer decoder written flat) passes Python's default
# limit of 1,000 frames. A model.py of more than ``_DEEP_GRAPH`` nodes raises the limit to 20 frames a node plus
# 1,000, once, where it is imported.

CONSTANT_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class Constant(layers.Layer):
    """Holds one stored array: a source parameter used directly (trainable=True), or a constant.

    Registered serializable: after this file is imported, keras.saving.load_model reads a saved model.
    """

    def __init__(self, shape, dtype="float32", trainable=False, **kwargs):
        kwargs.pop("dtype_policy", None)
        super().__init__(trainable=trainable, **kwargs)
        self.value_shape, self.value_dtype = tuple(shape), dtype
        self.value = self.add_weight(shape=shape, dtype=dtype, initializer="zeros", name="value",
                                     trainable=trainable)

    def call(self, anchor):
        return ops.convert_to_tensor(self.value)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "shape": self.value_shape,
                "dtype": self.value_dtype}
'''


def module_text(emitter, body: str, outs) -> str:
    """The whole model.py: its docstring and imports, the definitions and block functions ``emitter`` wrote,
    ``build_model`` around ``body`` returning ``outs`` (None: ``body`` returns), and ``load_model``."""
    w = LineWriter()
    w.line(f"{HEADER} Runs with KERAS_BACKEND=jax; needs only keras (and jax).")
    w.line("")
    w.line("build_model() returns the architecture; load_model() returns it with the weights in")
    w.line(f"{WEIGHTS_FILE} and its shards beside this file.")
    w.line(layout_sentence(emitter.graph))
    for row in module_sentences(emitter.graph):
        w.line(row)
    w.line('"""')
    w.line("import os")
    deep = len(emitter.graph.nodes) > _DEEP_GRAPH
    if deep:
        w.line("import sys")
    w.line("")
    w.line('os.environ.setdefault("KERAS_BACKEND", "jax")  # before the first keras import')
    w.line("")
    if emitter.uses_numpy:
        w.line("import numpy as np")
    w.line("import keras")
    w.line("from keras import layers, ops")
    w.line("")
    w.line(f"WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), {literal(WEIGHTS_FILE)})")
    if emitter.default_layout:  # the layers leave data_format at Keras's default: pin it once
        w.line("# The layers below use Keras's default data_format; pinned in case keras.json sets another.")
        w.line('keras.config.set_image_data_format("channels_last")')
    text = w.text()
    if deep:  # Note [deep graphs]
        text += ("\n# Keras builds functional graphs recursively, a few frames per layer; this model is deep.\n"
                 f"sys.setrecursionlimit(max(sys.getrecursionlimit(), {20 * len(emitter.graph.nodes) + 1000}))\n")
    text += "\n".join(emitter.definitions.values())
    text += "".join("\n\n" + fn for fn in emitter.functions)
    text += "\n\ndef build_model():\n"
    text += '    """The architecture, with freshly initialised weights."""\n'
    text += body
    if outs is None:
        return text + LOAD_MODEL
    ins = [emitter.given.get(v) or emitter.names[v] for v in emitter.graph.inputs] or ["anchor"]
    ins_text = ins[0] if len(ins) == 1 else "[" + ", ".join(ins) + "]"
    outs_text = outs[0] if len(outs) == 1 else "[" + ", ".join(outs) + "]"
    if emitter.graph.meta.get("output_structure") is not None:  # Note [output structure]
        outs_text = nested_outputs(emitter.graph.meta["output_structure"], outs)
    last = LineWriter(WIDTH)
    last.indent = 1
    inner = f"keras.Model({ins_text}, {outs_text}, name={literal(model_name(emitter.graph))})"
    last.line(f"return {inner}" if emitter.graph.inputs else f"return DrawModel({inner}, name='draw_model')")
    text += last.text() + LOAD_MODEL
    return text


def model_name(graph) -> str:
    """The Keras model's name: the graph's, as an identifier."""
    return re.sub(r"[^0-9A-Za-z_]", "_", graph.name) or "model"


LOAD_MODEL = '''

def load_model(weights=WEIGHTS, precision=None, distribution=None):
    """The model with its converted weights.

    precision: None keeps JAX's default; "highest" makes float32 matmuls and convolutions exact
    on TPU (which otherwise uses bfloat16 passes), matching the verified numbers.
    distribution: a keras.distribution.Distribution, e.g. ModelParallel(layout_map=layout_map(mesh),
    batch_dim_name="batch"): each weight is created and loaded straight into its shards. Run and fit
    the model under the same distribution (``with distribution.scope():``).
    """
    if precision is not None:
        import jax

        jax.config.update("jax_default_matmul_precision", precision)
    if distribution is not None:
        with distribution.scope():
            return load_model(weights, precision)
    model = build_model()
    model.load_weights(weights)
    return model
'''
