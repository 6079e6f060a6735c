"""grid_sample (torch ``F.grid_sample`` / ``aten::grid_sampler_2d``): sample an NCHW tensor at given points.

Note [grid sample]: ``grid`` (N, Ho, Wo, 2) holds (x, y) in [-1, 1]. torch maps each to a pixel
coordinate (``align_corners``: -1 and 1 are the corner pixels' centres, else their outer edges),
then applies ``padding``: "border" clamps the coordinate into the image, "reflection" mirrors it
off the borders (about the centres with ``align_corners``, the edges without) and clamps;
"zeros" leaves it, and samples outside the image read 0. "bilinear" mixes the four neighbours by
their distances, "nearest" reads the neighbour at the rounded coordinate (half to even, as
``nearbyint``). The NumPy reference here follows torch's CPU kernel, and both emit rules compute
the same steps: ``F.grid_sample`` itself for torch-xla, and for Keras the coordinates, one flat
``take_along_axis`` per neighbour and a weighted sum.

Example IR:
    %y: float32[1x3x5x6] = grid_sample(%x, %grid) {mode="bilinear", padding="zeros", align_corners=False}
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef

__all__ = ["GRID_SAMPLE", "GRID_MODES", "GRID_PADDINGS", "reflect_bounds"]

GRID_MODES = ("bilinear", "nearest")
GRID_PADDINGS = ("zeros", "border", "reflection")

GRID_SAMPLE = OpDef("grid_sample", ("x", "grid"), {"mode": "bilinear", "padding": "zeros", "align_corners": False},
                    family="resize", doc="torch grid_sample on NCHW: bilinear or nearest, zeros/border/reflection.")


@GRID_SAMPLE.infer
def _grid_sample_type(x, grid, *, mode, padding, align_corners):
    if mode not in GRID_MODES or padding not in GRID_PADDINGS:
        raise ValueError(f"grid_sample: mode {mode!r} / padding {padding!r} not in {GRID_MODES} / {GRID_PADDINGS}")
    if x.rank != 4 or grid.rank != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ValueError(f"grid_sample: input {x} and grid {grid} are not (N, C, H, W) and (N, Ho, Wo, 2)")
    return x.with_shape((x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]))


def reflect_bounds(size, align_corners) -> tuple:
    """(low, span) of torch's reflection: coordinates mirror about ``low`` and ``low + span``."""
    return (0.0, float(size - 1)) if align_corners else (-0.5, float(size))


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


def _read(x, iy, ix):
    """x[n, :, iy, ix] for integer maps (N, Ho, Wo), 0 outside the image: (N, C, Ho, Wo)."""
    n, _, h, w = x.shape
    inside = (iy >= 0) & (iy <= h - 1) & (ix >= 0) & (ix <= w - 1)
    yc, xc = np.clip(iy, 0, h - 1).astype(np.int64), np.clip(ix, 0, w - 1).astype(np.int64)
    out = x[np.arange(n)[:, None, None], :, yc, xc]  # (N, Ho, Wo, C)
    return np.moveaxis(out * inside[..., None], -1, 1)


@GRID_SAMPLE.reference
def _grid_sample_numpy(x, grid, *, mode, padding, align_corners):
    _, _, h, w = x.shape
    g = grid.astype(np.float64)
    ix, iy = (_coordinate(g[..., i], size, padding, align_corners) for i, size in ((0, w), (1, h)))
    xd = x.astype(np.float64)
    if mode == "nearest":
        return _read(xd, np.rint(iy), np.rint(ix)).astype(x.dtype)
    x0, y0 = np.floor(ix), np.floor(iy)
    fx, fy = ix - x0, iy - y0
    out = sum(_read(xd, y0 + dy, x0 + dx) * (wy * wx)[:, None]
              for dy, wy in ((0, 1 - fy), (1, fy)) for dx, wx in ((0, 1 - fx), (1, fx)))
    return out.astype(x.dtype)
