"""Blocks that differ only by an optional shortcut written as one function with a flag, as keras.applications
writes ``block1(x, filters, stride=1, conv_shortcut=True, name=None)``.

Note [an optional shortcut]: a ResNet stage's first block projects its input (``conv2_block1_0_conv``,
``conv2_block1_0_bn``) where the others add it as it is, so keras-jax wrote two functions, ``conv_block`` and
``conv_block_1``, for what keras.applications writes once. A group of blocks whose statements are another's plus
a run of statements making layers the other lacks (the run reads only the block's inputs; its output stands where
the other reads an input; ``find_run`` in targets/optional_run.py, as torch-xla's classes do it: Note [optional
submodules] in targets/torch_xla/optional.py) joins that group. The function takes the flag after ``name``
(``conv_shortcut=False``, or the name the run's layers begin with, ``downsample``) and writes the run under
``if conv_shortcut:``, ``else: shortcut = x``; the blocks that have it are called with ``conv_shortcut=True``
before ``name=``, as keras.applications' ``stack1`` calls ``block1``. Where
the other group leaves out a keyword the first writes (``strides=2`` in ``conv3_block1_1_conv``; Note [keywords that
vary in blocks] in style.py), the other's statements read Keras' default there (``strides=1``), so the stride is
one argument of the function. Layer names, and so the weights' paths, do not change.

Example:
    >>> groups, parts = merge_optional(groups)   # parts: {id(group): Shortcut}
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from itertools import combinations

from ..optional_run import Run, aligned, arrange, find_run, optional_params
from ..structure import Group

__all__ = ["Shortcut", "merge_optional"]

#: keywords a Keras layer leaves out at their default, which a block without the shortcut may lack
_DEFAULTS = {", strides=": "1", ", dilation_rate=": "1"}


@dataclass
class Shortcut:
    """A merged group's optional ``run``, the function's ``flag`` and the ids of the blocks that have the run."""

    run: Run
    flag: str
    flagged: set

    def flags_of(self, inst) -> list:
        """The flags a call of ``inst`` passes: the shortcut's where it has it."""
        return [(self.flag, True)] if id(inst) in self.flagged else []


def merge_optional(groups) -> tuple:
    """(groups, {id(group): Shortcut}) with each group whose blocks are another's with an optional shortcut joined
    to it, its blocks first (Note [an optional shortcut])."""
    parts, groups = {}, list(groups)
    for a in list(groups):
        for b in [g for g in groups if g is not a and id(g) not in parts and id(a) not in parts]:
            merged = _merged(a, b)
            if merged is not None:
                groups = [merged[0] if g is b else g for g in groups if g is not a]
                parts[id(merged[0])] = merged[1]
                break
    return groups, parts


def _merged(a, b):
    """(the group of ``a``'s and ``b``'s blocks, its Shortcut), or None where ``a`` is not ``b`` with a shortcut."""
    first, other = a.instances[0], b.instances[0]
    mine = {v for parts, _ in first.rows for k, v in parts if k == "s"}
    theirs = {v for parts, _ in other.rows for k, v in parts if k == "s"}
    extra = [v for v in dict.fromkeys(v for parts, _ in first.rows for k, v in parts if k == "s") if v not in theirs]
    if not extra or not theirs <= mine:
        return None
    uses = [i for i, (parts, _) in enumerate(first.rows) if any(k == "s" and v in extra for k, v in parts)]
    kept = [first.rows[i] for i in range(len(first.rows)) if i not in uses]
    filled = [_filled(kept, inst.rows) for inst in b.instances]
    if None in filled:
        return None
    run = find_run(first, replace(other, rows=filled[0]), uses)
    if run is None:
        return None
    arranged = [arrange(run, inst) for inst in a.instances]
    count = sum(1 for parts, _ in arranged[0][0][run.rows.start:run.rows.stop] for k, _ in parts if k == "n")
    before = sum(1 for parts, _ in arranged[0][0][:run.rows.start] for k, _ in parts if k == "n")
    positions = set(range(before, before + count))
    laid = [aligned([v for parts, _ in rows for k, v in parts if k == "n"], len(arranged[0][1]), positions)
            for rows in filled]
    found = optional_params([numbers for _, numbers in arranged] + laid, positions) if None not in laid else None
    if found is None:
        return None
    for inst, (rows, numbers) in zip(a.instances, arranged):
        inst.rows, inst.numbers = rows, numbers
    for inst, rows, numbers in zip(b.instances, filled, laid):
        inst.rows, inst.numbers = rows, numbers
    stem = re.sub(r"^[_\d]+|[_\d]+$", "", os.path.commonprefix(extra))
    flag = stem if len(stem) > 1 and stem.isidentifier() and stem != "shortcut" else "conv_shortcut"
    return Group(a.instances + b.instances, *found), Shortcut(run, flag, {id(i) for i in a.instances})


def _filled(kept, rows):
    """``rows`` (a block without the shortcut) with Keras' default written where ``kept`` (the other's statements
    but the shortcut's, in order) writes a keyword they leave out (``_DEFAULTS``); None where they differ otherwise
    or are as many."""
    if len(kept) != len(rows):
        return None
    found = [(_with_default(pa, pb), cb) for (pa, _), (pb, cb) in zip(kept, rows)]
    return None if any(parts is None for parts, _ in found) else found


def _with_default(pa, pb):
    """``pb`` with the keywords of ``_DEFAULTS`` that ``pa`` writes and ``pb`` lacks, at Keras' default; None where
    no such keywords make the two alike."""
    if _shape(pa) == _shape(pb):
        return pb
    slots = [i for i, (kind, _) in enumerate(pa) if kind == "n" and i and _key(pa[i - 1])]
    for drop in (set(c) for n in range(1, len(slots) + 1) for c in combinations(slots, n)):
        if _shape(pa, drop) != _shape(pb):
            continue
        values = iter([part for part in pb if part[0] != "t"])
        return [part if part[0] == "t" else ("n", _DEFAULTS[_key(pa[i - 1])]) if i in drop else next(values)
                for i, part in enumerate(pa)]
    return None


def _key(part) -> str:
    """The keyword of ``_DEFAULTS`` a text part ends with, or ""."""
    return next((k for k in _DEFAULTS if part[0] == "t" and part[1].endswith(k)), "")


def _shape(parts, drop=()) -> str:
    """A statement's text with a mark per variable, number or name; without the keywords at ``drop``."""
    text = []
    for i, (kind, value) in enumerate(parts):
        if i + 1 in drop:
            text.append(value[:-len(_key(parts[i]))])
        elif i not in drop:
            text.append(value if kind == "t" else f"\0{kind}")
    return "".join(text)
