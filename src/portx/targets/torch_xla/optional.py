"""Blocks that differ only by an optional submodule written as one class, as torchvision writes ``BasicBlock``:
``self.downsample = nn.Sequential(...) if downsample else None`` and ``if self.downsample is not None:`` in
``forward``.

Note [optional submodules]: the first block of a ResNet stage has a projection shortcut (``layer2.0.downsample``),
the others do not, so their statements differ and each was a class of its own; with two blocks a stage, three
classes for four blocks were longer than the flat code (Note [structured only where shorter]). Blocks ``A`` and ``B``
are one class when ``A``'s statements are ``B``'s plus a run of statements that use submodules ``B`` lacks: the run
reads only the block's inputs and its own values, and one of its values, its output, is read after it, where ``B``
reads one of its inputs (``add = bn3.add_(downsample_1)`` against ``add = bn3.add_(x)``). The class then takes a
flag, builds the submodules only where it is set, and in ``forward`` starts the run's output at that input
(``downsample = x``) and runs the statements under ``if self.downsample is not None:``. The numbers of the optional
statements must be the same in every block that has them or a whole multiple of an argument of the class; the
submodules keep their source paths, so the state_dict keys are the source's.

Where the submodules are all under one source attribute (torchvision's ``downsample``) that is the flag, and its
statements are built last, as torchvision writes it (``guard_init``). Keras has no such attribute: its shortcut is
two layers of the block, ``_0_conv`` and ``_0_bn`` (keras.applications' ``block1(..., conv_shortcut=True)``). Then
each is built where it is, ``self._0_conv = nn.Conv2d(...) if shortcut else None`` (``guard_each``: the state_dict
keeps the flat code's keys in their order), ``forward`` tests the first (``if self._0_conv is not None:``), and
the flag is named after the layers' common start (``layer2_0_downsample_0`` and ``_1`` of a torch ResNet that went
through Keras: ``downsample``), else ``shortcut``. Two things differ from a torch source there, and are evened out
before ``A`` is compared with ``B`` (``arrange``): Keras orders the shortcut's layers where its graph has them
(``layer2_0_downsample_1`` after ``layer2_0_bn2``), so the run need not be consecutive: its statements are gathered
at its first, which is right because they read only the block's inputs and each other; and the emitter adds in
place into the operand it may overwrite, the shortcut in ``A`` (``add = v_0_bn.add_(v_3_bn)``, Keras'
``Add()([shortcut, x])``) and the other in ``B``, whose shortcut is its input (``add = v_3_bn.add_(x)``), so a
sum's (or product's) operands may be read the other way round (``_COMMUTES``).

Conv layers also write ``stride=1`` inside blocks before they are compared (``with_strides``), so the first block
of a stage with stride 1 and those with stride 2 share a class; the class leaves out a stride that is 1 in all its
blocks.

Example:
    >>> found = optional_part((init_a, body_a), (init_b, body_b), paths)
    >>> found.name, found.rows
    ('downsample', range(8, 10))
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from ..structure import number_params

__all__ = ["Optional", "optional_part", "arrange", "aligned", "optional_params", "with_strides", "without_strides",
           "guard_init", "guard_each"]

_CONV = re.compile(r"^(self\.\w+ = nn\.Conv[123]d\(\d+, \d+, kernel_size=(?:\d+|\([\d, ]+\)))(?=[,)])")
_CONV_ROW = re.compile(r"^self\.\w+ = nn\.Conv[123]d\(")
_UNIT_STRIDE = re.compile(r", stride=1(?=[,)])")


@dataclass
class Optional:
    """What block ``A`` has that ``B`` lacks: submodule ``name`` (its flat attributes ``attrs``), ``A``'s init rows
    ``init_rows`` and forward rows ``rows`` that use it, ``A``'s number positions in them, the value ``output`` the
    run makes for later rows, and ``input``, what ``B`` reads there."""

    name: str
    attrs: set
    init_rows: set
    rows: range
    positions: set
    output: str
    input: str
    members: set  # the ids of the init Instances of the blocks that have the part
    guard: str = ""  # the attribute ``forward`` tests: ``name``, or the first of several guarded one by one (flat)
    order: list = field(default_factory=list)  # ``A``'s forward rows in the class's order: the run gathered
    swapped: set = field(default_factory=set)  # rows (in ``order``) whose two operands are written swapped


def with_strides(rows, spans) -> list:
    """``rows`` (Model.__init__'s) with ``stride=1`` written in every conv inside ``spans`` ([(first, end)])."""
    inside = {i for first, end in spans for i in range(first, end)}
    return [(indent, _CONV.sub(r"\1, stride=1", text) if i in inside and "stride=" not in text else text, comment)
            for i, (indent, text, comment) in enumerate(rows)]


def without_strides(text) -> str:
    """A class's line without the ``stride=1`` that ``with_strides`` wrote."""
    return _UNIT_STRIDE.sub("", text) if _CONV_ROW.match(text) else text


def _attrs(rows) -> list:
    """The attribute each init row defines (``self.<prefix>_<name> = ...``), or None."""
    return [parts[1][1] if len(parts) > 2 and parts[0] == ("t", "self.") and parts[1][0] == "a" else None
            for parts, _ in rows]


def _lhs(parts) -> list:
    names = []
    for kind, value in parts:
        if kind == "t" and " = " in value:
            return names
        if kind == "v":
            names.append(value)
    return []


def optional_part(a, b, path_of) -> Optional | None:
    """What block ``a`` ((init, forward) Instances) has beyond ``b`` (Note [optional submodules]), or None where
    the two are not one class with an optional part. ``path_of(attribute)``: its source path in the block, or ""."""
    (init_a, body_a), (init_b, body_b) = a, b
    own_a, own_b = _attrs(init_a.rows), _attrs(init_b.rows)
    extra = set(own_a) - set(own_b)
    if None in own_a or None in own_b or not extra or not set(own_b) <= set(own_a):
        return None
    name, guard = _names([x for x in own_a if x in extra], path_of)
    if not name or any(path_of(x).split(".")[0] == name for x in own_b):
        return None
    uses = [i for i, (parts, _) in enumerate(body_a.rows) if any(k == "a" and v in extra for k, v in parts)]
    if not uses:
        return None
    order = list(range(uses[0])) + uses + [i for i in range(uses[0], len(body_a.rows)) if i not in uses]
    body_a = replace(body_a, rows=[body_a.rows[i] for i in order])  # the run gathered (Note [optional submodules])
    run = range(uses[0], uses[0] + len(uses))
    made = [v for i in run for v in _lhs(body_a.rows[i][0])]
    reads = {v for i in run for k, v in body_a.rows[i][0][len(_lhs(body_a.rows[i][0])):] if k == "v"}
    later = {v for i, (parts, _) in enumerate(body_a.rows) if i not in run for k, v in parts if k == "v"}
    out = [v for v in made if v in later or v in body_a.outputs]
    if len(out) != 1 or out[0] in body_a.outputs or not reads <= set(body_a.inputs) | set(made):
        return None
    found = Optional(name, extra, {i for i, x in enumerate(own_a) if x in extra}, run, set(), out[0], "", set(),
                     guard, order, set())
    return found if _same_without(found, body_a, body_b, init_a, init_b) else None


def _names(extra, path_of) -> tuple:
    """(flag, the attribute ``forward`` tests) of an optional part made of the attributes ``extra`` (in __init__'s
    order): one source submodule is both (``downsample``); several are guarded one by one, under the name their
    attributes begin with (``downsample_0``, ``downsample_1``: ``downsample``), else ``shortcut`` (Keras'
    ``_0_conv``, ``_0_bn``), and ``forward`` tests the first. ("", "") where their paths nest."""
    heads = {path_of(x).split(".")[0] for x in extra}
    if len(heads) == 1 and heads.pop().isidentifier():
        head = path_of(extra[0]).split(".")[0]
        return head, head
    if any("." in path_of(x) for x in extra):
        return "", ""
    stem = re.sub(r"[_\d]+$", "", os.path.commonprefix(extra))
    return (stem if len(stem) > 1 and stem.isidentifier() else "shortcut"), extra[0]


def _same_without(found, body_a, body_b, init_a, init_b) -> bool:
    """True when ``a``'s statements without the optional ones, reading ``b``'s input where ``a`` reads the run's
    output, are ``b``'s; sets ``found.input`` and ``found.positions``."""
    rows_a = [r for i, r in enumerate(body_a.rows) if i not in found.rows]
    if len(rows_a) != len(body_b.rows) or len(init_a.rows) - len(found.init_rows) != len(init_b.rows):
        return False
    where, kept_at = {}, [i for i in range(len(body_a.rows)) if i not in found.rows]
    for at, (pa, ca), (pb, cb) in zip(kept_at, rows_a, body_b.rows):
        if ca != cb:
            return False
        if not _match(pa, pb, where):
            if not _match(_swapped(pa), pb, where):
                return False
            found.swapped.add(at)
    others = [v for k, v in where.items() if k != found.output]
    if len(set(others)) != len(others) or len(body_a.inputs) != len(body_b.inputs) or \
            where.get(found.output) not in body_b.inputs:
        return False
    if any(v in where and where[v] != body_b.inputs[i] for i, v in enumerate(body_a.inputs)):
        return False
    found.input = body_a.inputs[body_b.inputs.index(where[found.output])]  # what ``a`` reads at that input
    kept = [r for i, r in enumerate(init_a.rows) if i not in found.init_rows]
    if [tuple((k, v if k != "n" else _real(v)) for k, v in p) for p, _ in kept] != \
            [tuple((k, v if k != "n" else _real(v)) for k, v in p) for p, _ in init_b.rows]:
        return False
    found.positions = _positions(found, init_a, body_a)
    return True


def _match(pa, pb, where) -> bool:
    """True where statement ``pa`` is ``pb`` with ``a``'s variables read as ``b``'s; adds to ``where`` (``a``'s
    variable -> ``b``'s) only then."""
    if pa is None or len(pa) != len(pb):
        return False
    found = dict(where)
    for (ka, va), (kb, vb) in zip(pa, pb):
        if ka != kb or (ka in "ts" or ka == "a") and va != vb or ka == "n" and _real(va) != _real(vb):
            return False
        if ka == "v" and found.setdefault(va, vb) != vb:
            return False
    where.update(found)
    return True


#: statements whose two operands may be written either way round: the emitter adds in place into the operand it
#: may overwrite, so where ``B`` adds its input (``add = v_3_bn.add_(x)``), ``A`` adds into its shortcut instead
#: (``add = v_0_bn.add_(v_3_bn)``: Keras' ``Add()([shortcut, x])``); ``A`` then reads ``v_3_bn.add_(v_0_bn)``
_COMMUTES = {"\0 = \0.add_(\0)", "\0 = \0 + \0", "\0 = \0.mul_(\0)", "\0 = \0 * \0"}


def _swapped(parts) -> list | None:
    """``parts`` of ``y = p.add_(q)`` as ``y = q.add_(p)`` (``_COMMUTES``); None for any other statement."""
    if "".join("\0" if k == "v" else v for k, v in parts) not in _COMMUTES or any(k not in "tv" for k, _ in parts):
        return None
    first, second = [i for i, (k, _) in enumerate(parts) if k == "v"][1:]
    found = list(parts)
    found[first], found[second] = parts[second], parts[first]
    return found


def arrange(found, body) -> tuple:
    """(rows, numbers) of ``body`` (a forward Instance of a block with the optional part ``found``) in the class's
    order: the run gathered, the operands of ``found.swapped`` swapped."""
    rows = [body.rows[i] for i in found.order]
    rows = [(_swapped(parts), comment) if i in found.swapped else (parts, comment) for i, (parts, comment) in
            enumerate(rows)]
    return rows, [v for parts, _ in rows for k, v in parts if k == "n"]


def _real(number) -> bool:
    return "." in number or "e" in number


def _positions(found, init, body) -> set:
    """The number positions (init's, then forward's) of the optional statements."""
    at, count = set(), 0
    for i, (parts, _) in enumerate(init.rows):
        n = sum(k == "n" for k, _ in parts)
        at.update(range(count, count + n) if i in found.init_rows else ())
        count += n
    for i, (parts, _) in enumerate(body.rows):
        n = sum(k == "n" for k, _ in parts)
        at.update(range(count, count + n) if i in found.rows else ())
        count += n
    return at


def aligned(numbers, size, positions) -> list | None:
    """A block without the optional part's ``numbers`` laid out at the positions of one with it (None there); None
    where their count does not fit."""
    if len(numbers) != size - len(positions):
        return None
    found, rest = [], iter(numbers)
    for i in range(size):
        found.append(None if i in positions else next(rest))
    return found


def optional_params(numbers, positions) -> tuple | None:
    """(params, columns) as ``number_params`` over blocks' ``numbers`` laid out alike (``aligned``): the columns
    every block has become arguments as there; an optional column is an argument where it equals one (or is a whole
    multiple of one) in every block that has it, as written where it is the same number in all of them (always for
    0 and 1). None where neither."""
    common = [i for i in range(len(numbers[0])) if i not in positions]
    found = number_params([[n[i] for i in common] for n in numbers])
    if found is None:
        return None
    params = {common[c]: p for c, p in found[0].items()}
    columns = [common[c] for c in found[1]]
    for i in sorted(positions):
        having = [n for n in numbers if n[i] is not None]
        values = [n[i] for n in having]
        if set(values) <= {"0", "1"}:  # too common to be read as an argument by chance
            continue
        found = _argument(values, [[n[col] for n in having] for col in columns])
        if found is None and len(set(values)) > 1:
            return None
        if found is not None:
            params[i] = found
    return params, columns


def _argument(values, bases) -> tuple | None:
    """(parameter, multiple) for an optional column ``values``: the first argument equal to it in every block that
    has it, else the first it is a whole multiple of; None where none is."""
    for want_one in (True, False):
        for p, base in enumerate(bases):
            if not all(v.isdigit() and b.isdigit() and int(b) for v, b in zip(values, base)):
                continue
            ratios = {int(v) // int(b) if int(v) % int(b) == 0 else 0 for v, b in zip(values, base)}
            if len(ratios) == 1 and 0 not in ratios and (ratios == {1} or not want_one):
                return p, ratios.pop()
    return None


def guard_init(rows, name, flag) -> list:
    """``rows`` (a class's __init__ after nesting) with the statements that build ``self.<name>`` moved last and
    made optional: ``self.downsample = nn.Sequential(...) if downsample else None``, or where its children are
    assigned by name, ``self.shortcut = None`` and ``if shortcut:`` above them."""
    mine = re.compile(rf"^self\.{name}\b")
    start = next((i for i, (_, text, _) in enumerate(rows) if text.startswith(f"self.{name} = ")), None)
    if start is None:
        return rows
    end = _end(rows, start)
    later = [i for i in range(end + 1, len(rows)) if mine.match(rows[i][1])]
    part = rows[start:end + 1] + [rows[i] for i in later]
    rest = [row for i, row in enumerate(rows) if not (start <= i <= end or i in later)]
    indent = rows[start][0]
    if not later:
        last_indent, text, comment = part[-1]
        return rest + part[:-1] + [(last_indent, f"{text} if {flag} else None", comment)]
    return rest + [(indent, f"self.{name} = None", ""), (indent, f"if {flag}:", "")] + \
        [(d + 1, text, comment) for d, text, comment in part]


def guard_each(rows, names, flag) -> list | None:
    """``rows`` (a class's __init__) with each statement that builds one of ``names`` made optional where it is
    (``self._0_conv = nn.Conv2d(...) if shortcut else None``), so the submodules keep their order and the
    state_dict its keys'; None where one is not built by a statement of its own."""
    found, todo = list(rows), set(names)
    for start, (_, text, _) in enumerate(rows):
        name = text.split(" = ", 1)[0][len("self."):] if text.startswith("self.") else None
        if name not in todo:
            continue
        end = _end(rows, start)
        indent, last, comment = found[end]
        found[end] = (indent, f"{last} if {flag} else None", comment)
        todo.discard(name)
    return None if todo else found


def _end(rows, start) -> int:
    """The last row of the statement that begins at ``rows[start]`` (its brackets closed)."""
    depth, end = 0, start
    for end in range(start, len(rows)):
        depth += sum(rows[end][1].count(c) for c in "([{") - sum(rows[end][1].count(c) for c in ")]}")
        if depth <= 0:
            break
    return end
