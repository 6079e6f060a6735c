"""Keras emit rule for grid_sample: torch's coordinates, a flat ``take_along_axis`` per neighbour, a weighted sum.

Keras has no ``grid_sample``, so the rule writes torch's steps (Note [grid sample] in ``grid.py``) with
``keras.ops``: each (x, y) of the grid becomes a pixel coordinate (unnormalized, reflected and
clamped per ``padding``); each neighbour's (row, column) becomes an index into the image flattened
to (N, C, H * W), gathered with ``ops.take_along_axis`` and weighted by its bilinear weight times
an in-image mask (which is what "zeros" padding reads outside the image).

Example generated code:
    sample_ix = ((grid[..., 0]) + 1.0) * 3.0 - 0.5
    sample_value = ops.take_along_axis(sample_flat, ops.repeat(ops.reshape(sample_index, (-1, 1, 28)), 3, axis=1),
                                       axis=2) * ops.reshape(...)
"""
from __future__ import annotations

from ..resize.grid import GRID_SAMPLE, reflect_bounds

__all__ = []


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


def _read(k, node, flat, iy, ix, weight, shape):
    """``flat`` (N, C, H * W) at the integer maps (iy, ix), times ``weight`` and 0 outside the image."""
    _, c, h, w, ho, wo = shape
    inside = (f"ops.cast(ops.logical_and(ops.logical_and({iy} >= 0.0, {iy} <= {k.lit(float(h - 1))}), "
              f"ops.logical_and({ix} >= 0.0, {ix} <= {k.lit(float(w - 1))})), {iy}.dtype)")
    index = k.temp(node, f"ops.cast(ops.clip({iy}, 0.0, {k.lit(float(h - 1))}) * {k.lit(float(w))} + "
                         f"ops.clip({ix}, 0.0, {k.lit(float(w - 1))}), 'int32')", "index")
    index = f"ops.repeat(ops.reshape({index}, (-1, 1, {ho * wo})), {c}, axis=1)"
    scale = f"ops.reshape(({weight}) * {inside}, (-1, 1, {ho * wo}))"
    return k.temp(node, f"ops.take_along_axis({flat}, {index}, axis=2) * {scale}", "value")


@GRID_SAMPLE.emits("keras-jax")
def _grid_sample_to_keras(node, k):
    """Bilinear: four weighted reads; nearest: one read at the rounded coordinate (half to even)."""
    (x, grid), a = node.inputs, node.attrs
    n, c, h, w = x.type.shape
    ho, wo = grid.type.shape[1:3]
    shape = (n, c, h, w, ho, wo)
    g = k.ref(grid)
    ix = _coordinate(k, node, f"{g}[..., 0]", w, a, "ix")
    iy = _coordinate(k, node, f"{g}[..., 1]", h, a, "iy")
    flat = k.temp(node, f"ops.reshape({k.ref(x)}, (-1, {c}, {h * w}))", "flat")
    if a["mode"] == "nearest":
        terms = [_read(k, node, flat, f"ops.round({iy})", f"ops.round({ix})", "1.0", shape)]
    else:
        x0, y0 = k.temp(node, f"ops.floor({ix})", "x0"), k.temp(node, f"ops.floor({iy})", "y0")
        fx, fy = k.temp(node, f"{ix} - {x0}", "fx"), k.temp(node, f"{iy} - {y0}", "fy")
        terms = [_read(k, node, flat, f"({y0} + {dy:.1f})", f"({x0} + {dx:.1f})", f"({wy}) * ({wx})", shape)
                 for dy, wy in ((0, f"1.0 - {fy}"), (1, fy)) for dx, wx in ((0, f"1.0 - {fx}"), (1, fx))]
    k.assign(node, f"ops.reshape({' + '.join(terms)}, (-1, {c}, {ho}, {wo}))")
