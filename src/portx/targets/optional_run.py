"""The statements block ``A`` has beyond block ``B`` (a projection shortcut), found in the templated statements
both targets write blocks from, for one torch class or one Keras function with a flag (Note [optional submodules]
in targets/torch_xla/optional.py; Note [an optional shortcut] in targets/keras_jax/optional.py).

Example:
    >>> run = find_run(body_a, body_b, uses)   # uses: A's rows that use what B lacks
    >>> run.rows, run.output, run.input
    (range(7, 9), 'v_0_bn', 'x')
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .structure import number_params

__all__ = ["Run", "find_run", "arrange", "aligned", "optional_params", "lhs"]


@dataclass
class Run:
    """``A``'s optional statements: ``rows`` of ``A``'s statements in ``order`` (the run gathered at its first),
    the value ``output`` the run makes for later rows and ``input``, the input ``B`` reads there; ``swapped``: rows
    (in ``order``) whose two operands are read the other way round (``_COMMUTES``)."""

    rows: range
    output: str
    order: list
    input: str = ""
    swapped: set = field(default_factory=set)


def lhs(parts) -> list:
    """The variables a statement assigns (before its `` = ``)."""
    names = []
    for kind, value in parts:
        if kind == "t" and " = " in value:
            return names
        if kind == "v":
            names.append(value)
        elif kind != "t" or value.strip(", "):
            return []
    return []


def find_run(body_a, body_b, uses) -> Run | None:
    """The run of ``body_a``'s statements ``uses`` (those that use what ``B`` lacks) where ``body_a``'s other
    statements, reading ``B``'s input where ``A`` reads the run's output, are ``body_b``'s; else None. The run must
    read only the block's inputs and its own values, and one of its values, its output, is read after it."""
    if not uses:
        return None
    order = list(range(uses[0])) + uses + [i for i in range(uses[0], len(body_a.rows)) if i not in uses]
    rows = [body_a.rows[i] for i in order]  # gathered at its first: it reads only inputs and its own values
    run = range(uses[0], uses[0] + len(uses))
    made = [v for i in run for v in lhs(rows[i][0])]
    reads = {v for i in run for k, v in rows[i][0][len(lhs(rows[i][0])):] if k == "v"}
    later = {v for i, (parts, _) in enumerate(rows) if i not in run for k, v in parts if k == "v"}
    out = [v for v in made if v in later or v in body_a.outputs]
    if len(out) != 1 or out[0] in body_a.outputs or not reads <= set(body_a.inputs) | set(made):
        return None
    found = Run(run, out[0], order)
    return found if _same_body(found, rows, body_a, body_b) else None


def _same_body(found, rows, body_a, body_b) -> bool:
    """True when ``rows`` (``A``'s, arranged) but the run's are ``body_b``'s; sets ``found.input`` and
    ``found.swapped``."""
    kept_at = [i for i in range(len(rows)) if i not in found.rows]
    if len(kept_at) != len(body_b.rows):
        return False
    where = {}
    for at, (pb, cb) in zip(kept_at, body_b.rows):
        pa, ca = rows[at]
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
    return True


def _match(pa, pb, where) -> bool:
    """True where statement ``pa`` is ``pb`` with ``a``'s variables read as ``b``'s; adds to ``where`` (``a``'s
    variable -> ``b``'s) only then."""
    if pa is None or len(pa) != len(pb):
        return False
    found = dict(where)
    for (ka, va), (kb, vb) in zip(pa, pb):
        if ka != kb or ka in ("t", "s", "e", "a") and va != vb or ka == "n" and real(va) != real(vb):
            return False
        if ka == "v" and found.setdefault(va, vb) != vb:
            return False
    where.update(found)
    return True


#: statements whose two operands may be written either way round: the torch emitter adds in place into the operand
#: it may overwrite, so where ``B`` adds its input (``add = v_3_bn.add_(x)``), ``A`` adds into its shortcut instead
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


def arrange(run, body) -> tuple:
    """(rows, numbers) of ``body`` (an Instance of a block with the optional ``run``) in the order its class or
    function writes: the run gathered, the operands of ``run.swapped`` swapped."""
    rows = [body.rows[i] for i in run.order]
    rows = [(_swapped(parts), comment) if i in run.swapped else (parts, comment) for i, (parts, comment) in
            enumerate(rows)]
    return rows, [v for parts, _ in rows for k, v in parts if k == "n"]


def real(number) -> bool:
    """True for a float literal (``1e-05``): compared by kind, not value."""
    return "." in number or "e" in number


def aligned(numbers, size, positions) -> list | None:
    """A block without the optional part's ``numbers`` laid out at the positions of one with it (None there); None
    where their count does not fit."""
    if len(numbers) != size - len(positions):
        return None
    found, rest = [], iter(numbers)
    for i in range(size):
        found.append(None if i in positions else next(rest))
    return found


def optional_params(numbers, positions, keywords=None) -> tuple | None:
    """(params, columns) as ``number_params`` over blocks' ``numbers`` laid out alike (``aligned``): the columns
    every block has become arguments as there; an optional column is an argument where it equals one (or is a whole
    multiple of one) in every block that has it, as written where it is the same number in all of them (always for
    0 and 1). None where neither; with ``keywords`` (a list), such a column is an argument of its own instead, last
    in ``columns`` and its column appended to ``keywords`` (a keyword argument: Note [optional parts])."""
    common = [i for i in range(len(numbers[0])) if i not in positions]
    found = number_params([[n[i] for i in common] for n in numbers])
    if found is None:
        return None
    params = {common[c]: p for c, p in found[0].items()}
    columns = [common[c] for c in found[1]]
    for i in sorted(positions):
        having = [n for n in numbers if n[i] is not None]
        values = [n[i] for n in having]
        if set(values) <= {"0", "1"} and len(set(values)) == 1:
            continue
        found = None if set(values) <= {"0", "1"} else \
            _argument(values, [[n[col] for n in having] for col in columns + (keywords or [])])  # 0, 1: too common
        if found is None and len(set(values)) > 1:
            if keywords is None:
                return None
            keywords.append(i)
        elif found is not None:
            params[i] = found
    for i in keywords or ():
        params[i] = (len(columns), 1)
        columns.append(i)
    return params, columns


def _argument(values, bases) -> tuple | None:
    """(parameter, multiple) for an optional column ``values``: the first argument equal to it in every block that
    has it, else the first it is a whole multiple of; None where none is."""
    for want_one in (True, False):
        for p, base in enumerate(bases):
            if not all(b and v.isdigit() and b.isdigit() and int(b) for v, b in zip(values, base)) or set(base) == {"1"}:
                continue  # not a multiple of a stride that is 1 wherever the part is
            ratios = {int(v) // int(b) if int(v) % int(b) == 0 else 0 for v, b in zip(values, base)}
            if len(ratios) == 1 and 0 not in ratios and (ratios == {1} or not want_one):
                return p, ratios.pop()
    return None
