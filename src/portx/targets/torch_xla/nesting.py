"""The emitted submodules nested as the source nests them, at every depth: ``self.self_attn.q_proj`` rather than
``self.self_attn_q_proj``, ``self.downsample[0]`` rather than ``self.downsample_0``.

Note [nested paths]: the emitter names each submodule and parameter after its source path (``_module_hint``) and
keeps that path (``TorchEmitter.paths``). ``nest`` rewrites ``__init__`` and ``forward`` so that each attribute
sits at its source path: a path component that is a name is an ``nn.Module()`` holding its children, one that is
a number an item of an ``nn.Sequential`` or ``nn.ModuleList`` (whichever the source's container was,
``graph.meta["module_classes"]``; a number with no weights, ``mlp.1`` for a GELU, is an ``nn.Identity()``). The
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
    """The path's parts, when ``attr`` may move there: two parts or more, names legal, the first not a number."""
    parts = tuple(path.split("."))
    if attr not in defined or len(parts) < 2 or parts[0].isdigit():
        return None
    for p in parts:
        if not (p.isdigit() or (p.isidentifier() and not keyword.iskeyword(p) and p not in reserved)):
            return None
    return parts


def _moves(paths, defined, taken, reserved) -> dict:
    """{attr: parts} for the attributes that can move (Note [nested paths]); the others keep their names."""
    found = {a: parts for a, path in paths.items() for parts in [_usable(a, path, defined, reserved)] if parts}
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
    defined = {m.group(1) for _, text, _ in init_rows for m in [_DEFINE.match(text)] if m}
    buffers = {m.group(1) for _, text, _ in init_rows for m in [_BUFFER.match(text)] if m}
    moves = _moves(paths, defined, defined | buffers | set(taken), reserved)
    if not moves:
        return init_rows, body_rows, {}
    containers = {}
    for parts in moves.values():
        for i in range(1, len(parts)):
            containers.setdefault(parts[:i], set()).add(parts[i])
    packed = _packed(init_rows, moves, containers)
    init, declared = [], set()
    for indent, text, comment in init_rows:
        made = _DEFINE.match(text)
        parts = moves.get(made.group(1)) if made else None
        if parts is None:
            init.append((indent, _renamed(text, moves), comment))
            continue
        for i in range(1, len(parts)):
            if parts[:i] not in declared:
                declared.add(parts[:i])
                init += _declare(parts[:i], containers, indent, packed, classes or {})
        if parts[:-1] not in packed:
            init.append((indent, f"{access(parts)} = {_renamed(made.group(2), moves)}", comment))
    body = [(indent, _renamed(text, moves), comment) for indent, text, comment in body_rows]
    return init, body, {a: ".".join(parts) for a, parts in moves.items()}


def _renamed(text, moves) -> str:
    return _SELF.sub(lambda m: access(moves[m.group(1)]) if m.group(1) in moves else m.group(0), text)


def _packed(init_rows, moves, containers) -> dict:
    """{numbered container: [(indent, item, comment) per index]} for the containers whose items are all leaves,
    each one ``self.x = nn.Foo(...)`` line: written as one ``nn.Sequential(...)`` (gaps ``nn.Identity()``)."""
    rows = {}
    for indent, text, comment in init_rows:
        made = _DEFINE.match(text)
        if made and made.group(1) in moves:
            rows[moves[made.group(1)]] = (indent, _renamed(made.group(2), moves), comment)
    packed = {}
    for container, kids in containers.items():
        if all(k.isdigit() for k in kids) and all(container + (k,) in rows for k in kids):
            count = max(int(k) for k in kids) + 1
            packed[container] = [rows.get(container + (str(i),)) for i in range(count)]
    return packed


def _declare(parts, containers, indent, packed, classes) -> list:
    """The line(s) that make the container ``parts`` before its first item is set."""
    kids = containers[parts]
    if not all(k.isdigit() for k in kids):
        return [(indent, f"{access(parts)} = nn.Module()", "")]
    cls = "ModuleList" if classes.get(".".join(parts)) == "ModuleList" else "Sequential"
    if parts not in packed:
        count = max(int(k) for k in kids) + 1
        wrap = "nn.Sequential(*[" if cls == "Sequential" else "nn.ModuleList(["
        return [(indent, f"{access(parts)} = {wrap}nn.Identity() for _ in range({count})])", "items set below")]
    items = packed[parts]
    rows = [(indent, f"{access(parts)} = nn.{cls}(" + ("[" if cls == "ModuleList" else ""), "")]
    for i, item in enumerate(items):
        rows.append((indent + 1, f"{item[1]}," if item else "nn.Identity(),",
                     item[2] if item else f"{'.'.join(parts)}.{i} holds no weights"))
    rows.append((indent, "])" if cls == "ModuleList" else ")", ""))
    return rows
