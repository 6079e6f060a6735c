"""Blocks that a Keras model names by a suffix: keras.applications' NASNet builds each cell with
``_normal_a_cell(ip, p, filters, block_id)`` and names its layers ``normal_conv_1_{block_id}``,
``separable_conv_1_normal_left1_{block_id}``, ``adjust_conv_projection_{block_id}`` (Note [blocks named by a suffix]).

Example::

    %a = conv(%x) scope=normal_conv_1_0           suffix_blocks(graph, block_of) ->
    %b = relu(%a) scope=activation_3                  keys  {"normal_conv_1_0": "0", "activation_3": "0",
    %c = conv(%b) scope=separable_conv_1_normal_left1_0          "separable_conv_1_normal_left1_0": "0", ...}
    %d = concat(...) scope=normal_concat_0            parts {"0": {"parent": "normal", "index": 0, ...}}
"""
from __future__ import annotations

import heapq
import re

__all__ = ["keras_snake", "suffix_blocks"]

#: a block id at the end of a layer name: a number (``normal_conv_1_0``), or a word and a number
#: (``reduction_conv_1_stem_1``, ``reduction_bn_1_reduce_4``)
_NUMBER_ID = re.compile(r"_(?P<id>\d+)$")
_WORD_ID = re.compile(r"_(?P<id>[A-Za-z]+_\d+)$")
#: the layers of a block: names before the id that differ (``normal_conv_1``, ``normal_bn_1``, ...)
_MIN_NAMES = 3


# Note [blocks named by a suffix]: keras.applications' NASNet passes a ``block_id`` to each cell and names every
# layer of it with the id at the END (``normal_conv_1_0``, ``separable_conv_2_bn_normal_left2_0``,
# ``reduction_concat_reduce_4``), where ResNet starts its names with the block (``conv2_block1_``). An id is the
# number the name ends with, or a word and that number where at least _MIN_NAMES names share it (``stem_1``,
# ``reduce_4``: a cell's names differ before it; ``adjust_conv_projection_0``'s ``projection_0`` is one name's). A
# model names blocks this way when two ids or more are each shared by _MIN_NAMES layer names and some name (before
# its id) occurs under two ids: Keras' own numbering of the layers it names (``activation_3``, ``add_5``: the class's
# snake-case name and a number) is no block id. Those layers, and any other node no block names, belong to the block
# whose nodes read everything they make (the cell's ``relu`` before each separable conv). A cell reads the outputs of
# the two cells before it (``ip``, ``p``): Keras orders layers by depth, so the next cell's ``_adjust_block`` sat
# between this cell's layers; the nodes are reordered (each after what it reads) so that each block's are
# consecutive, as ``block_runs`` reads them. The container of a block is its kind, the first word of the name of the
# layer that ends it (``normal_concat_0``: ``normal``; ``reduction_concat_reduce_4``: ``reduction``), its number the
# block's place among the blocks of its kind. A kind names at least half the block's layers (``normal_bn_1_0``,
# ``separable_conv_1_normal_left1_0``): a torch model's ``self.conv_1``, ``self.bn_1``, ``self.relu_1`` are no cell,
# and their state_dict keys stay where the source has them. The emitters write a name that ends with the id from the
# block's ``name`` argument (``f"normal_conv_1_{name}"``, ``pieces`` in targets/structure.py), a torch submodule
# without the id (``self.normal[0].normal_conv_1``), and a layer Keras named inside the block after the block's kind,
# its count in the block and the id (``normal_activation2_0``; Note [layers Keras names in blocks] in
# targets/keras_jax/style.py).


