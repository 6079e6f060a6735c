"""Blocks cut out of a loaded Keras model: a functional sub-model between its own KerasTensors (Note [cut blocks]).

Example:
    >>> cut = keras_cutter(model, graph, emitted["layer_of"])
    >>> needed, run = cut(segment)               # the IR values the block reads, and its run
    >>> outputs = run([source_values[v.name] for v in needed])
"""
from __future__ import annotations

import weakref

import numpy as np

from ..codegen import flatten_outputs
from .cpu_dots import widened_dots

__all__ = ["keras_cutter"]

# Note [cut blocks]: a conversion verified whole also gets a row per repeated block (verification/block_rows.py):
# the emitted block run on the source's values at its inputs. Emitting and building each block again (streaming
# verification's way, Note [segments in memory]) made the 4-layer Llama's verify stage 3x slower (Note [one
# pipeline] in verification/budget.py). Here the block is a ``keras.Model`` between KerasTensors of the model
# already loaded: its layers and variables are the model's own (no build, no copy of a weight). A block's outputs
# are the tensors of the layers that made them (``layer_of``: IR value -> layer name, a layer called once). Its
# inputs are found walking back from those outputs: the walk stops at a graph input or at a layer outside the block
# that made a non-parameter IR value (a value the source computes too), and goes through any other operation (a
# ``keras.ops`` call, a Constant layer holding a weight): glue written with ``keras.ops`` before the block's first
# layer is then run with it, on the source's values at its own inputs. Blocks of one structure (the same
# operations, variable shapes and input shapes) share one jitted forward, each run with its own variables'
# values: one XLA compile per structure (a torchvision ViT's blocks alternate between the MLP's two Linear layers:
# holding one structure's compile at a time compiled each block again). A structure's executable is freed with
# the last block that runs it (verification/block_rows.py).
#
# Note [cuts leave the model as it was]: ``keras.Model`` between tensors that are not ``keras.Input``s clones the
# graph's nodes (keras' ``clone_graph_nodes``), and every cloned ``Node`` appends itself to its layer's
# ``_inbound_nodes`` and to its producers' ``_outbound_nodes``. Left there, the loaded model, which is the model
# ``convert`` hands back, no longer saves ("could not find node key ..._ib-4" from ``model.save``). The sub-model
# runs from its own node lists, so each cut puts every layer's lists back as they were once the sub-model exists.
# A cut whose input is a graph input keeps that ``keras.Input`` as its own, and the cloned ``InputLayer`` node
# rewrites its ``_keras_history`` (node 1 of a layer the model knows with one node): that is put back too.


def keras_cutter(model, graph, layer_of):
    """``cut(segment) -> (needed IR values, run) | why``: the block of ``segment`` as a sub-model of ``model``."""
    import keras

    made = {}
    for value, name in layer_of.items():
        made.setdefault(name, []).append(value)
    single = {name: values[0] for name, values in made.items() if len(values) == 1}
    inputs = {id(t): v for t, v in zip(model.inputs, graph.inputs)}
    shared = weakref.WeakValueDictionary()  # structure -> its forward, while a block's run holds it
    restore = _node_lists(model)

    def cut(seg):
        own = {layer_of[v] for n in seg.nodes for v in n.outputs if v in layer_of}
        outs = []
        for value in seg.outputs:
            name = layer_of.get(value)
            if name not in single:
                return f"its output {value.name} is not the one output of a layer"
            outs.append(model.get_layer(name).output)
        stops = _stops(outs, own, single, {**inputs, **_read_by_layers(model, seg, graph, layer_of)}, graph)
        if isinstance(stops, str):
            return stops
        tensors, needed = [t for t, _ in stops], [v for _, v in stops]
        try:
            sub = keras.Model(tensors if len(tensors) > 1 else tensors[0], outs)
        finally:
            restore()  # Note [cuts leave the model as it was]
        key = (tuple(type(op).__name__ for op in sub.operations),
               tuple((tuple(w.shape), str(w.dtype)) for w in sub.weights), tuple(tuple(t.shape) for t in tensors))
        forward = shared.get(key)
        if forward is None:
            forward = shared[key] = _forward(sub)
        return needed, lambda feed: forward(sub, feed)

    return cut


