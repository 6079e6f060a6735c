"""The sizes an emitted model refuses up front (Note [size checks]): a free dim the model divides takes its
example's size plus multiples of its step only.

Example:
    >>> [(v.name, axis, step, offset) for v, axis, step, offset in size_checks(graph)]
    [('x', 2, 2, 0), ('x', 3, 2, 0)]
"""
from __future__ import annotations

import re

__all__ = ["size_checks", "size_rule", "size_refused", "write_forward_checks"]

#: the ValueError an emitted model raises on a size it refuses (both targets write this text)
_REFUSED = re.compile(r"input \S+: axis \d+ has size \d+, not [^()]*\(the model divides it by \d+\)")


# Note [size checks]: a U-Net pools its free image size by 2 and upsamples it back, so its skip connection only
# concatenates at even sizes (Note [divided dims] in session/dims/find.py). Fed an odd size, the emitted model
# would fail deep inside (a concatenate of 16 and 17 rows) with a message that names neither the input nor the
# rule. So each input axis of such a dim is checked before anything runs: torch's forward starts with
# ``if x.shape[2] % 2: raise ValueError(...)``, Keras' model passes the input through a ``SizeCheck`` layer that
# raises the same ValueError where the size is known (a concrete int: eager calls and jit traces; a symbolic size,
# as in jax.export, is left alone). ``portx verify`` and ``portx.testing`` check given arrays the same way first
# (verification/recheck.py) and answer in one line (exit 2).
def size_checks(graph) -> list:
    """(input Value, axis, step, offset) for every input axis of a free dim with a step above 1: its size must be
    ``offset`` plus a multiple of ``step`` (``offset`` is the example's size modulo the step, mostly 0)."""
    dims = graph.meta.get("free", {}).get("dims", {})
    return [(graph.inputs[index], axis, dim["step"], dim.get("example", dim["size"]) % dim["step"])
            for dim in dims.values() if dim.get("step", 1) > 1 for index, axis in dim["sites"]]


def size_rule(step: int, offset: int) -> str:
    """What a checked size must be, as the message says it: "a multiple of 2", or "1 plus a multiple of 2"."""
    return f"a multiple of {step}" if not offset else f"{offset} plus a multiple of {step}"


def size_refused(exc) -> str:
    """The emitted model's own refusal of a size in ``exc`` (its one line), or '' for any other failure."""
    found = _REFUSED.search(str(exc)) if isinstance(exc, ValueError) else None
    return found.group(0) if found else ""


def write_forward_checks(body, graph, names):
    """The torch ``forward``'s first lines: ``if x.shape[2] % 2: raise ValueError(...)`` per checked axis, into
    ``body`` (a LineWriter); ``names``: input value -> its variable."""
    for value, axis, step, offset in size_checks(graph):
        size = f"{names[value]}.shape[{axis}]"
        body.line(f"if {size} % {step}:" if not offset else f"if ({size} - {offset}) % {step}:")
        body.indent += 1
        body.line(f'raise ValueError(f"input {names[value]}: axis {axis} has size {{{size}}}, not '
                  f'{size_rule(step, offset)} (the model divides it by {step})")')
        body.indent -= 1
