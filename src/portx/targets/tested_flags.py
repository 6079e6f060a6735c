"""A flag its keyword argument stands for: the part's test is the argument itself (Note [a flag its keyword stands
for]); ``tested`` finds them when blocks are merged (targets/optional_parts.py), ``kept`` keeps those a target can
write.

Note [a flag its keyword stands for]: where the blocks that set a flag are exactly those that pass a keyword
argument (default ``None``: the stride-2 blocks' ``pad_width``; a filter count, default 0: MobileNetV3's
``filters_squeeze_excite``), a person tests the argument alone (``if pad_width is not None:``, ``if
filters_squeeze_excite:``; torch ``... if out_channels_squeeze_excite else None``, ``if self.pad is not None:`` or,
no such attribute, ``if self.squeeze_excite_conv is not None:``), as keras.applications tests ``strides``. A float
(the residual blocks' ``rate=0.0``), a stride or an input width (``Layout.counted``) stands for no part, nor does
a column two flags would share; a torch part with no submodule to test (the zoo MobileNetV3's ``residual``, an add
in ``forward``) keeps its flag where the count is an ``__init__`` argument only. Such a flag (``Layout.tested``:
flag -> column) is no argument and no call passes it; it stays in ``flags`` for the tests.

Note [flags at the most blocks' value]: a person writes a flag's default as most calls pass it and passes it only
where a block differs: keras.applications' EfficientNet ``block(..., id_skip=True)``. A flag most blocks set
(EfficientNetB0's ``residual``, MobileNetV3Small's ``expand``) defaults to True, its calls ``residual=False`` where
a block lacks the part; a tie defaults to False. Calls are counted, a keras-jax loop as one (MobileNetV2's
residual blocks are 10 of 16 but in 4 loops and 1 call against 6 calls: ``residual=False``), torch's blocks each a
constructor call. Layer names, weight paths and torch keys do not change.
"""
from __future__ import annotations

import re

__all__ = ["kept", "majority", "tested"]


def tested(flags, flagged, keywords, place_of, defaults, numbers) -> dict:
    """{flag: the keyword column only its blocks pass} (Note [a flag its keyword stands for])."""
    found = {}
    for flag in flags:
        setting = {key for key, _ in numbers if flag in flagged.get(key, ())}
        cols = [col for col in keywords if place_of.get(col) in (flag, None) and defaults[col] in ("None", "0") and
                setting == {key for key, n in numbers if n[col] not in (None, "0")}]
        if len(cols) == 1:
            found[flag] = cols[0]
    return found


def kept(layout, name_of, testable) -> dict:
    """``layout.tested`` less a count's flags where ``name_of(column)`` names no filters (``filters_*``,
    ``out_channels_*``) or not ``testable(flag, column)`` (torch: a part with no submodule to test), and less a
    column two flags would share (which part it is in is not known)."""
    found = {f: c for f, c in layout.tested.items() if testable(f, c) and
             (layout.keywords[c] == "None" or re.match(r"(filters|out_channels)(_|$)", name_of(c)))}
    return {f: c for f, c in found.items() if list(found.values()).count(c) == 1}


def majority(flagged, numbers, flag) -> bool:
    """Whether most blocks (``numbers``: id(instance) -> ...) set ``flag`` (``flagged``: id(instance) -> set;
    Note [flags at the most blocks' value])."""
    return 2 * sum(flag in flagged.get(key, ()) for key in numbers) > len(numbers)
