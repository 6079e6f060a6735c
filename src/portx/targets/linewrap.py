"""Wrapping one generated statement at a width, the way Black does.

A statement longer than the width is split at its outermost bracket with the longest contents
(after the ``=`` of an assignment) whose opening line fits (else the longest): those go on the next line, indented by four spaces, or, when they
do not fit either, one argument a line with a trailing comma; the closing bracket and whatever
follows it go on a line of their own. The result is kept only when it parses to the same code (a compound
statement's header, ``def block(x, filters, name):``, with a ``pass`` body).

Example:
    >>> wrap_line("    y = layers.Conv2D(16, 3, padding='same', name='y')(x)", 40)
    ['    y = layers.Conv2D(', "        16, 3, padding='same', name='y'", '    )(x)']
"""
from __future__ import annotations

import ast
import io
import textwrap
import tokenize

__all__ = ["wrap_line"]

_OPEN, _CLOSE = "([{", ")]}"


def wrap_line(line: str, width: int) -> list:
    """``line`` as one or more lines of at most ``width`` characters where Black would manage it."""
    if len(line) <= width:
        return [line]
    pad = line[: len(line) - len(line.lstrip())]
    lines = _split(line.strip(), pad, width)
    return lines if lines and _same_code(line, lines) else [line]


def _split(body: str, pad: str, width: int) -> list:
    """Lines for the fragment ``body`` at indent ``pad``, split at its first bracket when too long."""
    if len(pad) + len(body) <= width:
        return [pad + body]
    spans = _brackets(body)
    if not spans:
        return [pad + body]
    span = next((s for s in spans if len(pad) + s[0] + 1 <= width), spans[0])  # the first line must fit too
    start, end, commas = span
    inner, content = pad + "    ", body[start + 1:end].strip()
    if not content:
        return [pad + body]
    if len(inner) + len(content) <= width or not commas:
        middle = _split(content, inner, width)
    else:
        cuts = [start] + commas + [end]
        parts = [body[a + 1:b].strip() for a, b in zip(cuts, cuts[1:])]
        middle = [line for part in parts if part for line in _split(part + ",", inner, width)]
    return [pad + body[:start + 1]] + middle + _split(body[end:], pad, width)


def _brackets(body: str) -> list:
    """[(open, close, [top-level commas inside])] offsets of the outermost brackets after a top-level ``=``, the
    longest contents first, the first of equals: ``layers.Add(name='a')([x, y])`` splits the list first."""
    try:
        ops = [(t.start[1], t.string) for t in tokenize.generate_tokens(io.StringIO(body).readline)
               if t.type == tokenize.OP and t.start[0] == 1]
    except (tokenize.TokenError, SyntaxError):
        return []
    depth, assign = 0, None
    for col, text in ops:
        depth += (text in _OPEN) - (text in _CLOSE)
        if depth == 0 and text == "=":
            assign = col
            break
    depth, start, commas, found = 0, None, [], []
    for col, text in ops:
        if assign is not None and col < assign:
            continue
        if text in _OPEN:
            depth += 1
            if depth == 1:
                start, commas = col, []
        elif text in _CLOSE:
            depth -= 1
            if depth < 0:
                return []
            if depth == 0:
                found.append((start, col, commas))
        elif text == "," and depth == 1:
            commas.append(col)
    return sorted(found, key=lambda span: span[0] - span[1])  # stable: the first of equals stays first


def _same_code(before: str, after: list) -> bool:
    body = "\n    pass" if before.rstrip().endswith(":") else ""  # a header (``def block(x, ..., name):``) alone
    try:
        return ast.dump(ast.parse(before.strip() + body)) == \
            ast.dump(ast.parse(textwrap.dedent("\n".join(after)) + body))
    except SyntaxError:
        return False
