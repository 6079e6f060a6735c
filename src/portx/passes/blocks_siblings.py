"""Repeated blocks whose names number none: sibling submodules of one source class, found from
``graph.meta["module_classes"]`` (Note [sibling blocks]).

Note [sibling blocks]: a source can repeat a module under names that carry no block number: the zoo's ConvNeXt
holds ``self.stage1, self.stage2 = ConvNeXtBlock(16), ConvNeXtBlock(32)``, its UNet five ``nn.Sequential`` double
convs ``enc1``, ``enc2``, ``mid``, ``dec1``, ``dec2``, and keras-hub's MiT its ``HierarchicalTransformerEncoder``
layers ``hierarchical_encoder_0_0``, ``hierarchical_encoder_0_1``, sublayers of one backbone. Note [repeated blocks]
(passes/blocks.py) reads a block's number from its name, so these were written flat. Here the *siblings* are the
modules with one parent path (``""`` at the top) and one source class (``module_classes``, recorded by the torch and
Keras frontends); each that holds parts (Note [a block has parts]: a lone ``Conv2d`` or ``Dense`` is a layer, never
a block) and whose scopes no name-based finder took is a candidate block, keyed by its own path. ``record_blocks``
then gathers and cuts them as it does named blocks (their stretch of consecutive nodes, Note [glue that interleaves
a block]) and ``sibling_blocks`` keeps those with at least one other sibling of their class whose op subgraph is the
same up to sizes and parameters (``block_structure``) and whose parts are named alike (Note [parts named alike]);
so a generic container (``nn.Sequential``, ``nn.ModuleList``, Keras ``Sequential``), which says nothing of what it
holds, groups only with one holding the same classes at the same paths.
A block alone of its kind is dropped, so a model where nothing repeats keeps the blocks (and node order) it had.

Note [parts named alike]: sibling blocks of one kind also hold the same parts at the same paths relative to them
(``stage1.dwconv`` and ``stage2.dwconv``; ``enc1.0`` and ``enc2.0``). A torch class names its parts alike in every
instance; a Keras layer's sublayers take model-wide names (keras-hub MiT's ``hierarchical_encoder_0_0`` holds
``seg_former_multihead_attention.dense_18``, ``hierarchical_encoder_0_1`` holds ``..._1.dense_22``), so their
statements differ by those names. The parts are therefore compared with each name Keras numbered itself (a sublayer
of no recorded class, or one whose name is its class's and a number: ``dense_22``) numbered in order among the names
of its stem under the same parent in the block, as the layers of a block cut from the graph are (Note [auto names in
cut blocks] in blocks_cut.py); per parent, so that MiT-B0's spatial-reduction layer norm inside the attention of the
first stage's blocks leaves the blocks' own second layer norm ``layer_normalization_1`` in every stage:
``hierarchical_encoder_0_1.seg_former_multihead_attention_1.dense_22`` is ``hierarchical_encoder_0_1.
seg_former_multihead_attention.dense`` in its block, as ``..._0_0.seg_former_multihead_attention.dense_18`` is in its
own. ``sibling_names`` records those names in ``meta["part_names"]``, so the torch-xla block class holds its parts at
the same paths in every block (``hierarchical_encoder_0_1.seg_former_multihead_attention.dense.weight``: the keys of
InceptionV3's cut blocks move the same way), and keras-jax, which cuts a block's layer names after its prefix and
numbers them in the block's order (Note [names in longer blocks] in targets/keras_jax/style.py), writes one function.
A part a person named (a torch module's ``fc_1``, whose class is ``Linear``) keeps its name, and siblings whose parts
differ by such names stay flat.

A sibling block's ``parent`` is its parent path, its ``index`` its place among its parent's sibling blocks (so that
the torch emitter's checks that a container's blocks are numbered hold), its ``stem`` its own name (no loop: the
names carry no number to count), ``sibling`` is true, and ``family`` names the kind of a generic container after the
class of its first part (Note [names of generic blocks]), as does a block named by a prefix whose parts are all
numbers (``enc1_0``, ``enc1_1``), which is also ``sequential`` (Note [blocks of numbered parts] in
targets/torch_xla/sequential_class.py). torch-xla holds each such block as an attribute at its own
path (``self.stage1 = ConvNeXtBlock(16)``; Note [blocks held one by one] in targets/torch_xla/containers.py), so the
source's ``state_dict`` keys stay; keras-jax writes one function called per block with the layer names the flat code
gives (``f"{name}_dwconv"``).

Note [names of generic blocks]: an ``nn.Sequential`` built by a helper (the UNet's ``_double_conv``) has no class
name of its own to give its block's class or function: ``Sequential`` would shadow torch's. Its kind is named after
its first part's class, less a trailing dimension, and ``Block``: ``Conv2d`` -> ``ConvBlock`` (torch-xla),
``conv_block`` (keras-jax); a person names it more precisely (``DoubleConv``), which portx cannot know.

Example (meta only; nodes unchanged)::

    %a = conv(%x) scope=stage1.dwconv ... %b = add(%x, %m) scope=stage1     meta["blocks"] = [
    %c = conv(%d) scope=stage2.dwconv ... %e = add(%d, %n) scope=stage2  ->   {"key": "stage1", "parent": "", ...},
                                                                            {"key": "stage2", "parent": "", ...}]
"""
from __future__ import annotations

