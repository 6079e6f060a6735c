"""Repeated source blocks, found from the nodes' scopes and checked structurally.

Note [repeated blocks]: a path component that is a number names one block of a ``ModuleList`` or
``nn.Sequential`` (``layer1.2``, ``model.layers.7``, ``blocks.3``); the consecutive nodes whose scopes
share such a prefix are one block (``block_runs``; verification/streaming.py cuts its segments the
same way). Two blocks are *the same* when their op subgraphs are equal up to parameter values and sizes:
the same ops in the same order, the same attribute names, the same dtypes and ranks, and the same wiring
(which earlier node of the block, or which outside value in order of first use, each input reads).
``record_blocks`` keeps every block in ``graph.meta["blocks"]`` with its structure's number (``kind``). The
emitters write the blocks of a kind that occurs at least twice once (a Keras function, a torch ``nn.Module``
class) and call it per block, after checking that the code they wrote for each is the same up to names and
numbers (Note [structured code] in targets/structure.py). Everything else stays flat. A block is kept as node
positions, so a change after the passes that adds or drops nodes records them again (``refresh_blocks``; Note
[blocks after free dims] in passes/free_dims.py).

Example (meta only; nodes unchanged)::

    %a = conv(%x) scope=layer1.0.conv1           meta["blocks"] = [
    %b = relu(%a) scope=layer1.0.relu      ->        {"key": "layer1.0", "start": 0, "stop": 2, "kind": 0},
    %c = conv(%b) scope=layer1.1.conv1               {"key": "layer1.1", "start": 2, "stop": 4, "kind": 0}]
    %d = relu(%c) scope=layer1.1.relu
"""
from __future__ import annotations

import re

from .blocks_cut import block_names, cut_blocks
from .blocks_first import first_blocks
from .blocks_siblings import sibling_blocks, sibling_keys, sibling_names
from .blocks_suffix import suffix_blocks

__all__ = ["block_of", "block_parts", "block_runs", "block_structure", "record_blocks", "refresh_blocks"]

_INDEX = re.compile(r"^\d+$")
#: a Keras layer name that numbers its block, as keras.applications and keras-hub write them (``conv2_block1_``,
#: ``transformer_layer_0_``, MobileNetV3's ``expanded_conv_3_``)
_NAMED = re.compile(r"^(?P<key>(?P<stem>.*?(?:block|layer|expanded_conv)s?(?:_(?=\d+(?:_|$))|(?=\d+_)))(?P<index>\d+))"
                    r"(?:_|$)", re.IGNORECASE)  # ``Block_1_conv`` too (Note [block names in the source's case])
#: a block lettered inside its numbered stage, as EfficientNet names them: ``block2a_``, ``block2b_`` (Note [lettered
#: blocks])
_LETTERED = re.compile(r"^(?P<key>(?P<stem>block\d+)(?P<letter>[a-z]))(?:_|$)")


def block_of(scope: str) -> str:
    """The block a scope belongs to: the path up to its outermost numbered component, a number or a name ending in
    its numbered ``block``/``layer`` (as Keras models and torchvision's ViT name them), or "" (glue).

    Example: ``block_of("m.model.layers.3.self_attn.q_proj")`` -> ``"m.model.layers.3"``;
    ``block_of("conv2_block1_1_conv")`` -> ``"conv2_block1"``;
    ``block_of("encoder.layers.encoder_layer_0.mlp.0")`` -> ``"encoder.layers.encoder_layer_0"`` (Note [outermost
    block]).
    """
    parts = scope.split(".")
    for i, part in enumerate(parts):
        if _INDEX.match(part):
            return ".".join(parts[: i + 1])
        named = _NAMED.match(part) or _LETTERED.match(part)
        if named:
            return ".".join(parts[:i] + [named["key"]])
    return ""


