"""Kinds of block that differ by optional parts written as one Keras function with a flag per part, as
keras.applications writes ``_inverted_res_block`` (Note [optional parts] in targets/optional_parts.py).

A kind of block with one member joins too (MobileNetV3Small's ``expanded_conv_6``, the only block of its stage
that does not add its input). The function's flags follow ``name`` with False defaults; a call passes those its
block sets (``residual=True``):

    def expanded_conv_block(x, filters, filters_1, filters_2, name, strided=False, residual=False):
        ...
        if strided:
            depthwise_pad = ops.pad(activation, ((0, 0), (1, 2), (1, 2), (0, 0)))
            depthwise = layers.DepthwiseConv2D(5, strides=2, ...)(depthwise_pad)
        else:
            depthwise = layers.DepthwiseConv2D(5, padding='same', ...)(activation)
        ...
        if residual:
            project_bn = layers.Add(name=f"{name}_add")([x, project_bn])
        return project_bn

Example:
    >>> groups, layouts = merge_parts(groups, singles, scopes)   # layouts: {id(group): Layout}
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..optional_parts import align, lhs, row_key
from ..optional_run import optional_params, real
from ..structure import Group
from .scopes import function_scopes

__all__ = ["Layout", "merge_parts"]


@dataclass
class Layout:
    """A merged function's statements: ``rows`` (pieces, comment) in the variables of ``ref`` (the block it is
    written from) and of the other kinds' own rows, at ``depths`` (1 inside an ``if``), ``made`` the variables it
    binds (``prefix_of``: the block prefix of those another kind binds), ``outputs`` what it returns, ``flags`` in
    order, the flags each block sets (``flagged``: id(instance) -> set) and the first block of each kind (``kinds``).
    """

    ref: object
    rows: list
    depths: list
    made: list
    outputs: list
    flags: list
    flagged: dict
    prefix_of: dict = field(default_factory=dict)
    kinds: list = field(default_factory=list)
    keywords: dict = field(default_factory=dict)  # number column -> its default: an argument only some blocks pass

    def flags_of(self, inst) -> list:
        """The flags a call of ``inst`` passes, in the function's order."""
        return [f for f in self.flags if f in self.flagged.get(id(inst), ())]


@dataclass
class _Member:
    group: object
    common: dict  # ref row -> this kind's row
    alignment: object = None


def merge_parts(groups, singles, scopes, skip=()) -> tuple:
    """(groups, {id(group): Layout}): kinds of block that differ by optional parts joined, the kind with the most
    blocks first (Note [optional parts]); ``singles``: kinds with one block, which may join; ``scopes``: the
    emitted name scopes (a kind whose layers open one stays as it is); ``skip``: the ids of groups left as they are
    (joined around an optional shortcut already: Note [an optional shortcut] in optional.py)."""
    plain = [g for g in list(groups) + list(singles) if id(g) not in skip and _plain(g, scopes)]
    plain.sort(key=lambda g: -len(g.instances))
    layouts, used, out = {}, set(), [g for g in groups if not any(g is p for p in plain)]
    for ref in plain:
        if id(ref) in used:
            continue
        used.add(id(ref))
        members = [_Member(ref, {i: i for i in range(len(ref.instances[0].rows))})]
        for other in plain:
            if id(other) in used:
                continue
            alignment = align(ref.instances[0], other.instances[0])
            if alignment is None:
                continue
            trial = members + [_Member(other, dict(alignment.common), alignment)]
            if _layout(trial) is not None:
                members = trial
                used.add(id(other))
        if len(members) == 1:
            if len(ref.instances) > 1:
                out.append(ref)
            continue
        layout, group = _layout(members)
        out.append(group)
        layouts[id(group)] = layout
    return sorted(out, key=lambda g: g.instances[0].start), layouts


def _plain(group, scopes) -> bool:
    """True for a kind whose blocks have no numbered names or name scopes, and read one value each."""
    first = group.instances[0]
    return not any(inst.stems or inst.suffix for inst in group.instances) and \
        not any(function_scopes(group.instances, scopes)) and len(first.outputs) == 1


def _layout(members):
    """(Layout, Group) of ``members`` joined, or None where their places overlap, disagree or their numbers do
    not make arguments."""
    ref = members[0].group.instances[0]
    places, rename = {}, {}  # ref rows' start -> (ref rows, {member index: its rows}, assigns)
    for m, member in enumerate(members[1:], 1):
        for place in member.alignment.places:
            span = place.rows_a
            found = places.get(span.start)
            if found is None and any(set(span) & set(p[0]) for p in places.values()) or \
                    found is not None and (found[0] != span or not _alike(members, found[1], m, place.rows_b)):
                return None
            if found is None:
                places[span.start] = (span, {m: place.rows_b}, list(place.assign))
            else:
                found[1][m] = place.rows_b
        for va, vb in member.alignment.rename_a.items():
            if rename.setdefault(va, vb) != vb:
                return None
    if any(va in rename for _, _, assigns in places.values() for _, va, _ in assigns):
        return None
    slots, flags, flagged = [], [], {}  # slot: (depth, parts, comment, {member index: its row or None}, prefix)
    skip = set()
    for i in range(len(ref.rows) + 1):
        if i in places:
            skip.update(places[i][0])
            slots += _place(members, ref, places[i], rename, flags, flagged)
        if i < len(ref.rows) and i not in skip:
            slots.append((0, *_renamed(ref.rows[i], rename), {m: mb.common[i] for m, mb in enumerate(members)}, None))
    return _finish(members, ref, slots, flags, flagged, rename)


