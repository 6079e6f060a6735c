"""Repeated blocks found from the graph where the names number none: the stretches between single-tensor cut points.

Note [blocks cut from the graph]: keras.applications' InceptionV3 names a block only at its concatenation
(``mixed0`` ... ``mixed10``); the layers inside are Keras' own names, numbered model-wide (``conv2d_15``,
``batch_normalization_15``), so no name numbers a block (Note [repeated blocks] in passes/blocks.py) and its code was
written flat. A *cut point* is a tensor every path from the inputs to the outputs passes through: in the node order
(topological), a place where one value alone is made before it and read after it. Between two cut points is one
stretch of the graph; a stretch that branches (a value in it, or the value it starts from, is read twice in it) is a
block, and a straight chain of layers (a stem of conv, batch norm, relu) is glue. Blocks are of one kind when their
op subgraphs match up to parameters and sizes (``block_structure``, the comparison named blocks use), so
InceptionV3's mixed0 to mixed2 are one kind though mixed0's pool branch is narrower. A block is named after the
layer that makes its exit when the source named that layer (``mixed4``); a layer Keras named itself (``add_3``,
its class's name and a number) or none gives the generated ``block<N>``. Blocks are cut only where the names give
none and some kind repeats, so a model whose names give blocks, or in which nothing repeats, is unchanged; and only
where every layer of the block that holds weights is one Keras named itself (Note [auto names in cut blocks]): a
layer the source named (a flat torch module's ``branch1_conv``, a Keras ``mixed4_conv``) keeps its name and path on
both targets, so the blocks of a kind could not share a class or function without moving the source's
``state_dict`` keys or weight paths, and such a graph stays flat.

Note [auto names in cut blocks]: the layers of a cut block are named model-wide by Keras (``conv2d_43`` in
``mixed4``), so the same layer of another block of its kind has another number. ``meta["block_names"]`` gives each
such layer's name within its block: its Keras stem numbered from the block's first of that stem (``conv2d_43`` in
``mixed4``, whose first conv is ``conv2d_40``, is ``conv2d_3``), the same in every block of a kind because Keras
numbers layers in the order the block's code creates them. torch-xla nests the layer at ``mixed4.conv2d_3`` and
keras-jax writes ``name=f"conv2d_{n + 3}"`` with ``n`` the block's first number (targets/keras_jax/auto_names.py).

Example (meta only; nodes unchanged)::

    %b = conv(%a) scope=conv2d_5 ... %m = concat(%p, %q) scope=mixed0     meta["blocks"] = [
    %c = conv(%m) scope=conv2d_12 ... %n = concat(%r, %s) scope=mixed1 ->   {"key": "mixed0", "kind": 0, ...},
                                                                          {"key": "mixed1", "kind": 0, ...}]
"""
from __future__ import annotations

import re

from .blocks_suffix import keras_snake

__all__ = ["cut_blocks", "block_names", "auto_name", "AUTO_NAME"]

#: a Keras layer name with Keras' own number: ``conv2d_15`` (stem ``conv2d``, number 15); ``conv2d`` is number 0
AUTO_NAME = re.compile(r"^(?P<stem>[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*?)(?:_(?P<number>\d+))?$")


def auto_name(scope, classes) -> tuple | None:
    """(stem, number) where ``scope`` is a name Keras gave the layer itself (its class's snake-case name and a
    number), else None. Example: ``auto_name("conv2d_15", {"conv2d_15": "Conv2D"})`` -> ``("conv2d", 15)``."""
    found = AUTO_NAME.match(scope or "")
    cls = (classes or {}).get(scope)
    if not found or not cls or found["stem"] != keras_snake(cls):
        return None
    return found["stem"], int(found["number"] or 0)


