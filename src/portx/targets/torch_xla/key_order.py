"""An ``__init__``'s statements in the order the source registers what they define, so that ``state_dict()`` and
``named_modules()`` list the source's keys in the source's order.

Note [the source's keys]: the emitter declares each submodule and parameter where ``forward`` first reads it, and a
source declares them in its own order: ``nn.TransformerEncoderLayer`` registers ``linear1`` and ``linear2`` before
``norm1``, which its forward applies first, and the zoo ConvNeXt its ``stage2`` before ``down``, which runs
between the stages. ``state_dict()`` lists a module's own parameters and buffers, then its children, each in the
order they were assigned, so the keys were the source's but in another order. The torch frontend records the
source's keys in its order (``graph.meta["source_keys"]``); ``in_source_order`` sorts the statements of ``Model``
and of each block class (its paths relative to its first block) by the first source key each defines, a statement
that defines no key (a weightless module, a non-persistent buffer) staying after the one before it. A container
takes the place of its first key, before its children. A parameter the source holds under several keys (a language
model's output layer tied to its embedding, ``graph.meta["tied"]``) is declared under the first of them and
assigned to the others (``self.lm_head.weight = self.tok.weight``), as a person ties them, so that every key the
source has is there and ``load_state_dict(source.state_dict(), strict=True)`` loads. A buffer the graph reads as the
source holds it (``graph.meta["source_buffers"]``; an index table read by ``index_select`` as it is, not a wrapped
int32 copy) is registered on its module at its source name (``self.blocks[0].attn.register_buffer('rel_index', ...)``,
nesting.py), where it was a flat ``blocks_0_attn_index`` on ``Model``. ``ep.state_dict`` lists the buffers after
every parameter; ``source_keys`` (frontends/torch/keys.py) puts each where ``state_dict()`` has it, after its
module's own parameters. A buffer the source registers with ``persistent=False`` (the zoo Swin's relative position
index and shift mask, computed in its ``__init__``) has no key in the source's state_dict, and none here: it is
registered ``persistent=False`` too and read from buffers.safetensors (Note [computed buffers] in shards.py).

Example:
    >>> in_source_order([(2, "self.b = nn.Linear(2, 2)", ""), (2, "self.a = nn.Linear(2, 2)", "")],
    ...                 ["a.weight", "a.bias", "b.weight", "b.bias"])
    [(2, 'self.a = nn.Linear(2, 2)', ''), (2, 'self.b = nn.Linear(2, 2)', '')]
"""
from __future__ import annotations

import re

__all__ = ["in_source_order", "relative_keys"]

_DEFINES = re.compile(r"\b(self(?:\.\w+|\[\d+\])*)(?:\.(\w+) = |\[(\d+)\] = |\.register_buffer\('(\w+)')")
_PART = re.compile(r"\.(\w+)|\[(\d+)\]")
_GOES_ON = (")", "]", "}", "else", "elif")


def relative_keys(keys, prefix) -> list:
    """The keys under ``prefix`` (a block's source path), relative to it."""
    return [k[len(prefix) + 1:] for k in keys or () if k.startswith(prefix + ".")]


def in_source_order(rows, keys) -> list:
    """``rows`` ((indent, text, comment) of ``__init__``) with its statements sorted by the first of ``keys`` (source
    state_dict keys relative to the module) each defines (Note [the source's keys]); unchanged without keys."""
    if not keys or not rows:
        return rows
    rank = {}
    for i, key in enumerate(keys):
        parts = key.split(".")
        for j in range(1, len(parts) + 1):
            rank.setdefault(".".join(parts[:j]), i)
    base = min(indent for indent, _, _ in rows)
    statements = []
    for row in rows:
        indent, text, _ = row
        if statements and (indent > base or text.startswith(_GOES_ON) or not text):
            statements[-1].append(row)
        else:
            statements.append([row])
    order, last = [], -1
    for n, statement in enumerate(statements):
        found = [rank[p] for _, text, _ in statement for p in _defined(text) if p in rank]
        last = min(found) if found else last
        order.append((last, n))
    return [row for _, n in sorted(order) for row in statements[n]]


def _defined(text) -> list:
    """The dotted paths a statement assigns or registers (``self.blocks[0].attn = ...`` -> ``blocks.0.attn``)."""
    found = []
    for m in _DEFINES.finditer(text):
        head = [a or b for a, b in _PART.findall(m.group(1)[len("self"):])]
        found.append(".".join(head + [m.group(2) or m.group(3) or m.group(4)]))
    return found
