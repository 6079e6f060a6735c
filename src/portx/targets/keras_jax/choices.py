"""Kinds of block that differ by optional parts written as one Keras function with a flag per part, as
keras.applications writes ``_inverted_res_block`` (Note [optional parts] in targets/optional_parts.py).

A kind of block with one member joins too (MobileNetV3Small's ``expanded_conv_6``, the only block of its stage
that does not add its input). The function's flags follow ``name`` with False defaults; a call passes those its
block sets (``residual=True``), and a stride-2 block its pad (``pad_width=...``), which its test reads (Note [a flag
its keyword stands for] in tested_flags.py):

    def expanded_conv_block(x, filters, filters_1, filters_2, name, pad_width=None, residual=False):
        ...
        if pad_width is not None:
            depthwise_pad = ops.pad(activation, pad_width)
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

from ..joinable import joinable
from ..optional_parts import Member, align, join
from ..structure import Group
from .scopes import function_scopes

__all__ = ["merge_parts", "flag_test"]


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
        mine = _padded(ref)  # Note [pad widths as one argument], Note [the activation as an argument] in joinable.py
        members = [Member(mine, {i: i for i in range(len(mine.instances[0].rows))})]
        for other in plain:
            if id(other) in used:
                continue
            theirs = _padded(other)
            alignment = align(mine.instances[0], theirs.instances[0])
            if alignment is None:
                continue
            trial = members + [Member(theirs, dict(alignment.common), alignment)]
            if join(trial) is not None:
                members = trial
                used.add(id(other))
        if len(members) == 1:
            if len(ref.instances) > 1:
                out.append(ref)
            continue
        layout, group = join(members)
        for inst in group.instances:
            inst.numbers = layout.numbers[id(inst)]
        out.append(group)
        layouts[id(group)] = layout
    return sorted(out, key=lambda g: g.instances[0].start), layouts


def flag_test(layout, parts) -> str | None:
    """``if pad_width is not None:``, ``if filters_squeeze_excite:`` for a place's test (``parts``: one text piece)
    whose flag its keyword argument stands for (Note [a flag its keyword stands for] in tested_flags.py); else None.
    Other statements' pieces may hold tuples (an auto-name's ``k``), so only a lone ``t`` piece is read."""
    (kind, text), = parts if len(parts) == 1 else [(None, "")]
    flag = text[3:-1] if layout and kind == "t" and text.startswith("if ") and text.endswith(":") else None
    col = layout.tested.get(flag) if flag else None
    return None if col is None else f"if {layout.test(flag, layout.names[col])}:"


def _padded(group):
    """A shadow of ``group`` whose pads and activations are one value each (``joinable``)."""
    return Group([joinable(inst) for inst in group.instances], group.params, group.columns)


def _plain(group, scopes) -> bool:
    """True for a kind whose blocks have no numbered names or name scopes, and read one value each."""
    first = group.instances[0]
    return not any(inst.stems or inst.suffix for inst in group.instances) and \
        not any(function_scopes(group.instances, scopes)) and len(first.outputs) == 1


