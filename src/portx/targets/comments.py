"""The comments and docstring sentences of an emitted model.py that name source modules portx folded or dropped.

Example:
    >>> comment_text("stem.1 (bn)\\n")
    'stem.1_bn'
"""
from __future__ import annotations

import re
import textwrap

from ..ops.norm import BATCH_NORM

__all__ = ["comment_text", "module_comment", "module_sentences", "source_blocks"]


def comment_text(raw: str) -> str:
    """A model file's name as it may appear in a comment or docstring: letters, digits, ``_`` and ``.``.

    Note [untrusted names] holds here too: nothing can end the comment or the docstring.
    Example: ``comment_text("stem.1 (bn)\\n")`` -> ``"stem.1_bn"``.
    """
    return re.sub(r"[^0-9A-Za-z_.]+", "_", str(raw)).strip("_")[:64] or "_"


#: how a folded IR op is named in a trailing comment (the docstring spells it out)
_FOLDED_KINDS = {"batch_norm": "BN"}


def module_comment(graph, node) -> str:
    """The trailing comment for ``node``'s line: the source modules a pass folded into it
    (``graph.meta["folded"]``) and those the frontend dropped right after it (``graph.meta["dropped"]``).

    Example: ``"features.1 (BN) folded in"``, ``"classifier.0 (Dropout) dropped after"``.
    """
    name = node.outputs[0].name
    rows = [f"{comment_text(r['scope'] or 'functional')} ({_FOLDED_KINDS.get(r['op'], r['op'])}) folded in"
            for r in graph.meta.get("folded", {}).get(name, ())]
    rows += [f"{comment_text(r['scope'] or 'functional')} ({comment_text(r['kind'])}) dropped after"
             for r in graph.meta.get("dropped", ()) if r["after"] == name]
    return "; ".join(rows)


def module_sentences(graph, width=100) -> list:
    """The docstring lines naming the batch norms folded into convolutions and the modules dropped at
    inference (Dropout, noise), from ``graph.meta``; [] when there are none."""
    folded = [comment_text(r["scope"] or "functional") for rows in graph.meta.get("folded", {}).values()
              for r in rows if r["op"] == BATCH_NORM.name]
    dropped = [f"{comment_text(r['scope'] or 'functional')} ({comment_text(r['kind'])})"
               for r in graph.meta.get("dropped", ())]
    text = []
    if folded:
        text.append("BatchNorm folded into the preceding convolutions: " + ", ".join(folded) + ".")
    if dropped:
        text.append("Dropped as identities at inference: " + ", ".join(dropped) + ".")
    return textwrap.wrap(" ".join(text), width) if text else []


def source_blocks(keys) -> str:
    """A block class's or function's docstring: the source blocks it is written for (``keys``, in source order), or
    where they are many the first and the last and their count (tests/support/structured_code.py reads it). Example:
    ``source_blocks([f"block_{i}" for i in range(1, 17)]) == "Source blocks block_1 to block_16 (16 blocks)."``"""
    listed = ", ".join(keys)
    return f"Source blocks {listed if len(listed) <= 70 else f'{keys[0]} to {keys[-1]} ({len(keys)} blocks)'}."
