"""Fuzz families for data movement: reshape, permute, expand, concat, stack, split, slicing, gathers, pad.

Used by ``fuzz_families.py``; every op here moves data only, so exact inputs give exact outputs.
Sizes stay positive (no empty slices or split pieces) and ranks stay at most 5.

Example:
    >>> name, accepts, build = SHAPE_FAMILIES[0]
"""
from __future__ import annotations

import numpy as np

from portx.ops.pad import PAD
from portx.ops.shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from portx.ops.shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SELECT, SLICE, TILE

__all__ = ["SHAPE_FAMILIES"]


def _prime_factors(n):
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


def _reshape(b, x):
    """A static reshape to a random factorization of the element count (rank 1-4)."""
    dims = [1] * b.int(1, 4)
    for p in _prime_factors(int(np.prod(x.type.shape))):
        dims[b.int(0, len(dims) - 1)] *= p
    return b.emit(RESHAPE, [x], {"shape": tuple(dims)}, exact=True)


def _permute(b, x):
    return b.emit(PERMUTE, [x], {"perm": tuple(b.permutation(list(range(x.type.rank))))}, exact=True)


def _expand(b, x):
    shape = [d if d != 1 else b.int(1, 3) for d in x.type.shape]
    if x.type.rank < 4 and b.flag():
        shape = [b.int(1, 2)] + shape
    return b.emit(EXPAND, [x], {"shape": tuple(shape)}, exact=True)


def _like(b, x, shape):
    """A value of ``x``'s dtype and ``shape``: x itself, a matching value, or a stored array."""
    if shape == x.type.shape and b.flag():
        return x
    found = b.existing(lambda v: v.type.dtype == x.type.dtype and v.type.shape == shape)
    return found if found is not None and b.flag() else b.param(b.data(shape, x.type.dtype), "c")


def _concat(b, x):
    """x with 1-2 pieces of its dtype that differ only on the axis, in a random order."""
    axis = b.int(0, x.type.rank - 1)
    parts = [x]
    for _ in range(b.int(1, 2)):
        shape = x.type.shape[:axis] + (b.int(1, 3),) + x.type.shape[axis + 1:]
        parts.append(_like(b, x, shape))
    return b.emit(CONCAT, b.permutation(parts), {"axis": axis}, exact=True)


def _stack(b, x):
    parts = [x] + [_like(b, x, x.type.shape) for _ in range(b.int(1, 2))]
    return b.emit(STACK, parts, {"axis": b.int(0, x.type.rank)}, exact=True)


def _split(b, x):
    """Consecutive non-empty pieces along an axis (one piece when the axis has size 1)."""
    axis = b.int(0, x.type.rank - 1)
    size = x.type.shape[axis]
    points = list(range(1, size))
    cuts = sorted(b.permutation(points)[:b.int(0, min(3, len(points)))])  # up to 3 distinct cut points
    sizes = tuple(int(e - s) for s, e in zip([0] + cuts, cuts + [size]))
    return b.emit(SPLIT, [x], {"sizes": sizes, "axis": axis}, exact=True)


def _slice(b, x):
    axis = b.int(0, x.type.rank - 1)
    size = x.type.shape[axis]
    start = b.int(0, size - 1)
    attrs = {"axis": axis, "start": start, "end": b.int(start + 1, size), "step": b.int(1, 3)}
    return b.emit(SLICE, [x], attrs, exact=True)


def _select(b, x):
    axis = b.int(0, x.type.rank - 1)
    return b.emit(SELECT, [x], {"axis": axis, "index": b.int(0, x.type.shape[axis] - 1)}, exact=True)


def _index_select(b, x):
    """numpy.take with a stored index (negative entries wrap) or an integer graph input."""
    axis = b.int(0, x.type.rank - 1)
    size = x.type.shape[axis]
    shape = b.pick([(b.int(1, 4),), (b.int(1, 3), b.int(1, 2))])
    if x.type.rank + len(shape) > 5 or b.int(0, 3) == 0:
        index = b.input(shape[-1:], b.pick(["int32", "int64"]))  # make_inputs keeps ids below size
    else:
        index = b.param(b.data(shape, "int64", -size, size), "index")
    return b.emit(INDEX_SELECT, [x, index], {"axis": axis}, exact=True)


def _gather(b, x):
    axis = b.int(0, x.type.rank - 1)
    shape = x.type.shape[:axis] + (b.int(1, 4),) + x.type.shape[axis + 1:]
    index = b.param(b.data(shape, "int64", 0, x.type.shape[axis]), "index")
    return b.emit(GATHER, [x, index], {"axis": axis}, exact=True)


def _tile(b, x):
    reps = tuple(b.int(1, 3) for _ in range(b.int(1, min(x.type.rank + 1, 4))))
    return b.emit(TILE, [x], {"reps": reps}, exact=True)


def _flip(b, x):
    return b.emit(FLIP, [x], {"axes": b.axes(x.type.rank)}, exact=True)


def _roll(b, x):
    """numpy.roll of the flattened tensor, or per axis."""
    if b.flag():
        return b.emit(ROLL, [x], {"shifts": (b.int(-7, 7),), "axes": None}, exact=True)
    axes = b.axes(x.type.rank)
    return b.emit(ROLL, [x], {"shifts": tuple(b.int(-7, 7) for _ in axes), "axes": axes}, exact=True)


def _pad(b, x):
    """Constant padding (negative pads crop) on any axis; reflect/edge/wrap on the last one or two."""
    rank, shape = x.type.rank, x.type.shape
    mode = b.pick(["constant", "constant", "reflect", "edge", "wrap"]) if rank >= 2 else "constant"
    padded = range(rank) if mode == "constant" else range(max(rank - b.int(1, 2), 1), rank)
    pads = []
    for axis, size in enumerate(shape):
        if axis not in padded:
            pads.append((0, 0))
        elif mode == "constant":
            lo = b.int(-1 if size > 1 else 0, 2)
            pads.append((lo, b.int(-1 if size - max(-lo, 0) > 1 else 0, 2)))
        else:
            limit = {"reflect": size - 1, "edge": 2, "wrap": size}[mode]
            pads.append((b.int(0, min(limit, 2)), b.int(0, min(limit, 2))))
    value = float(b.int(-2, 2)) if mode == "constant" and x.type.dtype != "bool" else 0.0
    return b.emit(PAD, [x], {"pads": tuple(pads), "mode": mode, "value": value}, exact=True)


def _ranked(low, high=5):
    return lambda b, v: low <= v.type.rank <= high


SHAPE_FAMILIES = [
    ("pad", _ranked(1), _pad),
    ("reshape", _ranked(0), _reshape),
    ("permute", _ranked(1), _permute),
    ("expand", _ranked(0), _expand),
    ("concat", _ranked(1), _concat),
    ("stack", _ranked(0, 3), _stack),
    ("split", _ranked(1), _split),
    ("slice", _ranked(1), _slice),
    ("select", _ranked(1), _select),
    ("index_select", _ranked(1), _index_select),
    ("gather", _ranked(1), _gather),
    ("tile", _ranked(0), _tile),
    ("flip", _ranked(1), _flip),
    ("roll", _ranked(1), _roll),
]