# Note [outermost block]: the block is the outermost numbered component of a path, whether a number (``layers.3``)
# or a name with its number (``encoder_layer_0``, ``blocks_2``). Taking a number anywhere in the path before any
# name made torchvision's ViT (``encoder.layers.encoder_layer_0.mlp.0``, an ``nn.Sequential`` MLP inside a named
# layer) 48 blocks of one MLP layer each where 12 encoder layers are what its source repeats. A number inside a
# block then numbers a part of it (``mlp.0``), as in ``layer1.0.downsample.0``.


def block_parts(key: str) -> dict:
    """The container a block belongs to, its number in it, and the text its layer names start with before the
    number. Example: ``block_parts("layer1.2")`` -> ``{"parent": "layer1", "index": 2, "stem": "layer1_"}``;
    ``block_parts("conv2_block1")`` -> ``{"parent": "conv2", "index": 1, "stem": "conv2_block"}``;
    ``block_parts("layer1_0")`` -> ``{"parent": "layer1", "index": 0, "stem": "layer1_"}`` (Note [numbered blocks in
    a stage])."""
    head, _, last = key.rpartition(".")
    nested = re.match(r"^(?P<parent>.+?)_(?P<index>\d+)$", last)
    named = _NAMED.match(nested["parent"] + "_") if nested else None
    if named and named["key"] == nested["parent"]:  # Note [numbered blocks in a stage]
        parent = f"{head}.{nested['parent']}" if head else nested["parent"]
        return {"parent": parent, "index": int(nested["index"]), "stem": _text_of(parent) + "_"}
    if _INDEX.match(last):
        return {"parent": head, "index": int(last), "stem": _text_of(head) + "_"}
    lettered = _LETTERED.match(last + "_")
    if lettered:  # Note [lettered blocks]
        stem = lettered["stem"]
        return {"parent": f"{head}.{stem}" if head else stem, "index": ord(lettered["letter"]) - ord("a"),
                "stem": _text_of(f"{head}.{stem}" if head else stem)}
    named = _NAMED.match(last + "_")  # the key ends at its number
    stem = named["stem"]
    parent = re.sub(r"_?(block|layer)_?$", "", stem).rstrip("_") or stem.rstrip("_")
    return {"parent": f"{head}.{parent}" if head else parent, "index": int(named["index"]),
            "stem": _text_of(f"{head}.{stem}" if head else stem)}


def _numbered_parts(key):
    """``block_parts(key)`` for a top-level key named with its number (``block_1``, ``expanded_conv_3``), else None
    (Note [an unnumbered first block] in blocks_first.py)."""
    named = _NAMED.match(key + "_") if "." not in key else None
    return block_parts(key) if named and named["key"] == key else None


