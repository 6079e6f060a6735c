"""Repeated blocks read from flat layer names that share a prefix: portx's own Keras code for a torch source's sibling
blocks (Note [blocks named by a prefix]).

Note [blocks named by a prefix]: keras-jax writes a torch source's sibling blocks (the zoo ConvNeXt's ``stage1``,
``stage2``; its UNet's ``enc1`` ... ``dec2``: Note [sibling blocks] in blocks_siblings.py) as one function called
per block with ``name="stage1"``, whose layers are named ``f"{name}_dwconv"``: layers of one flat functional model,
``stage1_dwconv``, ``stage1_norm``, ``stage2_dwconv``, ... with no parent to group them by and no number a block
could be read from, so the round trip back to torch-xla wrote them flat. Here the top-level names no other finder
takes are cut at each ``_``; a prefix is a candidate block where another prefix ends exactly the same set of names
(two names at least: a block has parts), ``stage1`` and ``stage2`` both ``{dwconv, norm, pwconv1, pwconv2}``; each
name goes to its shortest such prefix. A prefix one of whose names goes on past another (``conv_dw`` ending ``1`` and
``1_bn``: Keras' MobileNet numbers its blocks ``conv_dw_1``, ``conv_dw_1_bn``) is a family of blocks, not one. The candidates are then sibling blocks of the model (parent ``""``): kept
only where another has the same op subgraph and the same names after the prefix, in the same order (``_alike`` in
blocks_siblings.py), each held at its own path by torch-xla (``self.stage1 = ConvNeXtBlock(16)``: the names after
the prefix are its submodules, ``stage1.dwconv.weight``, the torch source's keys again).

Example::

    prefix_keys(["stage1_dwconv", "stage1_norm", "stage2_dwconv", "stage2_norm", "head"])
    -> {"stage1_dwconv": "stage1", "stage1_norm": "stage1", "stage2_dwconv": "stage2", "stage2_norm": "stage2"}
"""
from __future__ import annotations

__all__ = ["prefix_keys"]


def prefix_keys(scopes) -> dict:
    """{scope: its block's prefix} for the top-level ``scopes`` named by a prefix another block's names share (Note
    [blocks named by a prefix])."""
    ends = {}
    for scope in scopes:
        if "." in scope:
            continue
        for at in (i for i, c in enumerate(scope) if c == "_" and 0 < i < len(scope) - 1):
            ends.setdefault(scope[:at], set()).add(scope[at + 1:])
    sets = {}
    for prefix, names in ends.items():
        if len(names) > 1 and not any(f"{a}_".startswith(f"{b}_") for a in names for b in names if a != b):
            sets.setdefault(frozenset(names), []).append(prefix)
    found = {}
    for prefixes in sets.values():
        if len(prefixes) < 2:
            continue
        for prefix in prefixes:
            for name in ends[prefix]:
                scope = f"{prefix}_{name}"
                if scope not in found or len(prefix) < len(found[scope]):
                    found[scope] = prefix
    keys = set(found.values())
    found.update({scope: scope for scope in scopes if scope in keys})  # a layer named as its block (its last add)
    return found
