"""A block class that is an ``nn.Sequential``, for blocks the source built as one (Note [blocks of numbered parts]).

Note [blocks of numbered parts]: the zoo's UNet builds each double conv as ``nn.Sequential(nn.Conv2d(...),
nn.BatchNorm2d(...), nn.ReLU(), ...)``, so its state_dict keys are ``enc1.0.weight``: the parts are numbered, and an
``nn.Module`` class cannot hold an attribute named ``0`` (Note [nested paths] in nesting.py keeps such a part at its
flat name, ``self._0``, whose key ``enc1._0.weight`` is not the source's). A block class whose source class is
``nn.Sequential`` and whose every part sits at a number of it is therefore written as a person would subclass it::

    class ConvBlock(nn.Sequential):
        def __init__(self, in_channels, out_channels):
            super().__init__(
                nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.Identity(),  # 2 holds no weights
                nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),
            )

        def forward(self, x):
            v_0 = self[0](x)
            ...

its parts built in the ``super().__init__`` call (a number with no weights, a ReLU the code calls as ``F.relu``, an
``nn.Identity()`` as on ``Model``), and ``forward`` kept as the flat code computes (it need not be the plain chain
``nn.Sequential.forward`` runs). Anything else the class would hold (a buffer, a parameter, a named part) leaves it
an ``nn.Module``, as before.

The round trip (torch -> keras-jax -> torch-xla) reads portx's own Keras code, whose double convs are layers of one
functional model named ``enc1_0``, ``enc1_1``, ... (Note [blocks named by a prefix] in passes/blocks_prefix.py): no
class is recorded for ``enc1``, and its parts sat at ``enc1._0``. A block named by a prefix whose every part is a
number after it (``sequential`` in its ``meta["blocks"]`` entry, passes/blocks_siblings.py) is read as the
``nn.Sequential`` its names tell of: ``enc1_0`` at its number ``0``, so the class is written as above and the keys are
the torch source's again, ``enc1.0.weight``.
"""
from __future__ import annotations

import re

__all__ = ["as_sequential", "numbered_blocks"]

_DEFINE = re.compile(r"^self\.(\w+) = (.*)$")
_SUPER = "super().__init__()"


def as_sequential(head, rows, forward, paths) -> tuple | None:
    """(head, rows, forward, moved) of the class written as an ``nn.Sequential`` (Note [blocks of numbered parts]),
    or None where it cannot be. ``head``: the class's rows up to its own attributes (``class``, docstring, ``def
    __init__``, ``super().__init__()``, the arguments ``forward`` reads); ``rows``: the statements that build its
    parts; ``forward``: ``forward``'s rows; ``paths``: {attribute: path relative to the block}."""
    items, indent = {}, None
    for row_indent, text, comment in rows:
        made = _DEFINE.match(text)
        if not made or not paths.get(made.group(1), "").isdigit() or made.group(2).startswith("nn.Parameter("):
            return None
        items[int(paths[made.group(1)])] = (made.group(2), comment)
        indent = row_indent
    at = next((i for i, (_, text, _) in enumerate(head) if text == _SUPER), None)
    if not items or at is None or not head[0][1].endswith("(nn.Module):"):
        return None
    call = [(indent, "super().__init__(", "")]
    for i in range(max(items) + 1):
        text, comment = items.get(i, ("nn.Identity()", f"{i} holds no weights"))
        call.append((indent + 1, f"{text},", comment))
    call.append((indent, ")", ""))
    head = [(head[0][0], head[0][1].replace("(nn.Module):", "(nn.Sequential):"), head[0][2])] + head[1:at] + call \
        + head[at + 1:]
    moved = {a: p for a, p in paths.items() if p.isdigit()}
    index = re.compile(r"(?<![\w.])self\.(\w+)\b")
    forward = [(i, index.sub(lambda m: f"self[{moved[m.group(1)]}]" if m.group(1) in moved else m.group(0), text),
                comment) for i, text, comment in forward]
    return head, [], forward, moved


def numbered_blocks(graph) -> set:
    """The keys of the blocks named by a prefix whose parts are all numbers (Note [blocks of numbered parts])."""
    return {block["key"] for block in graph.meta.get("blocks", ()) if block.get("sequential")}
