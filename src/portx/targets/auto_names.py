"""Layer names Keras numbered model-wide inside blocks cut from the graph, written from the block's first number.

Note [numbered names in block functions]: the layers of a block cut from the graph keep the names Keras gave them
(``conv2d_43``, ``batch_normalization_43``: passes/blocks_cut.py, Note [auto names in cut blocks]), so every weight
path stays the source's. The same layer of the next block of its kind is ``conv2d_53``: the name differs by the
block's first number of that stem (``conv2d_40`` and ``conv2d_50``) and not by its place in the block (3). A block
function therefore takes that first number and writes ``name=f"conv2d_{n + 3}"``; stems whose first numbers agree in
every block (InceptionV3 makes a conv, its batch norm and its activation together) share one argument, as other
numbers do (``number_params`` in structure.py). A name Keras left unnumbered (the model's first ``conv2d``, number 0)
cannot be written so (``conv2d_0`` is another name): a block with one stays flat.

Example:
    >>> numbered_name("conv2d", 3, "n")
    'f"conv2d_{n + 3}"'
"""
from __future__ import annotations

import re

__all__ = ["auto_names", "block_path", "cut_family", "local_name", "local_scopes", "number_names", "numbered_locals", "numbered_name"]

_NUMBERED = re.compile(r"^(?P<stem>.+?)(?:_(?P<number>\d+))?$")
_ENDS_NUMBERED = re.compile(r"^(.+)_(\d+)$")


def auto_names(graph) -> dict:
    """{layer name: (stem, number)} for the layers Keras numbered in blocks cut from the graph
    (``graph.meta["block_names"]``). Example: ``{"conv2d_43": ("conv2d", 43), ...}``."""
    found = {}
    for scope in graph.meta.get("block_names") or {}:
        match = _NUMBERED.match(scope)
        if match and match["number"]:
            found[scope] = (match["stem"], int(match["number"]))
    return found


def number_names(inst) -> None:
    """Rewrite ``inst.rows``' numbered names (``("k", (stem, number))``) to their place after the block's first of
    that stem, and append those firsts to ``inst.numbers``, one column per stem in name order."""
    firsts = {}
    for parts, _ in inst.rows:
        for kind, value in parts:
            if kind == "k":
                firsts[value[0]] = min(firsts.get(value[0], value[1]), value[1])
    inst.stems = sorted(firsts)
    inst.rows = [([(kind, (value[0], value[1] - firsts[value[0]])) if kind == "k" else (kind, value)
                   for kind, value in parts], comment) for parts, comment in inst.rows]
    inst.numbers += [str(firsts[stem]) for stem in inst.stems]


def numbered_name(stem, offset, first) -> str:
    """The f-string naming a layer ``offset`` after the block's first ``stem`` (``first``: that number's expression)."""
    return f'f"{stem}_{{{first}{f" + {offset}" if offset else ""}}}"'


# Note [names of cut blocks' kinds]: a block cut from the graph is named after its exit layer (``mixed4``, a
# ``Concatenate``), whose class is not the block's, and the kinds of one source share the names' stem (``mixed``).
# Each kind takes that stem and a letter in the order the kinds first occur (``mixed_a`` for mixed0 to mixed2,
# ``mixed_c`` for mixed4 to mixed7; classes ``MixedA`` ... ``MixedE``), as torchvision names InceptionV3's blocks
# (``InceptionA`` ... ``InceptionE``); the letters are the same on both targets.


def cut_family(keys, graph) -> str:
    """The name of the kind of cut blocks ``keys`` (Note [names of cut blocks' kinds]), or "" where they are not
    cut from the graph. Example: ``cut_family(["mixed4", "mixed5"], graph)`` -> ``"mixed_c"``."""
    cut = {path.rpartition(".")[0] for path in (graph.meta.get("block_names") or {}).values()}
    if not keys or not set(keys) <= cut:
        return ""
    blocks = {b["key"]: b for b in graph.meta.get("blocks") or []}
    kinds = sorted({b["kind"] for b in blocks.values() if b["key"] in cut})
    block = blocks[keys[0]]
    place = kinds.index(block["kind"])
    letter = chr(ord("a") + place) if place < 26 else str(place)
    return f"{re.sub(r'[^0-9A-Za-z]+', '_', block['parent']).strip('_').lower() or 'block'}_{letter}"


def block_path(name, graph) -> str:
    """A stored weight's path with its layer's name within its block (``graph.meta["part_names"]``, Note [parts named
    alike] in passes/blocks_siblings.py): ``enc_0_1.ffn_1.dense_11.weight`` -> ``enc_0_1.ffn.dense_5.weight``."""
    names, head = graph.meta.get("part_names") or {}, name
    while head and head not in names:
        head = head.rpartition(".")[0]
    return names[head] + name[len(head):] if head else name


def local_name(name, graph) -> str:
    """A block function's variable for ``name`` (a layer Keras numbered): its name within its block
    (``conv2d_43`` -> ``conv2d_3``, Note [auto names in cut blocks] in passes/blocks_cut.py), else ``name``."""
    path = (graph.meta.get("block_names") or {}).get(name)
    return path.rpartition(".")[2] if path else name


def local_scopes(graph) -> dict:
    """{IR scope: its layer's own name} for the layers of a nested model built in that model's scope (a
    ``Sequential`` used as a layer: ``convnext_tiny_stem.convnext_tiny_stem_conv`` -> ``convnext_tiny_stem_conv``),
    which the emitted code names so inside the same scopes (Note [nested models' scopes] in keras_jax/scopes.py)."""
    found = {}
    for scope, path in (graph.meta.get("name_scopes") or {}).items():
        head = path.replace("/", ".") + "."
        if scope.startswith(head) and "." not in scope[len(head):]:
            found[scope] = scope[len(head):]
    return found


def numbered_locals(graph) -> dict:
    """{layer name: (stem, number)} for the layers of a nested model named after that model's number as well
    (``convnext_tiny_downsampling_block_0`` holds ``convnext_tiny_downsampling_layernorm_0``): a block function
    writes them from the block's number (Note [nested models' scopes] in keras_jax/scopes.py)."""
    found = {}
    for scope, name in local_scopes(graph).items():
        own, model = _ENDS_NUMBERED.match(name), _ENDS_NUMBERED.match(scope[: -len(name) - 1])
        if own and model and own[2] == model[2]:
            found[name] = (own[1], int(own[2]))
    return found
