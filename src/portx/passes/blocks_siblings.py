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
statements differ by those names, the emitters could write no block once, and the blocks would only change how the
flat code cuts its names (Note [names in longer blocks] in targets/keras_jax/style.py): such siblings stay flat.

A sibling block's ``parent`` is its parent path, its ``index`` its place among its parent's sibling blocks (so that
the torch emitter's checks that a container's blocks are numbered hold), its ``stem`` its own name (no loop: the
names carry no number to count), ``sibling`` is true, and ``family`` names the kind of a generic container after the
class of its first part (Note [names of generic blocks]). torch-xla holds each such block as an attribute at its own
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

from .blocks_suffix import keras_snake

__all__ = ["GENERIC", "sibling_keys", "sibling_blocks"]

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
    if not paths:
        return {}
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
    return found


def _children(classes, key) -> tuple:
    """The parts under ``key``: (path relative to it, class), in the order the source made them."""
    return tuple((p[len(key):], c) for p, c in classes.items() if p.startswith(key + "."))


def _family(classes, key) -> str:
    """A generic container's kind named after its first part (Note [names of generic blocks]): ``conv_block``."""
    first = next((c for p, c in classes.items() if p.startswith(key + ".") and c not in GENERIC), "")
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
    start = {b["key"]: b["start"] for b in blocks if b["key"] not in ours or any(b["key"] in g for g in groups)}
    kept = {key for alike in groups if not _split(alike, start) for key in alike}
    found, places = [], {}
    for block in blocks:
        block = {k: v for k, v in block.items() if k != "structure"}
        if block["key"] not in ours:
            found.append(block)
        elif block["key"] in kept:
            parent = _parent(block["key"])
            index = places.setdefault(parent, 0)
            places[parent] += 1
            cls = classes[block["key"]]
            family = {"family": _family(classes, block["key"])} if cls in GENERIC else {}
            found.append({**block, "parent": parent, "index": index, "stem": block["key"].replace(".", "_"),
                          "sibling": True, **family})
    return found


def _split(alike, start) -> bool:
    """Whether another block lies between the first and the last of ``alike``: siblings around a model's body of
    other blocks (a stem and a head that happen to match) play different roles, and a person writes them apart."""
    low, high = min(start[k] for k in alike), max(start[k] for k in alike)
    return any(low < at < high for key, at in start.items() if key not in alike)


def _alike(graph, classes, block) -> tuple:
    """What sibling blocks of one kind share: parent, class, op subgraph, and their parts' paths and classes (Note
    [parts named alike]: the Keras frontend records no sublayer's class, so the paths are read from the nodes)."""
    key = block["key"]
    paths = dict.fromkeys(n.scope[len(key):] for n in graph.nodes[block["start"]:block["stop"]]
                          if n.scope.startswith(key + "."))
    return _parent(key), classes.get(key, ""), block["structure"], _children(classes, key), tuple(paths)
