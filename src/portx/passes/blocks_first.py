"""The unnumbered first block of a family of numbered Keras blocks (Note [an unnumbered first block]).

Note [an unnumbered first block]: keras.applications' MobileNetV2 and MobileNetV3 build their first block with the
same ``_inverted_res_block(..., block_id=0)`` as the rest but name its layers without a number:
``expanded_conv_depthwise``, ``expanded_conv_project_BN`` (then ``block_1_expand``, ... in MobileNetV2;
``expanded_conv_1_expand``, ... in MobileNetV3). Read by its numbered names alone that block was glue, written flat
before the function that writes the others. Here a top-level prefix no block takes (``expanded_conv``) is the first
block of the family of numbered blocks that follows it when every name it starts is the prefix and a name after a
numbered block's (``depthwise``, ``project_BN``: a subset, as block 0 has no expand conv), two names at least (a block
has parts), and its nodes are the last named ones before the family's first block, with no node of another name
among them but layers holding no weights that Keras names model-wide (MobileNetV3's ``re_lu``, ``re_lu_1``: named
as the family names them, Note [Keras' names in a first block] in targets/first_blocks.py). It joins the family (its
container and stem, number 0), so the emitters write it through the same function where its statements join
theirs by optional parts (Note [optional parts] in targets/optional_parts.py; MobileNetV3's, which lacks the
expand conv and pads, Note [a part beside a choice] in targets/part_beside_choice.py); else it stays a kind of its
own, flat. Its layers keep their names (``name="expanded_conv"``), so its weight paths are the source's.

torch-xla holds it flat (``first`` blocks are dropped there, ``without_first`` in targets/first_blocks.py): a
state_dict key is the path of attribute names from the model to the module, so an instance of the family's class
adds one name (``expanded_conv.depthwise.weight``, or with the class registering its submodules under names given
per instance, Note [submodules named after their block] in targets/torch_xla/numbered.py,
``expanded_conv.expanded_conv_depthwise.weight``), and the source's key is ``expanded_conv_depthwise.weight``.
Keeping it would need the instance held outside the model's modules and its submodules registered on the model
twice over, which ``named_modules``, ``apply`` and hooks would not see as one module.
"""
from __future__ import annotations

__all__ = ["first_blocks"]


def first_blocks(graph, key_of, named) -> dict:
    """{scope: its first block's key} and {key: its parts} for the unnumbered first blocks of ``graph`` (Note [an
    unnumbered first block]); ``key_of(scope)``: the blocks found so far; ``named(key)``: a top-level numbered key's
    parts (``block_parts``), or None."""
    nodes = list(graph.nodes)
    keys = [key_of(node.scope) if node.scope else "" for node in nodes]
    families = {}  # stem -> (parts, suffixes, first node index)
    for i, (node, key) in enumerate(zip(nodes, keys)):
        parts = named(key) if key and "." not in key else None
        if parts is None or not node.scope.startswith(key + "_"):
            continue
        family = families.setdefault(parts["stem"], (parts, set(), i))
        family[1].add(node.scope[len(key) + 1:])
    scopes, found, parts_of = {}, {}, {}
    for i, (node, key) in enumerate(zip(nodes, keys)):
        if node.scope and not key and "." not in node.scope:
            scopes.setdefault(node.scope, []).append(i)
    for stem, (parts, suffixes, first) in families.items():
        names = {}
        for scope in scopes:
            prefix = next((scope[:at] for at, c in enumerate(scope) if c == "_" and scope[at + 1:] in suffixes), None)
            if prefix:
                names.setdefault(prefix, []).append(scope)
        for prefix, mine in names.items():
            every = [s for s in scopes if s == prefix or s.startswith(prefix + "_")]
            at = min(i for s in every for i in scopes[s])
            last = max(i for s in every for i in scopes[s])
            others = [n for i, n in enumerate(nodes[at:first], at) if n.scope and n.scope not in every
                      and not (i < last and _weightless(graph, n))]  # Keras' model-wide names inside it
            if len(mine) > 1 and len(every) == len(mine) and not others and prefix not in parts_of:
                found.update({s: prefix for s in mine})
                parts_of[prefix] = {"parent": parts["parent"], "index": 0, "stem": parts["stem"], "first": True}
    return found, parts_of


def _weightless(graph, node) -> bool:
    """True when ``node`` reads no weight of the source (``re_lu``; ``add``, which reads the constant 3.0)."""
    return not any(graph.is_param(v) and graph.is_trainable(v.name) for v in node.inputs)
