"""A difference of two blocks read as an optional part beside a choice (Note [a part beside a choice]).

Note [a part beside a choice]: MobileNetV3's first block has no expand conv and pads before its stride-2 depthwise
conv; a block of its family with an expand conv and a ``padding='same'`` depthwise conv differs from it in one
stretch: ``expand, expand_bn, activation, depthwise`` against ``depthwise_pad, depthwise``. ``difflib`` reads that
as one place, which is neither an optional part nor a choice (Note [optional parts] in optional_parts.py), and it
overlaps the place where the stride-2 blocks differ (``depthwise`` against ``depthwise_pad, depthwise``), so the
first block joined no function. Such a place is split where its longer side's last rows name the layers the other
side names, no more, no fewer (the shortest such tail): the rows before that are an optional part the other block
lacks (``if expand:``), the tail and the other side a choice (``if strided:``). The two sides of that choice read
one value each from before it, which must be the same value (``else: activation = x``, as where the optional part
is followed by rows both write).
"""
from __future__ import annotations

from .optional_run import lhs

__all__ = ["split_places", "choices_read_alike", "one_value"]


def split_places(ops, rows_a, rows_b) -> tuple:
    """(``difflib`` opcodes with each place that is an optional part beside a choice split in two, the
    (rows_a, rows_b) ranges of the choices so split) (Note [a part beside a choice])."""
    out, split = [], []
    for tag, i1, i2, j1, j2 in ops:
        k = _tail(rows_a, range(i1, i2), rows_b, range(j1, j2)) if tag == "replace" else None
        if k is not None:
            out += [("delete", i1, k, j1, j1), ("replace", k, i2, j1, j2)]
            split.append((range(k, i2), range(j1, j2)))
            continue
        k = _tail(rows_b, range(j1, j2), rows_a, range(i1, i2)) if tag == "replace" else None
        if k is not None:
            out += [("insert", i1, i1, j1, k), ("replace", i1, i2, k, j2)]
            split.append((range(i1, i2), range(k, j2)))
            continue
        out.append((tag, i1, i2, j1, j2))
    return out, split


def choices_read_alike(split, rows, where, reads, unify) -> bool:
    """True where both sides of each choice ``split`` found read one value from before it, the same one (``where``:
    ``b``'s variables as ``a``'s, which then maps that value; ``rows``: (a's, b's); ``reads(row)``: its variables
    read; ``unify(va, vb, row)``: ``optional_parts._unify``), and ``b``'s is read nowhere else."""
    rows_a, rows_b = rows
    for span_a, span_b in split:
        (va, *more_a), (vb, *more_b) = (sorted(_choice_reads(side, span, reads) or [None]) for side, span in
                                        ((rows_a, span_a), (rows_b, span_b)))
        got = where.get(vb)
        if more_a or more_b or got is None or got != va and not unify(va, got, span_a.start) or \
                any(vb in reads(rows_b[j]) for j in range(len(rows_b)) if j not in span_b):
            return False
        where[vb] = va  # read there only: the choice's rows read one value whichever block writes them
    return True


def _choice_reads(rows, span, reads) -> set:
    """The values the rows ``span`` read that they do not make."""
    made, found = set(), set()
    for i in span:
        found.update(v for v in reads(rows[i]) if v not in made)
        made.update(lhs(rows[i]))
    return found


def _tail(long, at_long, short, at_short):
    """Where the rows ``at_long`` of ``long`` start to name the layers ``at_short`` of ``short`` name (the latest
    such row, more rows left than ``at_short`` has), or None."""
    if len(at_long) <= len(at_short) or not at_short:
        return None
    names = _named([short[j] for j in at_short])
    for k in range(at_long.stop - 1, at_long.start, -1):
        if names and _named([long[i] for i in range(k, at_long.stop)]) == names:
            return k if at_long.stop - k != len(at_short) else None
    return None


def _named(rows) -> set:
    return {v for parts in rows for k, v in parts if k == "s"}


def one_value(numbers, positions, place_of, feeds) -> None:
    """Make a number of an optional part one column with another that every block writing it writes alike (Note [a
    part beside a choice]): MobileNetV3's expanded filters, which its expand conv and its squeeze-excite's second
    conv read (the first block has no expand conv, some blocks no squeeze-excite: two optional parts feeding one
    argument, every block writing one of them), and its activation, which the expand conv's and the depthwise conv's
    activations call (a function, never a number: a number is an argument only as ``optional_params`` finds it)."""
    for p in sorted(p for p in positions if p in feeds):  # a torch class's __init__ numbers feed no statement
        for q in range(len(numbers[0])):
            if q == p or q in positions and (place_of.get(p) in (None, place_of.get(q)) or feeds[p] != feeds.get(q)
                                             or any(n[p] is None and n[q] is None for n in numbers)) or \
                    q not in positions and any(n[q] is None or _literal(n[q]) for n in numbers) or \
                    any(n[p] is not None and n[q] is not None and n[p] != n[q] for n in numbers) or \
                    all(n[p] is None or n[q] is None for n in numbers):
                continue
            for n in numbers:
                n[p] = n[q] if n[p] is None else n[p]
            positions.discard(p)
            break


def _literal(value) -> bool:
    """True for a number or a tuple of them as a statement writes it (``3``, ``1e-05``, ``((0, 0), (0, 1))``)."""
    return not value.replace("_", "").replace(".", "").isalnum() or value[0].isdigit() or value[0] == "-"