def _place(members, ref, place, rename, flags, flagged) -> list:
    """The slots of one place: ``if flag:`` the side with more rows, ``else:`` the other's; adds the flag to
    ``flags`` and to the blocks that set it (``flagged``)."""
    span, alts, assigns = place
    m0 = min(alts)
    alt = members[m0].group.instances[0]
    mine = [(0, *_renamed(ref.rows[j], rename), {m: mb.common[j] for m, mb in enumerate(members) if m not in alts},
             None) for j in span]
    theirs = [(0, *_renamed(_renamed(alt.rows[j], members[m0].alignment.rename_b), rename),
               {m: r[k] for m, r in alts.items()}, alt.prefix) for k, j in enumerate(alts[m0])]
    theirs += [(0, [("v", va), ("t", " = "), ("v", vb)], "", {}, None) for _, va, vb in assigns]
    ref_true = len(span) > len(alts[m0])
    true, false = (mine, theirs) if ref_true else (theirs, mine)
    flag = _flag_name([s[1] for s in true], [s[1] for s in false], flags)
    flags.append(flag)
    for m, mb in enumerate(members):
        if (m not in alts) == ref_true:
            for inst in mb.group.instances:
                flagged.setdefault(id(inst), set()).add(flag)
    slots = [(0, [("t", f"if {flag}:")], "", {}, None)] + [(1, *s[1:]) for s in true]
    if false:
        slots += [(0, [("t", "else:")], "", {}, None)] + [(1, *s[1:]) for s in false]
    return slots


def _renamed(row, where) -> tuple:
    """A row's (pieces, comment) with its variables renamed by ``where``."""
    parts, comment = row
    return [(k, where.get(v, v)) if k == "v" else (k, v) for k, v in parts], comment


def _alike(members, alts, m, rows) -> bool:
    """True where member ``m``'s ``rows`` at a place are the rows another member writes there (``alts``)."""
    k = min(alts)
    theirs, mine = members[k].group.instances[0].rows, members[m].group.instances[0].rows
    return [row_key(theirs[j][0]) for j in alts[k]] == [row_key(mine[j][0]) for j in rows]


def _numbers(row) -> list:
    return [v for k, v in row[0] if k == "n"]


def _finish(members, ref, slots, flags, flagged, rename):
    """(Layout, Group) from the slots, or None where the numbers make no arguments."""
    numbers, positions, count = {}, set(), 0
    for depth, parts, _, rows, _ in slots:
        size = sum(k == "n" for k, _ in parts)
        if len(rows) < len(members) and size:
            positions.update(range(count, count + size))
        count += size
        for m, member in enumerate(members):
            for inst in member.group.instances:
                got = _numbers(inst.rows[rows[m]]) if m in rows else [None] * size
                if len(got) != size:
                    return None
                numbers.setdefault(id(inst), []).extend(got)
    instances = sorted((inst for member in members for inst in member.group.instances), key=lambda inst: inst.start)
    keywords = []
    found = optional_params([numbers[id(inst)] for inst in instances], positions, keywords)
    if found is None or len(keywords) > 1:  # several values of one part only its blocks pass: apart reads better
        return None
    for inst in instances:
        inst.numbers = numbers[id(inst)]
    made, prefix_of = [], {}
    for depth, parts, _, _, prefix in slots:
        for v in lhs(parts):
            if v not in made and v not in ref.inputs:
                made.append(v)
                if prefix and v.startswith(prefix + "_"):
                    prefix_of[v] = prefix
    defaults = {col: "0.0" if any(real(numbers[id(i)][col] or "0") for i in instances) else "0" for col in keywords}
    kinds = sorted((m.group.instances[0] for m in members), key=lambda inst: inst.start)
    layout = Layout(ref, [(p, c) for _, p, c, _, _ in slots], [d for d, *_ in slots], made,
                    [rename.get(v, v) for v in ref.outputs], flags, flagged, prefix_of, [k.key for k in kinds], defaults)
    return layout, Group(instances, *found)


#: what a place does, read from the statements only one side writes: the flag's name
_KINDS = (("residual", re.compile(r"layers\.Add\(|\.add_\(|\+")),
          ("strided", re.compile(r"pad\(|Padding2D\(|strides?=2")))


def _flag_name(true, false, taken) -> str:
    """The flag of a place whose True side writes ``true`` (pieces) and other side ``false``: ``residual`` for an
    add, ``strided`` for a pad or a stride of 2, else the common start of the layers only ``true`` names
    (``expand``)."""
    theirs = {v for parts in false for k, v in parts if k == "s"}
    names = [v for parts in true for k, v in parts if k == "s" and v not in theirs]
    text = " ".join("".join(v if k in "tn" else "v" for k, v in parts) for parts in true)
    last = "".join(v for k, v in true[-1] if k == "t") if true else ""
    kinds = [name for name, pattern in _KINDS if pattern.search(last if name == "residual" else text)]
    stem = re.sub(r"^[_\d]+|[_\d]+$", "", os.path.commonprefix(names)) if names else ""
    options = kinds + ([stem] if len(stem) > 1 and stem.isidentifier() else []) + ["optional"]
    return next((o for o in options if o not in taken), f"optional_{len(taken)}")
