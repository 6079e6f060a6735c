"""Code-generation helpers shared by emitters: a Namespace for identifiers and safe literals.

Note [untrusted names]: every string that came from a model file (module paths, layer and
parameter names) is untrusted. It reaches generated code only through ``Namespace.name`` (an
ASCII identifier, never a keyword or builtin) or ``literal`` (``repr`` of plain data), so no
name can close a string, start a statement or call anything.

Example:
    >>> ns = Namespace(reserved={"keras"})
    >>> ns.name("layer1.0.conv1"), ns.name("__import__('os')")
    ('layer1_0_conv1', 'import_os')
"""
from __future__ import annotations

import builtins
import keyword
import math
import re

__all__ = ["Namespace", "literal", "LineWriter", "nested_outputs", "flatten_outputs"]

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")
_MAX_LEN = 48


class Namespace:
    """Hands out unique, legal, harmless Python identifiers for arbitrary strings.

    Example: ``Namespace().name("my layer")`` -> ``"my_layer"``.
    """

    def __init__(self, reserved=()):
        self._taken = set(reserved) | set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)

    def release(self, name: str) -> None:
        """Give back a name handed out but not used."""
        self._taken.discard(name)

    def name(self, raw: str, fallback: str = "v") -> str:
        """A fresh identifier derived from ``raw`` (see Note [untrusted names])."""
        base = _NOT_IDENT.sub("_", str(raw)).strip("_")[:_MAX_LEN].strip("_").lower() or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        if base.startswith("__"):
            base = base.lstrip("_") or fallback
        candidate, n = base, 1
        while candidate in self._taken:
            candidate = f"{base}_{n}"
            n += 1
        self._taken.add(candidate)
        return candidate


def literal(value) -> str:
    """Python source for plain data (numbers, bools, None, str, tuples/lists of them).

    Example: ``literal((1, 2))`` -> ``"(1, 2)"``; anything else raises TypeError.
    """
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(float(value))
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return literal(value.item())
    raise TypeError(f"cannot write {type(value).__name__} as a literal in generated code")


class LineWriter:
    """Collects indented source lines. Example: ``w.line("x = 1"); w.text()``."""

    def __init__(self):
        self._lines = []
        self.indent = 0

    def line(self, text: str = "") -> None:
        """Append one line at the current indent."""
        self._lines.append(("    " * self.indent + text) if text else "")

    def text(self) -> str:
        """All lines joined, ending in a newline."""
        return "\n".join(self._lines) + "\n"


# Note [output structure]: a source may return nested dicts, tuples and lists of tensors. The IR
# keeps a flat output list; graph.meta["output_structure"] records the nesting as plain data
# (a leaf is the output's index; {"tuple": [...]}, {"list": [...]}, {"dict": [[key, child], ...]}),
# the emitters write the same nesting back, and ``flatten_outputs`` reads it in the IR's order
# (dict values in insertion order, as torch.export and Keras both keep it).
def nested_outputs(spec, refs) -> str:
    """Python source for the nested output ``spec`` over the flat output expressions ``refs``."""
    if isinstance(spec, int):
        return refs[spec]
    (kind, items), = spec.items()
    if kind == "dict":
        return "{" + ", ".join(f"{literal(key)}: {nested_outputs(child, refs)}" for key, child in items) + "}"
    inner = ", ".join(nested_outputs(child, refs) for child in items)
    return f"[{inner}]" if kind == "list" else f"({inner}{',' if len(items) == 1 else ''})"


def flatten_outputs(out) -> list:
    """The leaves of a model's (possibly nested) outputs in order: dict values in insertion order."""
    if isinstance(out, dict):
        return [leaf for value in out.values() for leaf in flatten_outputs(value)]
    if isinstance(out, (list, tuple)):
        return [leaf for value in out for leaf in flatten_outputs(value)]
    return [out]
