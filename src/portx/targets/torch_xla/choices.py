"""Block classes whose ``forward`` differs by optional parts written as one class, a flag per part kept as an
attribute (Note [optional parts] in targets/optional_parts.py), as torchvision writes ``InvertedResidual``'s
``self.use_res_connect``:

    class Block(nn.Module):
        def __init__(self, in_channels, out_channels, stride, padding, strided=False, residual=False):
            ...
            self.strided = strided
            self.residual = residual

        def forward(self, x):
            ...
            if self.strided:
                expand_relu = F.pad(expand_relu, (0, 1, 0, 1))
            depthwise = self.depthwise(expand_relu)
            ...
            if self.residual:
                project_bn = project_bn.add_(x)
            return project_bn

Their ``__init__`` statements must be alike up to numbers: convs inside blocks write ``stride=1`` and
``padding=0`` (``with_strides`` in optional.py), so a stride-2 depthwise conv that a pad precedes and a
``padding=1`` one share a statement. Submodules keep their paths, so the state_dict keys do not change.

Example:
    >>> merge_layouts(classes, alias, parts)   # classes: {template: [(init, body)]}, rewritten
"""
from __future__ import annotations

from difflib import SequenceMatcher

from ..joinable import joinable
from ..optional_parts import Member, align, join, row_key
from ..structure import Group, render

__all__ = ["merge_layouts", "layout_lines"]


def merge_layouts(classes, alias, parts) -> None:
    """Join the classes (``classes``: {template: [(init, body)]}) whose ``forward`` differs by optional parts,
    the class with the most blocks first; ``__init__`` the first's, or its with submodules only the first's
    optional parts use (squeeze-excite: ``self.se_fc1 = nn.Conv2d(...) if se else None``). ``alias`` gets each
    joined template -> the one it joined, ``parts`` the joined one's Layout."""
    keys = sorted((k for k in classes if k not in parts and k not in alias), key=lambda k: -len(classes[k]))
    used = set()
    for ref in keys:
        if ref in used:
            continue
        used.add(ref)
        init_ref, body_ref = classes[ref][0]
        undo = _padded(classes[ref])  # Note [pad widths as one argument] in joinable.py
        members, joined = [_member(classes[ref], None, (), init_ref)], []
        for other in keys:
            extra = _extra(init_ref, classes[other][0][0]) if other not in used else None
            back = _padded(classes[other]) if extra is not None else None
            alignment = align(body_ref, classes[other][0][1]) if extra is not None else None
            trial = members + [_member(classes[other], alignment, extra, init_ref)] if alignment else None
            found = join(trial, _heads(trial)) if trial else None
            if found is not None and _guards(found[0], init_ref, extra) is not None:
                members, joined = trial, joined + [other]
                used.add(other)
            elif back:
                back()
        if not joined:
            undo()
            continue
        layout, group = join(members, _heads(members))
        layout.params, layout.columns, layout.init = group.params, group.columns, init_ref
        layout.guards = _guards(layout, init_ref, {i for m in members for i in m.extra})
        for member in members:
            for init, body in member.pairs:
                numbers = layout.numbers[id(body)]
                init.numbers, body.numbers = numbers[:len(init_ref.numbers)], numbers[len(init_ref.numbers):]
        for other in joined:
            classes[ref] += classes.pop(other)
            alias[other] = ref
        for init, body in classes[ref]:  # padded as one: their templates changed
            alias.setdefault((init.template()[0], body.template()), ref)
        alias.pop(ref, None)
        parts[ref] = layout


def _padded(pairs):
    """Make the pads and activations of ``pairs``' forward one value each, in place (``joinable``); returns what
    undoes it."""
    saved = [(body, body.rows, body.numbers) for _, body in pairs]
    for _, body in pairs:
        found = joinable(body)
        body.rows, body.numbers = found.rows, found.numbers

    def undo():
        for body, rows, numbers in saved:
            body.rows, body.numbers = rows, numbers
    return undo


def _extra(init_a, init_b) -> set | None:
    """The rows of ``init_a`` that ``init_b`` lacks, where ``init_b``'s are ``init_a``'s but those, up to numbers;
    None otherwise."""
    ops = SequenceMatcher(None, [row_key(p) for p, _ in init_a.rows], [row_key(p) for p, _ in init_b.rows],
                          autojunk=False).get_opcodes()
    if any(tag not in ("equal", "delete") for tag, *_ in ops):
        return None
    return {i for tag, i1, i2, _, _ in ops if tag == "delete" for i in range(i1, i2)}


def _member(pairs, alignment, extra, init_ref):
    bodies = [body for _, body in pairs]
    member = Member(Group(bodies, {}, []), dict(alignment.common) if alignment else
                    {i: i for i in range(len(bodies[0].rows))}, alignment)
    member.pairs, member.extra = pairs, set(extra)
    member.heads = {id(body): _laid(init, init_ref, extra) for init, body in pairs}
    return member


def _laid(init, init_ref, extra) -> list:
    """``init``'s numbers laid out as the first class's (``init_ref``) __init__ rows, None in the ``extra`` rows
    it lacks."""
    found, rows = [], iter(init.rows)
    for i, (parts, _) in enumerate(init_ref.rows):
        if i in extra:
            found += [None] * sum(k == "n" for k, _ in parts)
        else:
            found += [v for k, v in next(rows)[0] if k == "n"]
    return found


def _heads(members) -> dict:
    return {k: v for member in members for k, v in member.heads.items()}


def _guards(layout, init, extra) -> dict | None:
    """{flag: the attributes only its place uses}: the submodules of ``init``'s ``extra`` rows, each read only in
    the ``if`` side of one flag's place; None where one is read elsewhere."""
    attrs = {v for i in extra for k, v in init.rows[i][0][:3] if k == "a"}
    found, flag = {}, None
    for depth, (parts, _) in zip(layout.depths, layout.rows):
        text = "".join(v for _, v in parts)
        if depth == 0:
            flag = text[3:-1] if text.startswith("if ") and text.endswith(":") else None
            if flag not in layout.flags:
                flag = None
        for k, v in parts:
            if k == "a" and v in attrs:
                if flag is None or depth == 0 or found.setdefault(v, flag) != flag:
                    return None
    return None if set(found) != attrs else found


def layout_lines(w, layout, flags, names, number, attr) -> None:
    """``forward``'s rows of ``layout`` written into ``w``: ``if self.<flag>:`` for a place's test (``flags``:
    layout's flag -> the class's name for it), each statement rendered with ``names``, ``number`` and ``attr`` (a
    submodule's name in the class)."""
    base, offset = w.indent, 0
    for depth, (parts, comment) in zip(layout.depths, layout.rows):
        w.indent = base + depth
        text = "".join(v for _, v in parts)
        flag = text[3:-1] if text.startswith("if ") and text.endswith(":") and len(parts) == 1 else None
        if flag in layout.flags:
            w.line(f"if self.{flags[flag]}:")
            continue
        w.line(render(parts, lambda v: names[v], lambda i, t: number(offset + i, t),
                      lambda s: repr(attr(s.lstrip("_"))), attr), comment)
        offset += sum(kind == "n" for kind, _ in parts)
    w.indent = base
