"""The emitters' view of the unnumbered first blocks (Note [an unnumbered first block] in passes/blocks_first.py):
torch-xla holds them flat; keras-jax names the layers Keras named model-wide in them as their family does.

Note [Keras' names in a first block]: MobileNetV3's first block calls its activation and its squeeze-excite's hard
sigmoid through layers Keras names model-wide (``re_lu``, ``re_lu_1``), as its numbered blocks do (``re_lu_2``,
``re_lu_3``, ...); those of a numbered block are named after it by the first block of its kind (Note [layers Keras
names in blocks] in keras_jax/style.py): ``expanded_conv_1_re_lu_1`` after its depthwise conv, read as
``_activation_1`` (Note [the activation as an argument] in joinable.py). The first block has no expand conv, so
counted within itself its activation is the first (``expanded_conv_re_lu``, ``_activation``), and its statement
differed from the family's, which it then did not join. Such a layer (holding no weights) is instead named as the
family's first block with a layer at the same place names its own: the place is the last layer named after the
block before it (``_depthwise_bn``) and how many such layers come between, the layer the same operation; the name
the block's key, the layer's stem and its count among the layers of that stem in that block (``re_lu_3``, the
second ``re_lu`` of ``expanded_conv_1``: ``expanded_conv_re_lu_1``). A layer found at no such place keeps the name
it had. Weightless layers only: weight paths stay the source's.
"""
from __future__ import annotations

import re

__all__ = ["without_first", "first_glue_names"]

#: Keras' own numbering of a layer it names itself (``re_lu_1``)
_AUTO_NUMBER = re.compile(r"_\d+$")


def without_first(graph):
    """``graph`` without its unnumbered first blocks (Note [an unnumbered first block] in passes/blocks_first.py):
    torch-xla holds them flat, at the source's names."""
    blocks = graph.meta.get("blocks") or []
    if not any(block.get("first") for block in blocks):
        return graph
    return graph.replace(meta={**graph.meta, "blocks": [b for b in blocks if not b.get("first")]})


def first_glue_names(graph, scope, glue) -> dict:
    """{node: its layer's name} for ``glue``'s layers (Keras-named layers of blocks: {node: name}) that sit in an
    unnumbered first block, named as its family names them (Note [Keras' names in a first block])."""
    blocks = graph.meta.get("blocks") or []
    found = {}
    for block in (b for b in blocks if b.get("first")):
        family = [b for b in blocks if not b.get("first") and (b["parent"], b["stem"]) == (block["parent"],
                                                                                        block["stem"])]
        places = [_places(graph, scope, b, glue) for b in family]
        for node, place in _places(graph, scope, block, glue).items():
            name = next((name for member in places for other, (where, name) in member.items()
                         if where == place[0] and other.op is node.op), None)
            if name is not None:
                found[node] = block["key"] + name
    return found


def _places(graph, scope, block, glue) -> dict:
    """{node: ((the block's last own layer before it, how many glue layers between), its name after the block's
    key)} for the glue layers of ``block`` (Note [Keras' names in a first block])."""
    key, anchor, between, counts, found = block["key"], None, 0, {}, {}
    for node in graph.nodes[block["start"]:block["stop"]]:
        mine = scope.get(node) or ""
        if node in glue:
            stem = _AUTO_NUMBER.sub("", mine)
            count = counts[stem] = counts.get(stem, -1) + 1
            found[node] = ((anchor, between), f"_{stem}" + (f"_{count}" if count else ""))
            between += 1
        elif mine.startswith(key + "_") and mine[len(key):] != anchor:
            anchor, between = mine[len(key):], 0
    return found