def _text_of(path: str) -> str:
    """A path as the text of a name: ``layer1.0`` -> ``layer1_0``."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", path).lower()


# Note [lettered blocks]: EfficientNet (and EfficientNetV2) number a stage and letter its blocks
# (``block2a_expand_conv``, ``block2b_expand_conv``): the block is ``block2a``, its container the stage ``block2`` and
# its number the letter's place (a is 0), so torch-xla nests it as ``block2[0].expand_conv``. Its names do not end in
# a number, so no Keras loop writes them (``loops`` in targets/structure.py): each block is one call with its name
# (each of EfficientNet's blocks takes its own drop rate anyway).


# Note [numbered blocks in a stage]: portx's own Keras code names a torch block's layers after its path
# (``layer1.0.conv1`` -> ``layer1_0_conv1``), which reads as keras.applications' ``conv2_block1_1_conv``: the stage
# ``layer1`` was the block, and a round trip (torch -> keras-jax -> torch-xla) wrote ResNet flat. A named block whose
# every layer name goes on with a number (``layer1_0_...``, ``layer1_1``), two numbers or more, numbers its blocks
# in it: the block is ``layer1_0`` in container ``layer1``, as the torch source nested it. keras.applications names
# some layers of a block with no such number (``conv2_block1_add``, ``conv2_block1_out``), so its blocks stay.


def _nested_keys(graph) -> dict:
    """{scope: its block} for the scopes of named blocks that number their blocks (Note [numbered blocks in a
    stage]). Example: ``{"layer1_0_conv1": "layer1_0", "layer1_1": "layer1_1", ...}``."""
    by_key, found = {}, {}
    for scope in {node.scope for node in graph.nodes if node.scope}:
        key = block_of(scope)
        if key and not _INDEX.match(key.rpartition(".")[2]):
            by_key.setdefault(key, []).append(scope)
    for key, scopes in by_key.items():
        subs = [re.match(re.escape(key) + r"_(\d+)(?=[_.]|$)", scope) for scope in scopes]
        if all(subs) and len({m.group(1) for m in subs}) > 1:
            found.update({scope: m.group(0) for scope, m in zip(scopes, subs)})
    return found


def block_runs(graph, key_of=None, join=True) -> list:
    """(block key, [nodes]) for each stretch of consecutive nodes of one block ("" for glue between blocks);
    ``key_of(scope)`` gives a scope's block (default ``block_of``); ``join``: glue inside a block is the block's
    (Note [operations inside a block]).

    A node a pass added (no scope) stays in the block it sits in.
    Example: ``[key for key, _ in block_runs(graph)]`` -> ``["", "layer1.0", "layer1.1", ""]``.
    """
    runs, key_of = [], key_of or block_of
    for node in graph.nodes:
        key = key_of(node.scope) if node.scope or not runs else runs[-1][0]
        if runs and runs[-1][0] == key:
            runs[-1][1].append(node)
        elif join and key and len(runs) > 1 and runs[-2][0] == key and not runs[-1][0] \
                and _inside(runs[-2][1], runs[-1][1], node):
            runs[-2][1].extend(runs.pop()[1] + [node])  # Note [operations inside a block]
        else:
            runs.append((key, [node]))
    return runs


# Note [operations inside a block]: a Keras function that builds a block names its layers after the block
# (``f"{name}_qkv"``) but not the ``keras.ops`` calls between them, which Keras names by a model-wide count
# (``split_2``, ``reshape_8``): each block read as several short runs with glue between, and portx's own Keras
# output (a torch model converted to Keras and back) had no block that repeats. A run of glue between two runs of
# one block joins the block when it continues the block's data flow (its first node reads what the run before
# made, and the run after reads what it made) and each of its nodes has a name (a torch block's functional calls
# carry the block's scope already; a torch source's top-level code has none).


def _inside(before, glue, node) -> bool:
    """True when ``glue`` (named nodes) sits inside a block between ``before`` and ``node`` (Note [operations
    inside a block])."""
    made, inner = {v for n in before for v in n.outputs}, {v for n in glue for v in n.outputs}
    return all(n.scope for n in glue) and any(v in made for v in glue[0].inputs) \
        and any(v in inner for v in node.inputs)


def block_structure(graph, nodes) -> tuple:
    """What two blocks share when they are the same up to parameter values and sizes (Note [repeated blocks])."""
    made, outside, rows = {}, {}, []
    for i, node in enumerate(nodes):
        reads = []
        for v in node.inputs:
            if v is None:
                reads.append(None)
            elif v in made:
                reads.append(("node", made[v]))
            elif graph.is_param(v):
                reads.append(("param", v.type.dtype, v.type.rank))
            else:
                reads.append(("outside", outside.setdefault(v, len(outside)), v.type.dtype, v.type.rank))
        for k, v in enumerate(node.outputs):
            made[v] = (i, k)
        rows.append((node.op.name, tuple(sorted(node.attrs)), tuple(reads),
                     tuple((v.type.dtype, v.type.rank) for v in node.outputs)))
    return tuple(rows)


# Note [a block's own nodes]: a block is its longest stretch of consecutive nodes. Another stretch of its scope
# elsewhere is glue, written flat where it is: the nodes free dims put first for a constant a block reads (a
# keras-hub layer's rotary positions and mask, grown from the batch and the sequence; Note [blocks after free dims]
# in passes/free_dims.py) carry the block's scope but sit before every block. Taking no block for such a key
# left a keras-hub Llama flat. The block's template then reads those nodes as inputs, and the emitters write a
# block once only where its statements match (Note [structured code]), so this never changes what code computes.


# Note [a block has parts]: a numbered module with no submodules is one layer of its container, not a block: the
# children of ``nn.Sequential(conv, bn, relu)`` (a stem, a classifier, an MLP) are numbered, but a person writes no
# class for one ``nn.Conv2d``, and the emitters write no function for one statement (_MIN_LINES in
# targets/structure.py). Such a key's nodes all have its scope exactly; they stay glue, written flat.


def _has_parts(key, nodes) -> bool:
    """True when some node of the block sits in a submodule or sublayer of it (Note [a block has parts])."""
    return any(node.scope and node.scope != key for node in nodes)


# Note [glue that interleaves a block]: Keras orders a functional model's layers by depth, so code that does not
# belong to a block can sit between its layers: the round-trip text encoder's mask (``equal_3``, ``where_3``, read by
# every layer) was made inside its first layer and its pooling mask (``not_equal_1``, ``cast_1``, read by the head)
# inside its last, and no two layers were alike. Where glue sits between two stretches of one block, its nodes that
# read nothing the block made there move before the block and those that nothing of the block reads after them move
# past it (``_gather``); the rest (the block's own ``ops`` calls) stays inside (Note [operations inside a block]).
# Each node still follows what it reads, so the graph computes the same; a torch source, whose blocks are
# consecutive already, is unchanged.


def _gather(graph, key_of) -> tuple:
    """(``graph`` with the glue interleaving its blocks moved out of them, {scope: block} for the glue left inside)
    (Note [glue that interleaves a block])."""
    nodes, owner = list(graph.nodes), {}
    for _ in range(len(nodes)):  # each pass moves glue outward, or inside a block: it ends well before this bound
        moved, at = False, 0
        runs = block_runs(graph.replace(nodes=nodes), lambda scope: owner.get(scope) or key_of(scope), join=False)
        for i in range(len(runs) - 2):
            (key, first), (glue_key, glue), (last_key, last) = runs[i:i + 3]
            if key and not glue_key and last_key == key:
                earlier = [n for k, run in runs[:i + 1] if k == key for n in run]  # what any stretch of it made
                before, inside, after = _split_glue(earlier, glue, last)
                if before or after or any(n.scope and n.scope not in owner for n in inside):
                    nodes[at:at + len(first) + len(glue) + len(last)] = before + first + inside + last + after
                    owner.update({n.scope: key for n in inside})
                    moved = True
                    break
            at += len(runs[i][1])
        if not moved:
            break
    return (graph if nodes == list(graph.nodes) else graph.replace(nodes=nodes)), owner


def _split_glue(earlier, glue, last) -> tuple:
    """(before, inside, after): the ``glue`` nodes between two stretches of a block that read nothing the block made
    (``earlier``: its nodes so far), those its stretch ``last`` reads on, and those it does not (Note [glue that
    interleaves a block])."""
    made = {v for n in earlier for v in n.outputs}
    reads = set()
    for node in glue:
        if any(v in made for v in node.inputs):
            reads.add(node)
            made.update(node.outputs)
    needed = {v for n in last for v in n.inputs}
    used = set()
    for node in reversed(glue):
        if any(v in needed for v in node.outputs):
            used.add(node)
            needed.update(node.inputs)
    return ([n for n in glue if n not in reads], [n for n in glue if n in reads and n in used],
            [n for n in glue if n in reads and n not in used])


def record_blocks(graph):
    """Record the numbered blocks and their structures in ``graph.meta["blocks"]`` (Note [repeated blocks]); nodes
    unchanged but for glue moved out of a block's stretch (Note [glue that interleaves a block]). Sibling submodules
    of one class are blocks too where their names number none (Note [sibling blocks] in blocks_siblings.py).

    Example: ``record_blocks(graph).meta["blocks"][0]["key"]`` -> ``"layer1.0"``.
    """
    nested = _nested_keys(graph)
    graph, suffixed, suffix_parts = suffix_blocks(graph, lambda scope: nested.get(scope) or block_of(scope))
    first = {}

    def key_of(scope):
        return nested.get(scope) or block_of(scope) or suffixed.get(scope, "") or first.get(scope, "")

    found_first, first_parts = first_blocks(graph, key_of, _numbered_parts)  # Note [an unnumbered first block]
    first.update(found_first)
    suffix_parts = {**suffix_parts, **first_parts}

    siblings = sibling_keys(graph, key_of)
    if siblings:
        ours = set(siblings.values())
        found_graph, found = _found(graph, lambda scope: siblings.get(scope) or key_of(scope), suffix_parts, ours)
        found = sibling_blocks(found_graph, found, siblings)
        if any(block.get("sibling") for block in found):  # else the graph as the names alone find it
            kept = {block["key"] for block in found}
            found_graph, found = _found(graph, lambda scope: (siblings.get(scope) if siblings.get(scope) in kept
                                                              else "") or key_of(scope), suffix_parts, ours)
            found = sibling_blocks(found_graph, found, siblings)
            names = sibling_names(found_graph, found)  # Note [parts named alike] in blocks_siblings.py
            return found_graph.replace(meta={**found_graph.meta, "blocks": found, **({"part_names": names} if names
                                                                                      else {})})
    graph, found = _found(graph, key_of, suffix_parts)
    found = [{k: v for k, v in block.items() if k != "structure"} for block in found]
    if not found:  # Note [blocks cut from the graph] in blocks_cut.py
        found = cut_blocks(graph, block_structure)
        return graph.replace(meta={**graph.meta, "blocks": found, "block_names": block_names(graph, found)})
    return graph.replace(meta={**graph.meta, "blocks": found})


def _found(graph, key_of, suffix_parts, own_parts=frozenset()) -> tuple:
    """(``graph`` gathered, its blocks under ``key_of`` with each one's ``structure``): ``record_blocks``'s blocks
    before the sibling blocks are checked (Note [sibling blocks] in blocks_siblings.py). ``suffix_parts``: the parts
    of blocks named by a suffix (Note [blocks named by a suffix]); ``own_parts``: keys whose parts come later."""
    graph, owner = _gather(graph, key_of)
    runs, start, found = block_runs(graph, lambda scope: owner.get(scope) or key_of(scope)), 0, []
    kinds, longest = {}, {}
    for i, (key, nodes) in enumerate(runs):
        if len(nodes) > len(runs[longest.get(key, i)][1]):
            longest[key] = i
        longest.setdefault(key, i)
    for i, (key, nodes) in enumerate(runs):
        own = list(nodes)
        while own and not own[-1].scope:  # top-level code after the block (``x.mean()`` in forward) is glue
            own.pop()
        if key and own and longest[key] == i and _has_parts(key, own):  # Note [a block's own nodes]
            structure = block_structure(graph, own)
            kind = kinds.setdefault(structure, len(kinds))
            parts = suffix_parts.get(key) or ({} if key in own_parts else block_parts(key))
            found.append({"key": key, "start": start, "stop": start + len(own), "kind": kind, **parts,
                          "structure": structure})
        start += len(nodes)
    return graph, found


def refresh_blocks(graph):
    """``graph`` with its blocks recorded again where they were recorded: for a change after ``record_blocks`` that
    added, dropped or moved nodes (Note [blocks after free dims] in passes/free_dims.py)."""
    return record_blocks(graph) if "blocks" in graph.meta else graph