def _node_lists(model):
    """``restore()``: puts every operation's ``_inbound_nodes`` / ``_outbound_nodes`` of ``model`` back to what they
    hold now, in place, and every tensor's ``_keras_history`` (Note [cuts leave the model as it was])."""
    ops = {id(op): op for op in model.operations}
    ops.update({id(t._keras_history.operation): t._keras_history.operation for t in model.inputs})
    saved = [(op, list(op._inbound_nodes), list(op._outbound_nodes)) for op in ops.values()]
    tensors = {id(t): t for op in ops.values() for node in op._inbound_nodes for t in node.output_tensors}
    histories = [(t, t._keras_history) for t in tensors.values()]

    def restore():
        for op, inbound, outbound in saved:
            op._inbound_nodes[:] = inbound
            op._outbound_nodes[:] = outbound
        for tensor, history in histories:
            tensor._keras_history = history

    return restore


def _read_by_layers(model, seg, graph, layer_of) -> dict:
    """{id(KerasTensor): IR value} for the block's inputs that its layers read: a layer's input tensors pair in order
    with its node's inputs that are not weights."""
    found = {}
    for node in seg.nodes:
        name = layer_of.get(node.outputs[0]) if node.outputs else None
        if name is None or not any(v in seg.inputs for v in node.inputs):
            continue
        tensors = flatten_outputs(model.get_layer(name)._inbound_nodes[0].input_tensors)
        values = [v for v in node.inputs if v is not None and not graph.is_param(v)]
        if len(tensors) == len(values):
            found.update({id(t): v for t, v in zip(tensors, values) if v in seg.inputs})
    return found


def _stops(outs, own, single, inputs, graph):
    """[(KerasTensor, IR value)] where the walk back from ``outs`` stops (Note [cut blocks]), in first-met order."""
    stops, seen, todo = {}, set(), list(outs)
    while todo:
        tensor = todo.pop()
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        if id(tensor) in inputs:
            stops[id(tensor)] = (tensor, inputs[id(tensor)])
            continue
        op, index, _ = tensor._keras_history
        name = getattr(op, "name", None)
        value = single.get(name)
        if value is not None and name not in own and not graph.is_param(value):
            stops[id(tensor)] = (tensor, value)
            continue
        node = op._inbound_nodes[index]
        if not node.input_tensors and type(op).__name__ == "InputLayer":
            return "it reads an input the graph does not name"
        todo.extend(node.input_tensors)
    return list(stops.values())[::-1]


#: XLA options for a cut block, run once per block: its compile, not its run, is the cost (as the trace's probe)
_CUT_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _forward(like):
    """``(sub, feed) -> [array]``: ``like``'s graph under one ``jax.jit``, compiled once, run with ``sub``'s
    variables."""
    import jax

    def forward(trainable, non_trainable, *inputs):
        out, _ = like.stateless_call(trainable, non_trainable, list(inputs) if len(inputs) > 1 else inputs[0])
        return flatten_outputs(out)

    compiled = []

    def call(sub, feed):
        args = ([v.value for v in sub.trainable_variables], [v.value for v in sub.non_trainable_variables], *feed)
        if not compiled:
            lowered = jax.jit(widened_dots(forward)).lower(*args)  # Note [bfloat16 dots on the CPU]
            try:
                compiled.append(lowered.compile(_CUT_OPTIONS))
            except Exception:  # noqa: BLE001 - a backend without these options: its default compile
                compiled.append(lowered.compile())
        return [np.asarray(o) for o in compiled[0](*args)]

    return call
