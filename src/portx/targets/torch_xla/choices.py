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

from ..optional_parts import Member, align, join
from ..structure import Group, render

__all__ = ["merge_layouts", "layout_lines"]


def merge_layouts(classes, alias, parts) -> None:
    """Join the classes (``classes``: {template: [(init, body)]}) whose ``__init__`` statements are alike and
    whose ``forward`` differs by optional parts, the class with the most blocks first; ``alias`` gets each joined
    template -> the one it joined, ``parts`` the joined one's Layout."""
    keys = sorted((k for k in classes if k not in parts and k not in alias), key=lambda k: -len(classes[k]))
    used = set()
    for ref in keys:
        if ref in used:
            continue
        used.add(ref)
        init_ref, body_ref = classes[ref][0]
        members, joined = [_member(classes[ref], None)], []
        for other in keys:
            if other in used or classes[other][0][0].template() != init_ref.template() or \
                    any(kind == "k" for parts_, _ in body_ref.rows for kind, _ in parts_):
                continue
            alignment = align(body_ref, classes[other][0][1])
            if alignment is None:
                continue
            trial = members + [_member(classes[other], alignment)]
            found = join(trial, _heads(trial))
            if found is not None and not found[0].keywords:
                members, joined = trial, joined + [other]
                used.add(other)
        if not joined:
            continue
        layout, group = join(members, _heads(members))
        layout.params, layout.columns = group.params, group.columns
        for member in members:
            for body in member.group.instances:
                body.numbers = layout.numbers[id(body)][len(member.heads[id(body)]):]
        for other in joined:
            classes[ref] += classes.pop(other)
            alias[other] = ref
        parts[ref] = layout


def _member(pairs, alignment):
    bodies = [body for _, body in pairs]
    member = Member(Group(bodies, {}, []), dict(alignment.common) if alignment else
                    {i: i for i in range(len(bodies[0].rows))}, alignment)
    member.heads = {id(body): init.numbers for init, body in pairs}
    return member


def _heads(members) -> dict:
    return {k: v for member in members for k, v in member.heads.items()}


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
