"""Keras emit rule for grid_sample: torch's coordinates, a flat ``take_along_axis`` per neighbour, a weighted sum.

Keras has no ``grid_sample``, so the rule writes torch's steps (Note [grid sample] in ``grid.py``) with
``keras.ops``, the same code for 2-d (NCHW) and 3-d (NCDHW) inputs: each grid component becomes a
pixel coordinate (unnormalized, reflected and clamped per ``padding``); each neighbour's integer
coordinates become one index into the image flattened to (N, C, prod(spatial)), gathered with
``ops.take_along_axis`` and weighted by its (bi/tri)linear weight times an in-image mask (which is
what "zeros" padding reads outside the image).

Example generated code:
    sample_ix = ((grid[..., 0]) + 1.0) * 3.0 - 0.5
    sample_value = ops.take_along_axis(sample_flat, ops.repeat(ops.reshape(sample_index, (-1, 1, 28)), 3, axis=1),
                                       axis=2) * ops.reshape(...)
"""
from __future__ import annotations

from ..resize.grid import GRID_SAMPLE, flat_index_terms, grid_corners, reflect_bounds

__all__ = []

_HINTS = ("ix", "iy", "iz")


def _coordinate(k, node, g, size, a, hint):
    """Pixel coordinate of the normalized grid values ``g`` along an axis of ``size`` (Note [grid sample])."""
    if a["align_corners"]:
        c = f"(({g}) + 1.0) * {k.lit((size - 1) / 2)}"
    else:
        c = f"(({g}) + 1.0) * {k.lit(size / 2)} - 0.5"
    c = k.temp(node, c, hint)
    if a["padding"] == "reflection":
        low, span = reflect_bounds(size, a["align_corners"])
        if span <= 0:
            c = k.temp(node, f"ops.zeros_like({c})", hint)
        else:
            dist = k.temp(node, f"ops.abs({c} - {k.lit(low)})", f"{hint}_dist")
            flips = k.temp(node, f"ops.floor({dist} / {k.lit(span)})", f"{hint}_flips")
            extra = f"({dist} - {flips} * {k.lit(span)})"
            c = k.temp(node, f"ops.where(ops.equal(ops.mod({flips}, 2.0), 0.0), {extra} + {k.lit(low)}, "
                             f"{k.lit(span + low)} - {extra})", hint)
    if a["padding"] != "zeros":
        c = k.temp(node, f"ops.clip({c}, 0.0, {k.lit(float(size - 1))})", hint)
    return c


def _and(terms):
    out = terms[0]
    for term in terms[1:]:
        out = f"ops.logical_and({out}, {term})"
    return out


def _read(k, node, flat, coords, weight, spatial, channels, points):
    """``flat`` (N, C, prod(spatial)) at the integer maps ``coords`` (one per spatial axis), times ``weight``
    and 0 outside the image."""
    inside = _and([f"ops.logical_and({c} >= 0.0, {c} <= {k.lit(float(s - 1))})" for c, s in zip(coords, spatial)])
    inside = f"ops.cast({inside}, {coords[0]}.dtype)"
    flat_index = " + ".join(f"ops.clip({c}, 0.0, {k.lit(float(s - 1))})" + (f" * {k.lit(float(st))}" if st > 1 else "")
                            for c, s, st in flat_index_terms(coords, spatial))
    index = k.temp(node, f"ops.cast({flat_index}, 'int32')", "index")
    index = f"ops.repeat(ops.reshape({index}, (-1, 1, {points})), {channels}, axis=1)"
    scale = f"ops.reshape(({weight}) * {inside}, (-1, 1, {points}))"
    return k.temp(node, f"ops.take_along_axis({flat}, {index}, axis=2) * {scale}", "value")


@GRID_SAMPLE.emits("keras-jax")
def _grid_sample_to_keras(node, k):
    """Linear: 2**rank weighted reads; nearest: one read at the rounded coordinate (half to even)."""
    (x, grid), a = node.inputs, node.attrs
    channels, spatial, out = x.type.shape[1], tuple(x.type.shape[2:]), tuple(grid.type.shape[1:-1])
    rank, points, size = len(spatial), 1, 1
    for n in out:
        points *= n
    for n in spatial:
        size *= n
    g = k.ref(grid)
    coords = [_coordinate(k, node, f"{g}[..., {rank - 1 - axis}]", s, a, _HINTS[rank - 1 - axis])
              for axis, s in enumerate(spatial)]
    flat = k.temp(node, f"ops.reshape({k.ref(x)}, (-1, {channels}, {size}))", "flat")
    if a["mode"] == "nearest":
        terms = [_read(k, node, flat, [f"ops.round({c})" for c in coords], "1.0", spatial, channels, points)]
    else:
        low = [k.temp(node, f"ops.floor({c})", f"{_HINTS[rank - 1 - axis]}0") for axis, c in enumerate(coords)]
        frac = [k.temp(node, f"{c} - {lo}", f"{_HINTS[rank - 1 - axis]}f")
                for axis, (c, lo) in enumerate(zip(coords, low))]
        terms = [_read(k, node, flat, [f"({lo} + {d:.1f})" for lo, d in zip(low, corner)],
                       " * ".join(f"({f})" if d else f"(1.0 - {f})" for f, d in zip(frac, corner)),
                       spatial, channels, points)
                 for corner in grid_corners(rank)]
    k.assign(node, f"ops.reshape({' + '.join(terms)}, (-1, {channels}, {', '.join(map(str, out))}))")
