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
before ``A`` is compared with ``B`` (``find_run`` and ``arrange`` in targets/optional_run.py, which keras-jax's
functions share): Keras orders the shortcut's layers where its graph has them
(``layer2_0_downsample_1`` after ``layer2_0_bn2``), so the run need not be consecutive: its statements are gathered
at its first, which is right because they read only the block's inputs and each other; and the emitter adds in
place into the operand it may overwrite, the shortcut in ``A`` (``add = v_0_bn.add_(v_3_bn)``, Keras'
``Add()([shortcut, x])``) and the other in ``B``, whose shortcut is its input (``add = v_3_bn.add_(x)``), so a
sum's (or product's) operands may be read the other way round (``_COMMUTES`` there).

Conv layers also write ``stride=1`` and ``dilation=1`` inside blocks before they are compared (``with_strides``), so
the first block of a stage with stride 1 and those with stride 2 share a class, and so do the blocks of a dilated
stage (torchvision's ``replace_stride_with_dilation``: ``padding=1`` in its first block, ``padding=2, dilation=2``
in the others); the class leaves out a stride or dilation that is 1 in all its blocks.

Example:
    >>> found = optional_part((init_a, body_a), (init_b, body_b), paths)
    >>> found.name, found.guard, found.run.rows
    ('downsample', 'downsample', range(8, 10))
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..optional_run import Run, arrange, find_run, real

__all__ = ["Optional", "optional_part", "with_strides", "without_strides", "guard_init", "guard_each"]

_SIZES = r"(?:\d+|\([\d, ]+\))"
_CONV = re.compile(rf"^(self\.\w+ = nn\.Conv[123]d\(\d+, \d+, kernel_size={_SIZES})(?=[,)])")
_DILATED = re.compile(rf"^(self\.\w+ = nn\.Conv[123]d\(\d+, \d+, kernel_size={_SIZES}, stride={_SIZES}"
                      rf"(?:, padding={_SIZES})?)(?=[,)])")  # where the emitter writes ``dilation=`` (torch's order)
_STRIDED = re.compile(rf"^(self\.\w+ = nn\.Conv[123]d\(\d+, \d+, kernel_size={_SIZES}, stride={_SIZES})(?=[,)])")
_CONV_ROW = re.compile(r"^self\.\w+ = nn\.Conv[123]d\(")
_UNIT_STRIDE = re.compile(r", (?:stride|dilation)=1(?=[,)])|, padding=0(?=[,)])")


@dataclass
class Optional:
    """What block ``A`` has that ``B`` lacks: submodule ``name`` (its flat attributes ``attrs``), ``A``'s init rows
    ``init_rows`` and the forward statements ``run`` that use it, and ``A``'s number positions in them."""

    name: str
    attrs: set
    init_rows: set
    run: Run
    positions: set = field(default_factory=set)
    members: set = field(default_factory=set)  # the ids of the init Instances of the blocks that have the part
    guard: str = ""  # the attribute ``forward`` tests: ``name``, or the first of several guarded one by one (flat)


def with_strides(rows, spans) -> list:
    """``rows`` (Model.__init__'s) with ``stride=1``, ``padding=0`` and ``dilation=1`` written in every conv inside
    ``spans`` ([(first, end)])."""
    inside = {i for first, end in spans for i in range(first, end)}
    rows = [(indent, _CONV.sub(r"\1, stride=1", text) if i in inside and "stride=" not in text else text, comment)
            for i, (indent, text, comment) in enumerate(rows)]
    rows = [(indent, _STRIDED.sub(r"\1, padding=0", text) if i in inside and "padding=" not in text else text,
             comment) for i, (indent, text, comment) in enumerate(rows)]  # Note [optional parts]: padded apart
    return [(indent, _DILATED.sub(r"\1, dilation=1", text) if i in inside and "dilation=" not in text else text,
             comment) for i, (indent, text, comment) in enumerate(rows)]


def without_strides(text) -> str:
    """A class's line without the ``stride=1``, ``padding=0`` and ``dilation=1`` that ``with_strides`` wrote."""
    return _UNIT_STRIDE.sub("", text) if _CONV_ROW.match(text) else text


def _attrs(rows) -> list:
    """The attribute each init row defines (``self.<prefix>_<name> = ...``), or None."""
    return [parts[1][1] if len(parts) > 2 and parts[0] == ("t", "self.") and parts[1][0] == "a" else None
            for parts, _ in rows]


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
    run = find_run(body_a, body_b, uses)
    if run is None or not _same_init(init_a, init_b, [x in extra for x in own_a]):
        return None
    found = Optional(name, extra, {i for i, x in enumerate(own_a) if x in extra}, run, guard=guard)
    found.positions = _positions(found, init_a, arrange(run, body_a)[0])
    return found


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
    stem = re.sub(r"[_\d]+$", "", os.path.commonprefix(["".join(x) if isinstance(x, tuple) else x for x in extra]))
    return (stem if len(stem) > 1 and stem.isidentifier() else "shortcut"), extra[0]


def _same_init(init_a, init_b, optional) -> bool:
    """True when ``a``'s __init__ statements but the ``optional`` ones (a flag per row) are ``b``'s, up to numbers."""
    kept = [parts for (parts, _), skip in zip(init_a.rows, optional) if not skip]
    return [tuple((k, v if k != "n" else real(v)) for k, v in p) for p in kept] == \
        [tuple((k, v if k != "n" else real(v)) for k, v in p) for p, _ in init_b.rows]


def _positions(found, init, rows) -> set:
    """The number positions (init's, then forward's ``rows``) of the optional statements."""
    at, count = set(), 0
    for i, (parts, _) in enumerate(init.rows):
        n = sum(k == "n" for k, _ in parts)
        at.update(range(count, count + n) if i in found.init_rows else ())
        count += n
    for i, (parts, _) in enumerate(rows):
        n = sum(k == "n" for k, _ in parts)
        at.update(range(count, count + n) if i in found.run.rows else ())
        count += n
    return at


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