import re

from .blocks_cut import AUTO_NAME
from .blocks_prefix import prefix_keys
from .blocks_suffix import keras_snake

__all__ = ["GENERIC", "sibling_keys", "sibling_blocks", "sibling_names"]

#: source classes that say nothing of what they hold (Note [sibling blocks])
GENERIC = frozenset({"Sequential", "ModuleList", "ModuleDict", "Module", "Functional"})


def _parent(path) -> str:
    return path.rpartition(".")[0]


def _groups(classes) -> dict:
    """{(parent path, class): [paths]} of the submodules with at least one sibling of their class."""
    groups = {}
    for path, cls in classes.items():
        if path and cls:
            groups.setdefault((_parent(path), cls), []).append(path)
    return {k: paths for k, paths in groups.items() if len(paths) > 1}


def sibling_keys(graph, named) -> dict:
    """{scope: its candidate sibling block} for the scopes that no name-based finder takes (``named(scope)`` is "",
    or a single layer: the numbered children of the UNet's ``nn.Sequential``, ``enc1.0``) and that sit in a
    submodule with a sibling of its class (Note [sibling blocks]); the outermost such submodule."""
    classes = graph.meta.get("module_classes") or {}
    paths = {p for paths in _groups(classes).values() for p in paths}
    scopes = {node.scope for node in graph.nodes if node.scope}
    blocks = {named(scope) for scope in scopes if named(scope) and named(scope) != scope}  # Note [a block has parts]
    found = {}
    for scope in scopes:
        if named(scope) in blocks:
            continue
        parts = scope.split(".")
        key = next((".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in paths), None)
        if key is not None:
            found[scope] = key
    leaves = {key for key in found.values() if not any(s.startswith(key + ".") for s in scopes)}  # no block alone
    left = [scope for scope in scopes if (scope not in found or found[scope] in leaves) and not named(scope)]
    # Note [a block has parts]: one layer is glue; keyed as a block it would stay inside the stretch of a block it
    # interleaves (Note [glue that interleaves a block]: the round-trip UNet's decoder blocks)
    found = {scope: key for scope, key in found.items() if key not in leaves}
    return {**found, **prefix_keys(left)}  # Note [blocks named by a prefix] in blocks_prefix.py


def _children(classes, key) -> tuple:
    """The parts under ``key``: (path relative to it, class), in the order the source made them."""
    return tuple((p[len(key):], c) for p, c in classes.items() if p.startswith(key + "."))


def _family(classes, key, sep=".") -> str:
    """A generic container's kind named after its first part (Note [names of generic blocks]): ``conv_block``;
    ``sep``: "_" for a block named by a prefix (its parts ``enc1_0``, ``enc1_1``)."""
    first = next((c for p, c in classes.items() if p.startswith(key + sep) and c not in GENERIC), "")
    stem = re.sub(r"_?[123]d$", "", keras_snake(first))
    return f"{stem}_block" if stem.isascii() and stem.isidentifier() else "block"


def sibling_blocks(graph, blocks, keys) -> list:
    """``blocks`` (passes/blocks.py's entries) with the sibling blocks (their keys among ``keys``'s values) kept only
    where another of their parent and class has their structure, the kept ones given their parts (Note [sibling
    blocks]); ``[b["structure"]]``: each block's ``block_structure``, dropped here."""
    classes = graph.meta.get("module_classes") or {}
    ours = set(keys.values())
    counts = {}
    for block in blocks:
        if block["key"] in ours:
            counts.setdefault(_alike(graph, classes, block), []).append(block["key"])
    groups = [alike for alike in counts.values() if len(alike) > 1]
    start = {b["key"]: b["start"] for b in blocks}
    named = {b["key"] for b in blocks if b["key"] not in ours}
    kept = {key for alike in groups if not _split(alike, start, named) for key in alike}
    found, places = [], {}
    for block in blocks:
        block = {k: v for k, v in block.items() if k != "structure"}
        if block["key"] not in ours:
            found.append(block)
        elif block["key"] in kept:
            parent = _parent(block["key"])
            index = places.setdefault(parent, 0)
            places[parent] += 1
            cls = classes.get(block["key"], "")
            numbered = not cls and _numbered(graph, block)  # Note [blocks of numbered parts] (torch_xla)
            family = {"family": _family(classes, block["key"], "_" if numbered else ".")} \
                if cls in GENERIC or numbered else {}
            found.append({**block, "parent": parent, "index": index, "stem": block["key"].replace(".", "_"),
                          "sibling": True, **family, **({"sequential": True} if numbered else {})})
    return found


def _numbered(graph, block) -> bool:
    """Whether every part of a block named by a prefix is a number (``enc1_0``, ``enc1_1``: portx's own Keras code for
    a torch source's ``nn.Sequential``; Note [blocks of numbered parts] in targets/torch_xla/sequential_class.py)."""
    key = block["key"]
    rests = {n.scope[len(key) + 1:] for n in graph.nodes[block["start"]:block["stop"]] if n.scope.startswith(key + "_")}
    return bool(rests) and all(rest.isdigit() for rest in rests)


def _split(alike, start, named) -> bool:
    """Whether a block the names found (``named``) lies between the first and the last of ``alike``: siblings around
    a model's body of other blocks (a stem and a head that happen to match) play different roles, and a person writes
    them apart. Sibling blocks of another kind between them do not split them: keras-hub's MiT embeds its patches
    before each stage of encoder layers, ``patch_and_embed_1`` between ``hierarchical_encoder_0_1`` and ``_1_0``."""
    low, high = min(start[k] for k in alike), max(start[k] for k in alike)
    return any(low < start[key] < high for key in named)


def _alike(graph, classes, block) -> tuple:
    """What sibling blocks of one kind share: parent, class, op subgraph, and their parts' paths and classes (Note
    [parts named alike]: the Keras frontend records no sublayer's class, so the paths are read from the nodes)."""
    key = block["key"]
    names = _within(graph, classes, block)
    paths = dict.fromkeys(names.get(n.scope, n.scope)[len(key):] for n in graph.nodes[block["start"]:block["stop"]]
                          if n.scope.startswith((key + ".", key + "_")))  # Note [blocks named by a prefix]
    return _parent(key), classes.get(key, ""), block["structure"], _children(classes, key), tuple(paths)


def _within(graph, classes, block) -> dict:
    """{scope: the scope with its names Keras numbered itself numbered in order among their stem's under the same
    parent} for the scopes of ``block`` where that differs (Note [parts named alike])."""
    key, numbers, scopes = block["key"], {}, {}
    for node in graph.nodes[block["start"]:block["stop"]]:
        if node.scope.startswith(key + ".") and node.scope not in scopes:
            parts = node.scope[len(key) + 1:].split(".")
            scopes[node.scope] = [_counted(".".join([key] + parts[:i + 1]), classes) for i in range(len(parts))]
            for i, name in enumerate(scopes[node.scope]):
                if name is not None:
                    numbers.setdefault((tuple(parts[:i]), name[0]), set()).add(name[1])
    rank = {(parent, stem, n): i for (parent, stem), found in numbers.items() for i, n in enumerate(sorted(found))}
    found = {}
    for scope, names in scopes.items():
        parts = scope[len(key) + 1:].split(".")
        ranks = [None if n is None else rank[(tuple(parts[:i]), *n)] for i, n in enumerate(names)]
        renamed = [p if n is None else f"{n[0]}_{r}" if r else n[0] for p, n, r in zip(parts, names, ranks)]
        if renamed != parts:
            found[scope] = ".".join([key] + renamed)
    return found


def _counted(path, classes) -> tuple | None:
    """(stem, number) where the last name of ``path`` is one Keras numbered itself: of no recorded class, or its
    class's snake-case name and a number (``dense_22`` -> ``("dense", 22)``); else None."""
    found, cls = AUTO_NAME.match(path.rpartition(".")[2]), classes.get(path)
    if not found or (cls and found["stem"] != keras_snake(cls)):
        return None
    return found["stem"], int(found["number"] or 0)


def sibling_names(graph, blocks) -> dict:
    """{scope: its name in its block} for the parts of sibling blocks that Keras numbered model-wide (Note [parts
    named alike]), for ``graph.meta["part_names"]``."""
    classes = graph.meta.get("module_classes") or {}
    return {scope: name for block in blocks if block.get("sibling")
            for scope, name in _within(graph, classes, block).items()}
