"""Clean-up passes: dead nodes, reshape/permute chains, pool-then-reshape, batch norm folded into convolutions.

Example (before / after)::

    %a = relu(%x)            %b = neg(%x)
    %b = neg(%x)       ->    return %b
    return %b
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, fresh_name, param_value
from ..ops.conv import CONV
from ..ops.dropout import DROPOUT
from ..ops.norm import BATCH_NORM
from ..ops.pool.adaptive import ADAPTIVE_AVG_POOL, ADAPTIVE_MAX_POOL
from ..ops.reduce import REDUCE
from ..ops.shape import PERMUTE, RESHAPE

__all__ = ["remove_dead_nodes", "merge_reshapes_and_permutes", "fold_pool_then_reshape", "fold_batch_norm",
           "drop_dropout", "drop_zero_dropout"]


def remove_dead_nodes(graph: Graph) -> Graph:
    """Drop nodes whose outputs no graph output depends on, and parameters nothing reads."""
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(v in live for v in node.outputs):
            kept.append(node)
            live.update(v for v in node.inputs if v is not None)
    names = {v.name for v in live}
    return graph.replace(nodes=tuple(reversed(kept)),
                         params={k: a for k, a in graph.params.items() if k in names},
                         param_values={k: v for k, v in graph.param_values.items() if k in names})


def merge_reshapes_and_permutes(graph: Graph) -> Graph:
    """Collapse chains of reshapes and of permutes; drop identity ones.

    Before / after::

        %a: f32[4x6] = reshape(%x) {shape=(4, 6)}
        %b: f32[2x2x6] = reshape(%a) {shape=(2, 2, 6)}   ->   %b = reshape(%x) {shape=(2, 2, 6)}
        %c = permute(%b) {perm=(1, 0, 2)}
        %d = permute(%c) {perm=(1, 0, 2)}                 ->   (gone: %d is %b)
    """

    producer = {}
    alias = {}  # Value -> the Value that replaces it
    nodes = []
    for node in graph.nodes:
        node = node.replace(inputs=tuple(alias.get(v, v) for v in node.inputs))
        source = node.inputs[0] if node.inputs else None
        if node.op is RESHAPE or node.op is PERMUTE:
            parent = producer.get(source)
            if parent is not None and parent.op is node.op:
                if node.op is RESHAPE:
                    node = node.replace(inputs=(parent.inputs[0],))
                else:
                    inner, outer = parent.attrs["perm"], node.attrs["perm"]
                    node = node.replace(inputs=(parent.inputs[0],), attrs={"perm": tuple(inner[i] for i in outer)})
            if _is_identity(node):
                alias[node.output] = node.inputs[0]
                continue
        nodes.append(node)
        for out in node.outputs:
            producer[out] = node
    outputs = tuple(alias.get(v, v) for v in graph.outputs)
    if any(v in graph.inputs or graph.is_param(v) for v in outputs):
        return graph  # an output would become an input: keep the explicit node
    return remove_dead_nodes(graph.replace(nodes=tuple(nodes), outputs=outputs))


def _is_identity(node) -> bool:
    if node.op is RESHAPE:
        return node.inputs[0].type.shape == node.output.type.shape
    return tuple(node.attrs["perm"]) == tuple(range(len(node.attrs["perm"])))


def fold_pool_then_reshape(graph: Graph) -> Graph:
    """A global pool that keeps its unit axes, then a reshape that only drops them, becomes one reduction
    without ``keepdims``: Keras's ``GlobalAveragePooling2D()``, torch's ``x.mean((2, 3))``.

    Applies to mean/amax with keepdims=True and to adaptive pools to size 1 whose only reader is
    such a reshape, when the pool's own output is no graph output. The reduction keeps the pool's
    scope and takes the reshape's output, so no reshape spells the batch size.

    Before / after::

        %p: float32[1x16x1x1] = adaptive_avg_pool(%x) {size=(1, 1)}  # pool
        %v: float32[1x16] = reshape(%p) {shape=(1, 16)}   ->   %v = mean(%x) {axes=(2, 3), keepdims=False}  # pool
    """

    users = graph.users()
    replaced, dropped = {}, set()
    for node in graph.nodes:
        pooled = _pooled_axes(node)
        readers = users.get(node.outputs[0], []) if pooled else []
        if len(readers) != 1 or readers[0].op is not RESHAPE or node.outputs[0] in graph.outputs:
            continue
        op, axes = pooled
        kept = tuple(d for i, d in enumerate(node.outputs[0].type.shape) if i not in axes)
        if tuple(readers[0].outputs[0].type.shape) != kept:
            continue
        replaced[readers[0]] = Node(REDUCE[op], node.inputs[:1], readers[0].outputs, {"axes": axes, "keepdims": False},
                                    node.scope)
        dropped.add(node)
    if not replaced:
        return graph
    return graph.replace(nodes=tuple(replaced.get(n, n) for n in graph.nodes if n not in dropped))


def _pooled_axes(node):
    """("mean" or "amax", the reduced axes) of a reduction that keeps them or a global adaptive pool; else None."""

    if (node.op is REDUCE["mean"] or node.op is REDUCE["amax"]) and node.attrs["keepdims"]:
        return node.op.name, tuple(sorted(node.attrs["axes"]))
    if (node.op is ADAPTIVE_AVG_POOL or node.op is ADAPTIVE_MAX_POOL) and all(s == 1 for s in node.attrs["size"]):
        rank = node.inputs[0].type.rank
        spatial = range(1, rank - 1) if node.attrs.get("channels_last", False) else range(2, rank)
        return ("mean" if node.op is ADAPTIVE_AVG_POOL else "amax"), tuple(spatial)
    return None


def fold_batch_norm(graph: Graph) -> Graph:
    """Fold an inference batch norm into the convolution (or linear) feeding it.

    Applies when the conv's output has no other reader and every weight involved is stored.
    The scale ``gamma / sqrt(var + eps)`` is computed in float64; folding is skipped when it is
    extreme (> 1e4), where float32 weights would lose the 1e-4 verification tolerance.
    ``meta["folded"]`` records what went where (the emitters say so in a comment):
    ``{"y": [{"scope": "bn", "op": "batch_norm"}]}``, keyed by the folded conv's output.

    Before / after::

        %c = conv(%x, %w, %b) {...}          # stem.0
        %y = batch_norm(%c, %g, %beta, %m, %v) {eps=1e-05}   ->   %y = conv(%x, %w', %b') {...}  # stem.0
    """

    producer = {o: n for n in graph.nodes for o in n.outputs}
    users = graph.users()
    params, values = dict(graph.params), dict(graph.param_values)
    replaced, dropped, folded_in = {}, set(), dict(graph.meta.get("folded", {}))
    for node in graph.nodes:
        conv = producer.get(node.inputs[0]) if node.op is BATCH_NORM else None
        if conv is None or conv.op is not CONV or len(users.get(conv.output, [])) != 1:
            continue
        if conv.attrs.get("channels_last", False) != node.attrs.get("channels_last", False):
            continue  # the channel axes differ: not a per-output-channel scale of this conv
        if conv.output in graph.outputs:  # the model also returns the conv's own output: keep it
            continue
        if not all(v is None or graph.is_param(v) for v in conv.inputs[1:] + node.inputs[1:]):
            continue
        folded = _folded_weights(graph, conv, node)
        if folded is None:
            continue
        # a weight shared by several conv + batch_norm pairs folds differently for each: fresh names
        w_name, b_name = (fresh_name(params, f"{conv.inputs[1].name}.{s}") for s in ("folded", "folded_bias"))
        for name, array in ((w_name, folded[0]), (b_name, folded[1])):
            params[name] = array
            values[name] = param_value(name, array)
        replaced[node] = conv.replace(inputs=(conv.inputs[0], values[w_name], values[b_name]), outputs=node.outputs)
        dropped.add(conv)
        folded_in[node.outputs[0].name] = [*folded_in.pop(conv.outputs[0].name, ()),
                                           {"scope": node.scope, "op": node.op.name}]
    if not replaced:
        return graph
    nodes = tuple(replaced.get(n, n) for n in graph.nodes if n not in dropped)
    return remove_dead_nodes(graph.replace(nodes=nodes, params=params, param_values=values,
                                           meta={**graph.meta, "folded": folded_in}))


def _folded_weights(graph, conv, bn):
    """(weight, bias) of conv followed by bn, or None when the scale is too extreme to fold."""
    def get(value, default):
        return default if value is None else graph.params[value.name].astype(np.float64)

    w = graph.params[conv.inputs[1].name]
    channels = w.shape[0]
    mean, var = get(bn.inputs[3], None), get(bn.inputs[4], None)
    gamma, beta = get(bn.inputs[1], np.ones(channels)), get(bn.inputs[2], np.zeros(channels))
    bias = get(conv.inputs[2] if len(conv.inputs) > 2 else None, np.zeros(channels))
    scale = gamma / np.sqrt(var + bn.attrs["eps"])
    if not np.all(np.isfinite(scale)) or np.abs(scale).max() > 1e4:
        return None
    weight = (w.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
    return weight, ((bias - mean) * scale + beta).astype(w.dtype)


def drop_dropout(graph: Graph) -> Graph:
    """Remove every ``dropout`` (the identity at inference), recording each in ``meta["dropped"]``;
    ``--inference`` runs it (by default the emitted model keeps its Dropout layers and trains like the source).

    Before / after::

        %d = dropout(%fc) {rate=0.1, axes=()}  # head.drop
        %y = linear(%d, %w, %b)                   ->   %y = linear(%fc, %w, %b)
    """
    return _remove_dropouts(graph, lambda node: True, record=True)


def drop_zero_dropout(graph: Graph) -> Graph:
    """Remove every ``dropout`` of rate 0, in every mode (Note [zero-rate dropout]); nothing is recorded.

    Before / after::

        %d = dropout(%h) {rate=0.0, axes=()}  # layer_0.attention.dropout
        %y = add(%d, %x)                          ->   %y = add(%h, %x)
    """
    return _remove_dropouts(graph, lambda node: float(node.attrs["rate"]) == 0.0, record=False)


# Note [zero-rate dropout]: a dropout of rate 0 is the identity while training as well as at inference, so it
# leaves the graph whatever the mode. Kept, it became a weightless nn.Dropout(0.0) that the torch emitter shares
# model-wide (TorchEmitter.submodule: one module per constructor), declared in the first block that used it; the
# next block then read the first one's attribute and a keras-hub Llama (dropout=0 by default) was written flat.


def _remove_dropouts(graph: Graph, which, record: bool) -> Graph:
    """``graph`` without the dropouts ``which(node)`` selects, each read of one replaced by its input; a dropout
    that would leave a graph input or parameter as a graph output stays. ``record``: list each in meta["dropped"]."""

    alias, nodes, dropped = {}, [], list(graph.meta.get("dropped", ()))
    kept_outputs = set(graph.outputs)
    for node in graph.nodes:
        node = node.replace(inputs=tuple(alias.get(v, v) for v in node.inputs))
        x = node.inputs[0] if node.inputs else None
        if node.op is DROPOUT and which(node) \
                and not (node.output in kept_outputs and (x in graph.inputs or graph.is_param(x))):
            alias[node.output] = x
            kind = "Dropout" if not node.attrs["axes"] else f"Dropout{len(node.attrs['axes'])}d"
            if record:
                dropped.append({"scope": node.scope, "kind": kind, "after": x.name})
            continue
        nodes.append(node)
    if not alias:
        return graph
    outputs = tuple(alias.get(v, v) for v in graph.outputs)
    meta = {**graph.meta, "dropped": dropped} if record else graph.meta
    return graph.replace(nodes=tuple(nodes), outputs=outputs, meta=meta)
