"""The emitted submodules nested as the source nests them, at every depth: ``self.self_attn.q_proj`` rather than
``self.self_attn_q_proj``, ``self.downsample[0]`` rather than ``self.downsample_0``.

Note [nested paths]: the emitter names each submodule and parameter after its source path (``_module_hint``) and
keeps that path (``TorchEmitter.paths``). ``nest`` rewrites ``__init__`` and ``forward`` so that each attribute
sits at its source path: a path component that is a name is an ``nn.Module()`` holding its children, one that is
a number an item of an ``nn.Sequential`` or ``nn.ModuleList`` (whichever the source's container was,
``graph.meta["module_classes"]``; a number with no weights, ``mlp.1`` for a GELU, is an ``nn.Identity()``).
A numbered container is built directly with its items, as a person writes it (``nn.Sequential(nn.Conv2d(...),
nn.BatchNorm2d(...))``; ``nn.ModuleList([nn.Module() for _ in range(3)])`` where each item is a named container),
and a named one's children are assigned by name (``self.layers[0].conv1 = nn.Conv2d(...)``), never a list of
placeholders whose items are set afterwards; an ``nn.Parameter`` is no item of a numbered container. The
state_dict keys, ``named_modules()`` and ``get_submodule`` then follow the source's paths (for a torch source, its
own state_dict keys). It runs twice: inside each block class (paths relative to the block, targets/torch_xla/
blocks.py) and on ``Model`` (what stays outside blocks, and the block containers). An attribute whose path would
clash (a leaf that is another's container, the same path twice, a reserved or mixed name/number container) keeps
its flat name, so nesting never changes what the code computes.

Example:
    >>> init, body, moved = nest(init_rows, body_rows, {"downsample_0": "downsample.0"}, taken={"conv1"})
    >>> moved
    {'downsample_0': 'downsample.0'}
"""
from __future__ import annotations

import keyword
import re

__all__ = ["nest", "access"]

_SELF = re.compile(r"(?<![\w.])self\.(\w+)\b")
_DEFINE = re.compile(r"^self\.(\w+) = (.*)$")
_BUFFER = re.compile(r"^self\.register_buffer\('(\w+)'")


def access(parts) -> str:
    """The expression for a nested path: ``("layers", "0", "mlp")`` -> ``self.layers[0].mlp``."""
    return "self" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts)


def _usable(attr, path, defined, reserved) -> tuple | None:
    """The path's parts, when ``attr`` may move there: another name or two parts or more, names legal, the first not a
    number (``self_attention_dropout_1``, so named beside ``self_attention.dropout``, becomes its source's
    ``self_attention_dropout`` once the other has moved). Names are ASCII (Note [untrusted names]): Python reads
    ``self.aªlW`` as ``self.aalW`` (identifiers are NFKC-normalised), so the state_dict would not have the key
    written."""
    parts = tuple(path.split("."))
    if attr not in defined or (len(parts) < 2 and parts[0] == attr) or parts[0].isdigit():
        return None
    for p in parts:
        if not (p.isdigit() or (p.isascii() and p.isidentifier() and not keyword.iskeyword(p) and p not in reserved)):
            return None
    return parts


def _moves(paths, defined, taken, reserved, params=frozenset()) -> dict:
    """{attr: parts} for the attributes that can move (Note [nested paths]); the others keep their names. An
    ``nn.Parameter`` (``params``) is no item of a numbered container, which holds modules only."""
    found = {a: parts for a, path in paths.items() for parts in [_usable(a, path, defined, reserved)]
             if parts and not (a in params and parts[-1].isdigit())}
    counts = {}
    for parts in found.values():
        counts[parts] = counts.get(parts, 0) + 1
    leaves = set(counts)
    children = {}
    for parts in leaves:
        for i in range(1, len(parts)):
            children.setdefault(parts[:i], set()).add(parts[i])
    mixed = {c for c, kids in children.items() if len({k.isdigit() for k in kids}) > 1}
    flat = set(taken) - set(found)  # the attributes that stay: a container must not take their names

    def ok(parts):
        prefixes = [parts[:i] for i in range(1, len(parts))]
        return counts[parts] == 1 and parts[0] not in flat and parts not in children \
            and not any(p in leaves or p in mixed for p in prefixes)

    return {a: parts for a, parts in found.items() if ok(parts)}


