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
``1_bn``: Keras' MobileNet numbers its blocks ``conv_dw_1``, ``conv_dw_1_bn``) is a family of blocks, not one; nor
is a name counted from its bare first use (``max_pool2d``, ``max_pool2d_1``, ``max_pool2d_2``: the count by which
Keras and portx keep repeated layer names apart, Note [counted names]). The candidates are then sibling blocks of the
model (parent ``""``): kept only where another has the same op subgraph and the same names after the prefix, in the
same order (``_alike`` in blocks_siblings.py), each held at its own path by torch-xla (``self.stage1 =
ConvNeXtBlock(16)``: the names after the prefix are its submodules, ``stage1.dwconv.weight``, the torch source's keys
again; numbers after it are an ``nn.Sequential``'s items, ``enc1.0.weight``: Note [blocks of numbered parts] in
targets/torch_xla/sequential_class.py).

Example::

    prefix_keys(["stage1_dwconv", "stage1_norm", "stage2_dwconv", "stage2_norm", "head"])
    -> {"stage1_dwconv": "stage1", "stage1_norm": "stage1", "stage2_dwconv": "stage2", "stage2_norm": "stage2"}

Note [counted names]: a layer name used again is counted, ``max_pool2d``, ``max_pool2d_1``, ``max_pool2d_2`` (Keras'
own auto names and portx's names for a torch source's repeated ``F.max_pool2d``): two such counts end the same names
(``concatenate_1``, ``concatenate_2``: ``{1, 2}``), and were read as blocks of one layer each. Their nodes then sat
among the blocks' as the blocks' own, so the glue between a block's layers (the round-trip UNet's ``max_pool2d_2``
between ``dec2_0`` and ``dec2_1``) was no longer moved out of it (Note [glue that interleaves a block] in blocks.py)
and its decoder blocks stayed flat. A prefix that is itself a layer name and whose names are all numbers from 1 is
such a count; a torch container's numbered parts start at 0 (``enc1_0``) and its container makes no node of its own.
"""
from __future__ import annotations

__all__ = ["prefix_keys"]


def prefix_keys(scopes) -> dict:
    """{scope: its block's prefix} for the top-level ``scopes`` named by a prefix another block's names share (Note
    [blocks named by a prefix])."""
    ends, layers = {}, set(scopes)
    for scope in scopes:
        if "." in scope:
            continue
        for at in (i for i, c in enumerate(scope) if c == "_" and 0 < i < len(scope) - 1):
            ends.setdefault(scope[:at], set()).add(scope[at + 1:])
    sets = {}
    for prefix, names in ends.items():
        if len(names) > 1 and not _counted(prefix, names, layers) and \
                not any(f"{a}_".startswith(f"{b}_") for a in names for b in names if a != b):
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


def _counted(prefix, names, layers) -> bool:
    """Whether ``prefix`` and its ``names`` are a layer name counted from its bare first use (Note [counted names])."""
    return prefix in layers and all(n.isdigit() and not n.startswith("0") for n in names)
