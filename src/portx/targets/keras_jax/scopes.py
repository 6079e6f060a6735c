"""Keras name scopes in emitted code: ``with keras.name_scope("cell"):`` around the layers the source built inside
one, so that their weights' paths (``cell/conv/kernel``) are the source's (Note [keras name scopes] in
frontends/keras/__init__.py).

Note [emitted name scopes]: a Keras layer takes its path from the scopes open where it is first called (built), so
the emitter writes each layer statement inside the scopes ``graph.meta["name_scopes"]`` records for its source layer.
The statements are written in the graph's order, not the source's, so scopes are closed and opened again where
the order interleaves two of them (the paths are what counts). A statement that creates no scoped layer (a
``keras.ops`` call, a weightless layer of another kind) stays in the scopes its neighbours share. This runs after
the blocks are written (targets/keras_jax/blocks.py), on build_model's rows and on each block function's rows; in
a function a scope that carries the block's id (NASNet's ``normal_A_block_0``) is written from its ``name``
argument (``f"normal_A_block_{name}"``), as the layer names are. Without recorded scopes nothing changes.

Example:
    >>> rows = open_scopes(emitter.body.rows, body_scopes(emitter.body.rows, layer_scopes(emitter)))
"""
from __future__ import annotations

import re

from ..codegen import literal

__all__ = ["layer_scopes", "body_scopes", "function_scopes", "open_scopes"]

_NAMED = re.compile(r"""name=(?:'(\w+)'|"(\w+)")""")


def layer_scopes(emitter) -> dict:
    """{emitted layer name: its source layer's name scopes as a tuple}, for the layers that had some: a layer
    written under its source layer's name (weightless ones included), and one written from a scoped node's
    weights under another name."""
    recorded = emitter.graph.meta.get("name_scopes") or {}
    if not recorded:
        return {}
    producer = {out: node for node in emitter.graph.nodes for out in node.outputs}
    found = {name: tuple(path.split("/")) for name, path in recorded.items()}  # a layer written under its source name
    for value, name in emitter.layer_of.items():
        node = producer.get(value)
        path = recorded.get(node.scope) if node is not None else None
        if path:
            found[name] = tuple(path.split("/"))
    return found


def body_scopes(rows, scopes) -> list:
    """Per row of build_model: the scopes of the layer its statement creates (a tuple), or None."""
    own = []
    for _, text, _ in rows:
        names = [a or b for a, b in _NAMED.findall(text or "")]
        own.append(next((scopes[n] for n in names if n in scopes), None))
    return own


def open_scopes(rows, own, scope_text=literal) -> list:
    """``rows`` (indent, statement, comment) with ``with keras.name_scope(...):`` lines opened around each
    statement ``own`` gives scopes for (a tuple per row, None for none: Note [emitted name scopes]); ``scope_text``
    writes a scope's name as Python. Rows indented deeper than the first (a loop's body) follow the row above."""
    if not rows or not any(own):
        return rows
    base = min(indent for indent, _, _ in rows)
    own = [s if indent == base else None for (indent, _, _), s in zip(rows, own)]
    known = [i for i, s in enumerate(own) if s is not None]
    filled, nxt = [], 0
    for i, (indent, _, _) in enumerate(rows):
        while nxt < len(known) and known[nxt] < i:
            nxt += 1
        if own[i] is not None or indent != base:
            filled.append(own[i] if own[i] is not None else filled[-1] if filled else ())
            continue
        before = own[known[nxt - 1]] if nxt else ()
        after = own[known[nxt]] if nxt < len(known) else ()
        filled.append(_common(before, after))
    out, opened = [], ()
    for (indent, text, comment), scope in zip(rows, filled):
        if indent == base:
            keep = _common(opened, scope)
            for depth, name in enumerate(scope[len(keep):], len(keep)):
                out.append((base + depth, f"with keras.name_scope({scope_text(name)}):", ""))
            opened = scope
        out.append((indent + len(opened), text, comment))
    return out


def _common(a, b) -> tuple:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return tuple(a[:n])


def function_scopes(instances, scopes) -> list:
    """Per row of a block function (one per ``instances[0].rows``): the scopes, written as Python, that the
    blocks' layer on that row was built in; a scope that differs between the blocks by their id is written from
    ``name`` (Note [emitted name scopes]), one that does not is a constant even where it holds the id (NASNet's
    ``block_1`` in cell 1)."""
    per = [_instance_scopes(inst, scopes) for inst in instances]
    own = []
    for k, first in enumerate(per[0]):
        # blocks merged around an optional part (Note [an optional shortcut] in optional.py) have rows of their own:
        # a row another block lacks opens no scope
        rows = [found[k] if k < len(found) else None for found in per]
        if first is None or any(r is None or len(r) != len(first) for r in rows):
            own.append(None)
            continue
        own.append(tuple(literal(part) if len({r[i] for r in rows}) == 1 and len(rows) > 1
                         else _named(part, instances[0]) for i, part in enumerate(first)))
    return own


def _instance_scopes(inst, scopes) -> list:
    """Per row of ``inst``: the scopes of the layer it creates, or None."""
    own = []
    for parts, _ in inst.rows:
        names = [inst.flat(kind, v) if kind == "s" else f"{v[0]}_{inst.suffix}{v[1]}" for kind, v in parts
                 if kind in "se"]
        own.append(next((scopes[n] for n in names if n in scopes), None))
    return own


def _named(scope, first) -> str:
    """A scope's name in a block function: ``f"normal_A_block_{name}"`` where it holds the block's id."""
    ident = first.suffix or first.call_name()
    pattern = rf"(?:^|(?<=_)){re.escape(ident)}(?=_|$)"
    if ident and re.search(pattern, scope):
        text = re.sub(pattern, "{name}", scope.replace("{", "{{").replace("}", "}}"))
        if text == "{name}":
            return "name"
        return f'f"{text}"' if text.isprintable() and not set(text) & set("\"\\'") else "f" + repr(text)
    return literal(scope)