def nest(init_rows, body_rows, paths, taken=(), reserved=frozenset(), classes=None) -> tuple:
    """(init rows, body rows, {attr: nested path}) with each attribute of ``paths`` ({flat attr: source path})
    moved to its path where it can be (Note [nested paths]). ``taken``: other names of ``self`` to keep clear;
    ``classes``: {source path: class name}, for ``nn.Sequential`` versus ``nn.ModuleList``."""
    made = [(row, _DEFINE.match(row[1])) for row in init_rows]
    defined = {m.group(1) for _, m in made if m}
    params = {m.group(1) for _, m in made if m and m.group(2).startswith("nn.Parameter(")}
    buffers = {m.group(1) for _, text, _ in init_rows for m in [_BUFFER.match(text)] if m}
    moves = _moves(paths, defined, defined | buffers | set(taken), reserved, params)
    if not moves:
        return init_rows, body_rows, {}
    tree = _Tree(moves, classes or {})
    for (indent, _, comment), m in made:
        if m and m.group(1) in moves:
            tree.leaves[moves[m.group(1)]] = (_renamed(m.group(2), moves), comment)
    init = []
    for (indent, text, comment), m in made:
        parts = moves.get(m.group(1)) if m else None
        if parts is None:
            init.append((indent, _renamed(text, moves), comment))
            continue
        for i in range(1, len(parts)):
            if parts[:i] not in tree.built:
                init += [(indent + d, f"{access(parts[:i])} = {t}" if not j else t, c)
                         for j, (d, t, c) in enumerate(tree.expression(parts[:i]))]
        if parts not in tree.inlined:
            init.append((indent, f"{access(parts)} = {tree.leaves[parts][0]}", comment))
    body = [(indent, _renamed(text, moves), comment) for indent, text, comment in body_rows]
    return init, body, {a: ".".join(parts) for a, parts in moves.items()}


def _renamed(text, moves) -> str:
    return _SELF.sub(lambda m: access(moves[m.group(1)]) if m.group(1) in moves else m.group(0), text)


class _Tree:
    """The containers the moved attributes need, each built once (Note [nested paths]): a named one is an
    ``nn.Module()`` whose children are assigned by name; a numbered one is built directly with its items
    (``nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))``: a leaf's constructor, ``nn.Module()`` for a named
    container, the expression of a numbered one, ``nn.Identity()`` for a number holding no weights)."""

    def __init__(self, moves, classes):
        self.kids, self.classes = {}, classes
        for parts in moves.values():
            for i in range(1, len(parts)):
                self.kids.setdefault(parts[:i], set()).add(parts[i])
        self.leaves = {}  # parts -> (constructor text, comment)
        self.built, self.inlined = set(), set()

    def expression(self, parts) -> list:
        """[(extra indent, text, comment)]: the rows of the expression that builds container ``parts``."""
        self.built.add(parts)
        kids = self.kids[parts]
        if not all(k.isdigit() for k in kids):
            return [(0, "nn.Module()", "")]
        listed = self.classes.get(".".join(parts)) == "ModuleList"
        count = max(int(k) for k in kids) + 1
        items = [self._item(parts + (str(i),)) for i in range(count)]
        if count > 1 and all(item == [(0, "nn.Module()", "")] for item in items):
            many = f"nn.Module() for _ in range({count})"  # children assigned by name below
            return [(0, f"nn.ModuleList([{many}])" if listed else f"nn.Sequential(*[{many}])", "")]
        rows = [(0, "nn.ModuleList([" if listed else "nn.Sequential(", "")]
        for item in items:
            rows += [(d + 1, t, c) for d, t, c in item[:-1]]
            rows.append((item[-1][0] + 1, item[-1][1] + ",", item[-1][2]))
        return rows + [(0, "])" if listed else ")", "")]

    def _item(self, child) -> list:
        if child in self.leaves:
            self.inlined.add(child)
            return [(0, *self.leaves[child])]
        if child in self.kids:
            return self.expression(child)
        return [(0, "nn.Identity()", f"{'.'.join(child)} holds no weights")]
