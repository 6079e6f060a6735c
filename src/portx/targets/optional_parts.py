"""Blocks that differ by optional parts, aligned for one function or class: the rows two blocks share, and per
place where they differ the rows each writes there (Note [optional parts]).

Note [optional parts]: keras.applications writes MobileNetV2's blocks with one ``_inverted_res_block``: the block
pads before a stride-2 depthwise conv (``if stride == 2: x = ZeroPadding2D(...)``) and adds its input when its
stride is 1 and its filters are its input's (``if in_channels == pointwise_filters and stride == 1:
return Add()([inputs, x])``); EfficientNet's ``block`` and MobileNetV3's ``_inverted_res_block`` (with
squeeze-excite) alike. The emitted statements of such blocks differ in places, so each kind was a function of its
own (MobileNetV2: three). ``align`` lines up two blocks' statements (``difflib`` over their shapes: the text with
variables and numbers marked) and finds the places where one writes statements the other does not
(``Place``): a place where one block writes rows and the other none is an optional part (the residual
``Add``), one where both write rows, one block more, is a choice between two (the pad and the stride-2 conv
against the ``padding='same'`` conv). A place where both write as many rows is a difference of values, not of
parts: those blocks stay apart. Shared rows must read the same values; where a place's rows make a value that the
other block reads from before the place (the residual add's output against the block's last value), the rows
assign that earlier value where it is read no more (``project_bn = layers.Add(...)([drop, x])``), else the other
side assigns it (``else: add = project_bn``). Layers keep their names, so weight paths do not change; each
place becomes a flag of the function, True for the side with more rows. Kinds are compared with a pad's widths and
an activation one value each (targets/joinable.py): kinds that differ only there join with no place, the value an
argument. A number only one side of a choice writes and one the other side writes that feed the same argument (the
kernel size of the stride-2 conv and of the ``padding='same'`` one) are one column; a value only the blocks with a
part pass is a keyword argument, one a place (``pad_width=None``, ``rate=0.0``).

Example:
    >>> found = align(a, b)          # a, b: Instances of two kinds of block
    >>> [(p.rows_a, p.rows_b) for p in found.places]
    [(range(3, 5), range(3, 4)), (range(9, 11), range(9, 9))]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from .arg_names import argument_name
from .optional_run import lhs, optional_params, real
from .part_beside_choice import choices_read_alike, one_value, split_places
from .structure import Group
from .tested_flags import kept, majority, tested

__all__ = ["Place", "Alignment", "Layout", "Member", "align", "join", "row_key", "lhs"]


@dataclass
class Place:
    """Where two blocks differ: ``rows_a`` of ``a``'s statements against ``rows_b`` of ``b``'s (either may be
    empty); ``assign``: (side, variable, value) where that side assigns ``variable = value`` in its branch."""

    rows_a: range
    rows_b: range
    assign: list = field(default_factory=list)


@dataclass
class Alignment:
    """Two blocks lined up: ``common`` pairs of row indices (``a``'s, ``b``'s), ``places``, ``b``'s variables as
    ``a``'s (``rename_b``) and ``a``'s renamed where a place assigns an earlier value (``rename_a``)."""

    common: list
    places: list
    rename_a: dict
    rename_b: dict


def row_key(parts) -> tuple:
    """A statement's shape: its text with variables and names marked, numbers by kind (int or float)."""
    return tuple((k, None) if k == "v" else (k, real(v)) if k == "n" else (k, v) for k, v in parts)


def _reads(parts) -> list:
    return [v for k, v in parts[len(lhs(parts)):] if k == "v"] if lhs(parts) else [v for k, v in parts if k == "v"]


def _a_part(rows_a, at_a, rows_b, at_b) -> bool:
    """True for a place that is an optional part: one side writes no rows, or fewer (at most two) rows naming
    layers the other names too (the conv a stride-2 block pads before); no side names a layer outside the block
    (a Keras auto-name, ``re_lu_3``: a function would write it once) or holds the return."""
    if len(rows_a) - 1 in at_a or len(rows_b) - 1 in at_b or len(at_a) == len(at_b):
        return False
    sides = sorted(([rows_a[i] for i in at_a], [rows_b[i] for i in at_b]), key=len)
    if any(k == "t" and _LITERAL.search(v) for side in sides for parts in side for k, v in parts):
        return False
    named = [{v for parts in side for k, v in parts if k == "s"} for side in sides]
    return not sides[0] or len(sides[0]) <= 2 and named[0] and named[0] <= named[1]


