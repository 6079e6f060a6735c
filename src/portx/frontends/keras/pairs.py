"""A functional Keras model's own layer outputs, paired with the IR values lowered from them.

Note [keras layer outputs]: a Keras source has no node-by-node program to pair with the IR (torch's ATen calls are
one-to-one with IR nodes; a Keras layer is many), but its *top-level layers* are: every output of a layer the
functional graph calls is one IR value (``_Walker.bind``). ``layer_outputs`` records them while lowering, as
``graph.meta["layer_outputs"]``: {IR value name: [layer name, which call of that layer, output index]}. This is
also what streaming verification cuts a Keras graph at (one segment per top-level layer, Note [streaming
verification] in verification/streaming.py): a keras-hub backbone's ``token_embedding``, ``transformer_layer_0``,
..., ``sequence_output_layernorm``. ``run_layers`` runs the model layer by layer (Keras' own functional runner)
and keeps the outputs asked for, so each segment of the converted model is compared with the source's own value
at its outputs, on the source's own values at its inputs.

Note [release after the run]: JAX dispatches asynchronously, so a layer call returns before its computation has
read the layer's weights. A weight held as a view of a memory-mapped file (Note [mapped keras weights]) whose pages
are released as soon as the call returns is read again by the computation still running, and those pages then stay
resident to the end: the Llama 1B preset's source run ended 2.1 GB above where it started (the 525 MB embedding
and about 15 MB per block), 0.15 GB once each layer's outputs are waited for before its weights are released.

Example:
    >>> graph = with_layer_outputs(graph, functional_of(model), env)
    >>> found = run_layers(fn, arrays, graph.meta["layer_outputs"], keep={"transformer_layer_0_57"})
"""
from __future__ import annotations

import numpy as np

from .mapped import materialized

__all__ = ["with_layer_outputs", "run_layers"]


def _calls(fn):
    """(node, layer name, which call of that layer) of ``fn``'s functional graph, in the order Keras runs them."""
    seen = {}
    for depth in sorted(fn._nodes_by_depth, reverse=True):
        for node in fn._nodes_by_depth[depth]:
            if node.operation is None or node.is_input:
                continue
            name = node.operation.name
            seen[name] = seen.get(name, -1) + 1
            yield node, name, seen[name]


def with_layer_outputs(graph, fn, env):
    """``graph`` with ``meta["layer_outputs"]`` (Note [keras layer outputs]); ``env``: id(KerasTensor) -> the
    Value lowered for it, at the top level of ``fn``."""
    found = {}
    for node, name, nth in _calls(fn):
        for k, tensor in enumerate(node.outputs):
            value = env.get(id(tensor))
            if value is not None and value.name not in found:
                found[value.name] = [name, nth, k]
    return graph.replace(meta={**graph.meta, "layer_outputs": found})


def run_layers(fn, arrays, pairs, keep=None, release=None) -> dict:
    """{IR value name: the source's value} for the pairs (``meta["layer_outputs"]``) in ``keep`` (all when None),
    from one run of the functional graph ``fn`` on the flat input ``arrays`` in inference mode; ``release(path,
    value)`` is told of each weight of a layer once the layer ran (Note [mapped keras weights])."""
    import keras

    wanted = {(layer, nth, k): name for name, (layer, nth, k) in pairs.items() if keep is None or name in keep}
    calls, found = {}, {}

    def watched(op):
        def call(*args, **kwargs):
            if getattr(op, "_call_has_training_arg", False):  # as Functional.call passes it
                kwargs["training"] = False
            nth = calls[op.name] = calls.get(op.name, -1) + 1
            with materialized(getattr(op, "weights", ()) if release is not None else ()):  # Note [one copy per weight]
                out = op(*args, **kwargs)
                if release is not None:  # Note [release after the run]
                    keras.tree.map_structure(_ready, out)
            for variable in getattr(op, "weights", ()) if release is not None else ():
                release(variable.path, variable.value)
            for k, tensor in enumerate(keras.tree.flatten(out)):
                name = wanted.get((op.name, nth, k))
                if name is not None:
                    found[name] = np.asarray(tensor)
            return out
        return call

    fn._run_through_graph([np.asarray(a) for a in arrays], operation_fn=watched)
    return found


def _ready(value):
    """``value`` once computed (a JAX array is returned before its computation ran)."""
    wait = getattr(value, "block_until_ready", None)
    return wait() if wait is not None else value