def keras_snake(name: str) -> str:
    """A Keras class name as Keras names its layers (``keras.src.utils.naming.to_snake_case``): ``ZeroPadding2D`` ->
    ``zero_padding2d``, ``ReLU`` -> ``re_lu``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _ids(scopes, classes) -> dict:
    """{scope: (block id, name before it)} for the scopes named by a suffix id (Note [blocks named by a suffix])."""
    found = {}
    for scope in scopes:
        name = scope.split(".")[0]
        if classes.get(name) and re.sub(r"_\d+$", "", name) == keras_snake(classes[name]):
            continue  # Keras named it itself
        found[scope] = [(m["id"], name[:m.start()]) for rx in (_WORD_ID, _NUMBER_ID) for m in [rx.search(name)] if m]
    names = {}
    for options in found.values():
        for block_id, head in options:
            names.setdefault(block_id, set()).add(head)
    chosen = {}
    for scope, options in found.items():
        for block_id, head in options:
            if len(names[block_id]) >= _MIN_NAMES:
                chosen[scope] = (block_id, head)
                break
    return chosen


def _owners(graph, keys) -> dict:
    """{scope: block} for the nodes no block names whose every reader is a node of one block (Note [blocks named by a
    suffix]); the named scopes in ``keys`` as given."""
    readers, key_of = {}, dict(keys)
    for node in graph.nodes:
        for v in node.inputs:
            if v is not None:
                readers.setdefault(v, []).append(node)
    owner = {}
    for node in reversed(graph.nodes):
        if node.scope in keys:
            owner[node] = keys[node.scope]
            continue
        reads = {owner.get(r) for v in node.outputs for r in readers.get(v, [])}
        if len(reads) == 1 and None not in reads and node.scope and not keys.get(node.scope):
            owner[node] = reads.pop()
    scoped = {}
    for node, key in owner.items():
        scoped.setdefault(node.scope, set()).add(key)
    key_of.update({scope: found.pop() for scope, found in scoped.items() if scope not in keys and len(found) == 1})
    return key_of


def _consecutive(graph, key_of):
    """``graph`` with its nodes reordered so that each block's are consecutive, each node after what it reads: the
    ready node of the block that began first goes first."""
    first, makers, order = {}, {}, {}
    for i, node in enumerate(graph.nodes):
        key = key_of.get(node.scope, "")
        order[node] = first.setdefault(key, i) if key else i
        for v in node.outputs:
            makers[v] = node
    waiting = {node: {makers[v] for v in node.inputs if v in makers} for node in graph.nodes}
    readers = {}
    for node, needs in waiting.items():
        for need in needs:
            readers.setdefault(need, []).append(node)
    place = {node: i for i, node in enumerate(graph.nodes)}
    ready = [(order[n], place[n]) for n, needs in waiting.items() if not needs]
    heapq.heapify(ready)
    nodes = []
    while ready:
        node = graph.nodes[heapq.heappop(ready)[1]]
        nodes.append(node)
        for reader in readers.get(node, []):
            waiting[reader].discard(node)
            if not waiting[reader]:
                heapq.heappush(ready, (order[reader], place[reader]))
    if len(nodes) != len(graph.nodes) or nodes == list(graph.nodes):  # a node waiting on itself: left as it was
        return graph
    return graph.replace(nodes=nodes)


def suffix_blocks(graph, named) -> tuple:
    """(``graph`` with each block's nodes consecutive, {scope: block id}, {block id: {"parent", "index", "stem"}}) for
    a model naming its blocks by a suffix id; ``(graph, {}, {})`` for any other (Note [blocks named by a suffix]).
    ``named(scope)``: the block another naming form finds for a scope ("" for none).

    Example: ``suffix_blocks(nasnet, block_of)[1]["normal_conv_1_0"]`` -> ``"0"``.
    """
    scopes = list(dict.fromkeys(n.scope for n in graph.nodes if n.scope and not named(n.scope)))
    chosen = _kinds(_ids(scopes, graph.meta.get("module_classes") or {}))
    heads = {}
    for block_id, head in chosen.values():
        heads.setdefault(head, set()).add(block_id)
    if len({i for i, _ in chosen.values()}) < 2 or not any(len(ids) > 1 for ids in heads.values()):
        return graph, {}, {}
    key_of = _owners(graph, {scope: block_id for scope, (block_id, _) in chosen.items()})
    graph = _consecutive(graph, key_of)
    kinds = {}
    for node in graph.nodes:
        if node.scope in chosen:
            kinds[chosen[node.scope][0]] = _kind(chosen[node.scope][1])
    parts, counts = {}, {}
    for block_id, kind in kinds.items():
        parts[block_id] = {"parent": kind, "index": counts.setdefault(kind, 0), "stem": f"{kind}_",
                           "suffix": block_id}
        counts[kind] += 1
    return graph, key_of, parts


def _kind(head) -> str:
    """A block's kind from the name of its last layer: ``normal_concat`` -> ``normal``."""
    return head.split("_")[0] or head


def _kinds(chosen) -> dict:
    """``chosen`` less the blocks whose kind (``_kind``, in scope order) is not a word of at least half their layers'
    names: ``normal`` is one of ``normal_conv_1``, ``separable_conv_1_normal_left1``, ...; a torch model's
    ``conv_1``, ``bn_1``, ``relu_1`` name no block (Note [blocks named by a suffix])."""
    heads = {}
    for block_id, head in chosen.values():
        heads.setdefault(block_id, []).append(head)
    kept = {block_id for block_id, names in heads.items()
            if 2 * sum(_kind(names[-1]) in name.split("_") for name in names) >= len(names)}
    return {scope: found for scope, found in chosen.items() if found[0] in kept}