_LITERAL = re.compile(r"name=['\"]")


def align(a, b) -> Alignment | None:
    """``a``'s and ``b``'s statements lined up (Note [optional parts]), or None where they differ otherwise."""
    if len(a.inputs) != len(b.inputs) or len(a.outputs) != len(b.outputs):
        return None
    rows_a = [p for p, _ in a.rows] + [[("v", v) for v in a.outputs]]  # the return, read last
    rows_b = [p for p, _ in b.rows] + [[("v", v) for v in b.outputs]]
    ops = SequenceMatcher(None, [row_key(p) for p in rows_a], [row_key(p) for p in rows_b],
                          autojunk=False).get_opcodes()
    ops, split = split_places(ops, rows_a, rows_b)  # Note [a part beside a choice] in part_beside_choice.py
    places = [Place(range(i1, i2), range(j1, j2)) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    if not all(_a_part(rows_a, p.rows_a, rows_b, p.rows_b) for p in places):  # none: alike but for values
        return None
    made_a = [{v for i in p.rows_a for v in lhs(rows_a[i])} for p in places]
    made_b = [{v for i in p.rows_b for v in lhs(rows_b[i])} for p in places]
    where = dict(zip(b.inputs, a.inputs))  # b's variable -> a's
    for p, made in zip(places, made_b):
        where.update({v: v for v in made})
    through, common = {}, []
    for tag, i1, i2, j1, j2 in ops:
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            common.append((i, j))
            made = lhs(rows_b[j])
            for va, vb in zip(lhs(rows_a[i]), made):
                where[vb] = va
            for va, vb in zip(_reads(rows_a[i]), _reads(rows_b[j])):
                got = where.get(vb)
                if got is None or got != va and not _unify(va, got, places, made_a, made_b, where, through, i):
                    return None
    if not choices_read_alike(split, (rows_a, rows_b), where, _reads,  # Note [a part beside a choice]
                              lambda va, vb, row: _unify(va, vb, places, made_a, made_b, where, through, row)):
        return None
    if len(common) != len(rows_a) - sum(len(p.rows_a) for p in places):
        return None
    rename_a = _settle(through, places, (rows_a, rows_b), common, where)
    return None if rename_a is None else Alignment(common[:-1], places, rename_a, where)


def _unify(va, vb, places, made_a, made_b, where, through, row) -> bool:
    """Reconcile a shared row reading ``va`` in ``a`` where ``b`` reads ``vb`` (as ``a``'s names), made at the
    last place before ``row``: made on both sides, ``b``'s takes ``a``'s name; on one side only, the other side
    passes an earlier value through (``through``)."""
    before = [k for k, p in enumerate(places) if p.rows_a.stop <= row]
    if not before:
        return False
    k = before[-1]
    if va in made_a[k] and vb in made_b[k]:
        for key in [key for key, v in where.items() if v == vb]:
            where[key] = va
        return True
    if va in made_a[k] or vb in made_b[k]:
        through.setdefault((k, va, vb), []).append(row)
        return True
    return False


def _settle(through, places, rows, common, where) -> dict | None:
    """{a's variable: the name it takes} for the values a place passes through (Note [optional parts]); sets each
    place's ``assign`` where the earlier value is read after the place as well, and gives ``b``'s value ``a``'s
    earlier name where ``b`` makes what ``a`` reads from before (``where``). None where neither is right."""
    rename, (rows_a, rows_b) = {}, rows
    for (k, va, vb), at in through.items():
        place = places[k]
        later = [(i, v) for i in range(place.rows_a.stop, len(rows_a)) for v in _reads(rows_a[i])] + \
            [(-1, where.get(v, v)) for p in places[k + 1:] for j in p.rows_b for v in _reads(rows_b[j])]
        if va in {v for i in place.rows_a for v in lhs(rows_a[i])}:
            if vb not in {v for _, v in later} and not _read_after(rows_a, place.rows_a, va, vb, {}):
                rename[va] = vb
            else:  # still read after the place: the other side assigns it
                place.assign.append(("b", va, vb))
        elif sorted(i for i, v in later if v == va) == sorted(at) and \
                not _read_after(rows_b, place.rows_b, vb, va, where):  # b's value is read only where a reads va
            for key in [key for key, v in where.items() if v == vb]:
                where[key] = va
        else:
            return None
    return rename


def _read_after(rows, at, made, value, where) -> bool:
    """True where a row of the place ``at`` after the one that makes ``made`` reads ``value`` (``where``: the side's
    variables as ``a``'s): the value must not be overwritten there."""
    after = [i for i in at if made in lhs(rows[i])]
    return bool(after) and any(where.get(v, v) == value for i in at if i > after[0] for v in _reads(rows[i]))


@dataclass
class Layout:
    """A merged function's statements: ``rows`` (pieces, comment) in the variables of ``ref`` (the block it is
    written from) and of the other kinds' own rows, at ``depths`` (1 inside an ``if``), ``made`` the variables it
    binds (``prefix_of``: the block prefix of those another kind binds), ``outputs`` what it returns, ``flags`` in
    order and the flags each block sets (``flagged``: id(instance) -> set).
    """

    ref: object
    rows: list
    depths: list
    made: list
    outputs: list
    flags: list
    flagged: dict
    prefix_of: dict = field(default_factory=dict)
    keywords: dict = field(default_factory=dict)  # number column -> its default: an argument only some blocks pass
    params: dict = field(default_factory=dict)  # a torch class's numbers (Group's), set by its driver
    columns: list = field(default_factory=list)
    numbers: dict = field(default_factory=dict)  # id(instance) -> its numbers laid out as the rows (None: absent)
    tested: dict = field(default_factory=dict)  # flag -> its keyword's column (Note [a flag its keyword stands for])
    calls: set = field(default_factory=set)  # id(instance) of each call written (a loop's first); empty: all

    @property
    def prefix(self) -> str:
        """The block prefix of the block it is written from (what arg_names.py reads a layer's role after)."""
        return self.ref.prefix

    def test(self, flag, name) -> str:  # by its keyword ``name`` (Note [a flag its keyword stands for])
        return f"{name} is not None" if self.keywords[self.tested[flag]] == "None" else name

    def counted(self, name_of, testable=lambda flag, col: True) -> None:  # Note [a flag its keyword stands for]
        self.tested = kept(self, name_of, testable)

    def default(self, flag) -> bool:
        """True where most blocks set ``flag`` (Note [flags at the most blocks' value] in tested_flags.py)."""
        return majority(self.flagged, self.calls or self.numbers, flag)

    def flags_of(self, inst) -> list:
        """The (flag, value) pairs a call of ``inst`` passes, in the function's order: those not at their default
        (none its keyword stands for)."""
        return [(f, not self.default(f)) for f in self.flags
                if (f in self.flagged.get(id(inst), ())) != self.default(f) and f not in self.tested]


@dataclass
class Member:
    group: object
    common: dict  # ref row -> this kind's row
    alignment: object = None


def join(members, head=None):
    """(Layout, Group) of ``members`` joined, or None where their places overlap, disagree or their numbers do
    not make arguments; ``head``: {id(instance): numbers before its rows'} (a torch class's __init__ numbers)."""
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
    return _finish(members, ref, slots, (flags, flagged), rename, head or {})


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
    flag = _flag_name([s[1] for s in true], [s[1] for s in false], flags, ref.prefix)
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


def _finish(members, ref, slots, flagged, rename, head):
    """(Layout, Group) from the slots, or None where the numbers make no arguments."""
    (flags, flagged), count = flagged, len(head.get(id(ref), ()))
    positions = {i for numbers in head.values() for i, n in enumerate(numbers) if n is None}  # parts of __init__
    numbers = {id(inst): list(head.get(id(inst), ())) for member in members for inst in member.group.instances}
    place, place_of, feeds = None, {}, {}  # number position -> the flag of the place it is in, what it feeds
    for depth, parts, _, rows, _ in slots:
        size = sum(k == "n" for k, _ in parts)
        text = "".join(v for _, v in parts)
        place = text[3:-1] if depth == 0 and text.startswith("if ") else place if depth or text == "else:" else None
        if len(rows) < len(members) and size:
            positions.update(range(count, count + size))
            place_of.update((i, place) for i in range(count, count + size))
            feeds.update((count + j, argument_name(text[:at])) for j, at in enumerate(_number_at(parts)))
        count += size
        for m, member in enumerate(members):
            for inst in member.group.instances:
                got = _numbers(inst.rows[rows[m]]) if m in rows else [None] * size
                if len(got) != size:
                    return None
                numbers[id(inst)].extend(got)
    instances = sorted((inst for member in members for inst in member.group.instances), key=lambda inst: inst.start)
    _one_choice([numbers[id(inst)] for inst in instances], positions, place_of, feeds)
    one_value([numbers[id(inst)] for inst in instances], positions, place_of, feeds)  # Note [a part beside a choice]
    keywords = []
    found = optional_params([numbers[id(inst)] for inst in instances], positions, keywords)
    if found is None or len({place_of.get(i) for i in keywords}) < len(keywords):
        return None  # several values of one part only its blocks pass: apart reads better
    made, prefix_of = [], {}
    for depth, parts, _, _, prefix in slots:
        for v in lhs(parts):
            if v not in made and v not in ref.inputs:
                made.append(v)
                if prefix and v.startswith(prefix + "_"):
                    prefix_of[v] = prefix
    defaults = {col: "None" if any("(" in (numbers[id(i)][col] or "") for i in instances) else "0.0" if
                any(real(numbers[id(i)][col] or "0") for i in instances) else "0" for col in keywords}
    layout = Layout(ref, [(p, c) for _, p, c, _, _ in slots], [d for d, *_ in slots], made,
                    [rename.get(v, v) for v in ref.outputs], flags, flagged, prefix_of, defaults)
    layout.numbers = numbers
    layout.tested = tested(flags, flagged, keywords, place_of, defaults, [(id(i), numbers[id(i)]) for i in instances])
    return layout, Group(instances, *found)


def _number_at(parts) -> list:
    """The offsets in a statement's text of its numbers."""
    found, at = [], 0
    for kind, value in parts:
        if kind == "n":
            found.append(at)
        at += len(value)
    return found


def _one_choice(numbers, positions, place_of, feeds) -> None:
    """Make a number of one side of a choice and one of the other side that feed the same argument one column
    (the kernel size of the stride-2 conv a pad precedes and of the ``padding='same'`` one): the first takes the
    second's value where it has none, and is no longer optional where every block then has it."""
    for p in sorted(positions):
        for q in sorted(positions):
            if q <= p or place_of.get(p) is None or place_of.get(q) != place_of[p] or feeds[p] != feeds[q] or \
                    any(n[p] is not None and n[q] is not None for n in numbers):
                continue
            for n in numbers:
                n[p] = n[q] if n[p] is None else n[p]
            if all(n[p] is not None for n in numbers):
                positions.discard(p)


#: what a place does, read from the statements only one side writes: the flag's name
_KINDS = (("residual", re.compile(r"layers\.Add\(|\.add_\(|\+")),
          ("strided", re.compile(r"pad\(|Padding2D\(|strides?=2")))


def _flag_name(true, false, taken, prefix="") -> str:
    """The flag of a place whose True side writes ``true`` (pieces) and other side ``false``: ``residual`` for an
    add, ``strided`` for a pad or a stride of 2, else the common start of the layers only ``true`` names
    (``expand``), or torch submodules and values (``se_fc1``, ``se_relu``: ``se``)."""
    theirs = {v for parts in false for k, v in parts if k in "sa"}
    names = [v for parts in true for k, v in parts if k in "sa" and isinstance(v, str) and v not in theirs]
    if not any(k == "s" for parts in true for k, _ in parts):  # torch: its values too, without the block's prefix
        names += [v[len(prefix) + 1:] for parts in true[:-1] for v in lhs(parts) if v.startswith(prefix + "_")]
    text = " ".join("".join(v if k in "tn" else "v" for k, v in parts) for parts in true)
    last = "".join(v for k, v in true[-1] if k == "t") if true else ""
    kinds = [name for name, pattern in _KINDS if pattern.search(last if name == "residual" else text)]
    stems = [re.sub(r"^[_\d]+|[_\d]+$", "", os.path.commonprefix(some)) for some in (names, names[:2]) if some]
    stem = next((s for s in stems if len(s) > 1 and s.isidentifier()), "")  # the first two: squeeze_excite_*, re_lu
    options = kinds + ([stem] if len(stem) > 1 and stem.isidentifier() else []) + ["optional"]
    return next((o for o in options if o not in taken), f"optional_{len(taken)}")
