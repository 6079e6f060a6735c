"""grid_sample (torch ``F.grid_sample``, ``aten::grid_sampler_2d`` / ``_3d``): sample NCHW or NCDHW at given points.

Note [grid sample]: ``grid`` (N, *out, k) holds one point per output position for a k-d input
(N, C, *spatial), k = 2 (H, W) or 3 (D, H, W); its last axis is (x, y) or (x, y, z) in [-1, 1],
so grid component i indexes spatial axis k - 1 - i. torch maps each to a pixel coordinate
(``align_corners``: -1 and 1 are the corner pixels' centres, else their outer edges), then applies
``padding``: "border" clamps the coordinate into the image, "reflection" mirrors it off the
borders (about the centres with ``align_corners``, the edges without) and clamps; "zeros" leaves
it, and samples outside the image read 0. "bilinear" (trilinear in 3-d) mixes the 2**k
neighbours by their distances, "nearest" reads the neighbour at the rounded coordinate (half to
even, as ``nearbyint``). The NumPy reference here follows torch's CPU kernel; neither target has a TPU
lowering of grid_sample, so ``passes/legalize/decompose.py`` writes the same steps once as IR ops for both
(``grid_sample_as_gathers``, the op's trait ``decomposed``): the coordinates, one flat gather per neighbour and a
weighted sum.

Example IR:
    %y: float32[1x3x5x6] = grid_sample(%x, %grid) {mode="bilinear", padding="zeros", align_corners=False}
    %v: float32[1x2x4x5x6] = grid_sample(%x3, %grid3) {mode="nearest", padding="border", align_corners=True}
"""
from __future__ import annotations

import itertools

import numpy as np

from ...ir import OpDef

__all__ = ["GRID_SAMPLE", "GRID_MODES", "GRID_PADDINGS", "reflect_bounds", "grid_corners", "flat_index_terms"]

GRID_MODES = ("bilinear", "nearest")
GRID_PADDINGS = ("zeros", "border", "reflection")

GRID_SAMPLE = OpDef("grid_sample", ("x", "grid"), {"mode": "bilinear", "padding": "zeros", "align_corners": False},
                    family="resize",
                    doc="torch grid_sample on NCHW / NCDHW: bilinear (trilinear) or nearest, zeros/border/reflection.")


@GRID_SAMPLE.infer
def _grid_sample_type(x, grid, *, mode, padding, align_corners):
    if mode not in GRID_MODES or padding not in GRID_PADDINGS:
        raise ValueError(f"grid_sample: mode {mode!r} / padding {padding!r} not in {GRID_MODES} / {GRID_PADDINGS}")
    k = x.rank - 2
    if k not in (2, 3) or grid.rank != x.rank or grid.shape[-1] != k or grid.shape[0] != x.shape[0]:
        raise ValueError(f"grid_sample: input {x} and grid {grid} are not (N, C, *spatial) and (N, *out, k) "
                         "with k = 2 or 3 spatial axes")
    return x.with_shape((x.shape[0], x.shape[1], *grid.shape[1:-1]))


def reflect_bounds(size, align_corners) -> tuple:
    """(low, span) of torch's reflection: coordinates mirror about ``low`` and ``low + span``."""
    return (0.0, float(size - 1)) if align_corners else (-0.5, float(size))


def grid_corners(k: int) -> list:
    """The 2**k neighbour offsets of linear sampling, one 0/1 per spatial axis (torch's order)."""
    return list(itertools.product((0, 1), repeat=k))


def flat_index_terms(coords, spatial) -> list:
    """(coordinate, size, row-major stride) per spatial axis: the terms of the flat index into ``spatial``."""
    strides = [1] * len(spatial)
    for axis in range(len(spatial) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * spatial[axis + 1]
    return list(zip(coords, spatial, strides))


def _unnormalize(g, size, align_corners):
    return (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2


def _reflect(c, size, align_corners):
    low, span = reflect_bounds(size, align_corners)
    if span <= 0:
        return np.zeros_like(c)
    c = np.abs(c - low)
    flips, extra = np.floor(c / span), np.fmod(c, span)
    return np.where(flips % 2 == 0, extra + low, span - extra + low)


def _coordinate(g, size, padding, align_corners):
    c = _unnormalize(g, size, align_corners)
    if padding == "reflection":
        c = _reflect(c, size, align_corners)
    return np.clip(c, 0, size - 1) if padding != "zeros" else c


def _read(x, coords):
    """x[n, :, *coords] for integer maps (N, *out) per spatial axis, 0 outside the image: (N, C, *out)."""
    n, spatial = x.shape[0], x.shape[2:]
    inside = np.logical_and.reduce([(c >= 0) & (c <= s - 1) for c, s in zip(coords, spatial)])
    clipped = [np.clip(c, 0, s - 1).astype(np.int64) for c, s in zip(coords, spatial)]
    batch = np.arange(n).reshape((n,) + (1,) * (coords[0].ndim - 1))
    out = x[(batch, slice(None), *clipped)]  # (N, *out, C)
    return np.moveaxis(out * inside[..., None], -1, 1)


@GRID_SAMPLE.reference
def _grid_sample_numpy(x, grid, *, mode, padding, align_corners):
    spatial, g = x.shape[2:], grid.astype(np.float64)
    k = len(spatial)
    coords = [_coordinate(g[..., k - 1 - axis], size, padding, align_corners) for axis, size in enumerate(spatial)]
    xd = x.astype(np.float64)
    if mode == "nearest":
        return _read(xd, [np.rint(c) for c in coords]).astype(x.dtype)
    low = [np.floor(c) for c in coords]
    frac = [c - lo for c, lo in zip(coords, low)]
    out = sum(_read(xd, [lo + d for lo, d in zip(low, corner)])
              * np.prod([f if d else 1 - f for f, d in zip(frac, corner)], axis=0)[:, None]
              for corner in grid_corners(k))
    return out.astype(x.dtype)