def _cuts(graph) -> list:
    """The node positions ``b`` before which exactly one value is live (made before, read at ``b`` or later)."""
    nodes, made, last = graph.nodes, {}, {}
    for v in graph.inputs:
        made[v] = -1
    for i, node in enumerate(nodes):
        for v in node.inputs:
            if v is not None and v in made:
                last[v] = i
        for v in node.outputs:
            made[v] = i
    for v in graph.outputs:
        last[v] = len(nodes)
    change = [0] * (len(nodes) + 2)
    for v, i in made.items():
        if v in last and last[v] > i:  # live at the boundaries i + 1 .. last[v]
            change[i + 1] += 1
            change[last[v] + 1] -= 1
    cuts, live = [], 0
    for b in range(len(nodes) + 1):
        live += change[b]
        if live == 1:
            cuts.append(b)
    return cuts


def _branches(graph, nodes) -> bool:
    """True when some value the stretch reads is read by two of its nodes or more (a block, not a chain)."""
    seen = set()
    for node in nodes:
        for v in {v for v in node.inputs if v is not None and not graph.is_param(v)}:
            if v in seen:
                return True
            seen.add(v)
    return False


def _holds_weights(graph, node) -> bool:
    """True when ``node`` reads a stored weight of its own layer (``conv2d_15.weight`` in scope ``conv2d_15``)."""
    return bool(node.scope) and any(graph.is_param(v) and v.name.startswith(node.scope + ".") for v in node.inputs)


def _key(graph, nodes, taken, count) -> str:
    """The block's name: its exit layer's when the source named it, else ``block<count>`` (Note [blocks cut from the
    graph])."""
    scope = nodes[-1].scope or ""
    classes = graph.meta.get("module_classes")
    if scope and scope.isidentifier() and "." not in scope and auto_name(scope, classes) is None and classes:
        return scope
    key = f"block{count}"
    while key in taken:
        key = "_" + key
    return key


def _parts(key) -> dict:
    """The container, number and stem of a cut block's name: ``mixed4`` -> ``{"parent": "mixed", "index": 4,
    "stem": "mixed"}``."""
    found = re.match(r"^(?P<stem>.*?)(?P<index>\d+)$", key)
    stem = found["stem"] if found and found["stem"] else key
    return {"parent": stem.rstrip("_") or stem, "index": int(found["index"]) if found else 0, "stem": stem}


def cut_blocks(graph, structure) -> list:
    """The blocks between single-tensor cut points (Note [blocks cut from the graph]) as ``graph.meta["blocks"]``
    entries, or [] where no kind repeats; ``structure(graph, nodes)``: the comparison of passes/blocks.py."""
    cuts, classes = _cuts(graph), graph.meta.get("module_classes")
    taken = {n.scope for n in graph.nodes if n.scope}
    found, kinds = [], {}
    for lo, hi in zip(cuts, cuts[1:]):
        own = list(graph.nodes[lo:hi])
        if len(own) < 2 or not _branches(graph, own) or any(
                auto_name(n.scope, classes) is None for n in own if _holds_weights(graph, n)):
            continue
        key = _key(graph, own, taken, len(found))
        kind = kinds.setdefault(structure(graph, own), len(kinds))
        found.append({"key": key, "start": lo, "stop": hi, "kind": kind, **_parts(key)})
    counts = {}
    for block in found:
        counts[block["kind"]] = counts.get(block["kind"], 0) + 1
    return found if any(c > 1 for c in counts.values()) else []


def block_names(graph, blocks) -> dict:
    """{scope: its name within its block} for the layers Keras numbered model-wide inside cut blocks (Note [auto
    names in cut blocks]). Example: ``{"conv2d_43": "mixed4.conv2d_3", ...}``."""
    classes, found = graph.meta.get("module_classes"), {}
    for block in blocks:
        first = {}
        for node in graph.nodes[block["start"]:block["stop"]]:
            auto = auto_name(node.scope, classes)
            if auto:
                first[auto[0]] = min(first.get(auto[0], auto[1]), auto[1])
        for node in graph.nodes[block["start"]:block["stop"]]:
            auto = auto_name(node.scope, classes)
            if auto:
                offset = auto[1] - first[auto[0]]
                found[node.scope] = f"{block['key']}.{auto[0]}_{offset}" if offset else f"{block['key']}.{auto[0]}"
    return found
