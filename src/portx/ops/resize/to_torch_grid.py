"""torch-xla emit rule for grid_sample: torch's coordinates, a flat ``torch.gather`` per neighbour, a weighted sum.

PyTorch/XLA has no lowering for ``grid_sampler_2d`` / ``grid_sampler_3d`` (they would run on the CPU),
so the rule writes ``F.grid_sample``'s steps (Note [grid sample] in ``grid.py``) with ops XLA lowers,
the same code for 2-d (NCHW) and 3-d (NCDHW) inputs: each grid component becomes a pixel coordinate
(unnormalized, reflected and clamped per ``padding``), each neighbour one index into the image
flattened to (N, C, prod(spatial)), read with ``torch.gather`` and weighted by its (bi/tri)linear
weight times an in-image mask (what "zeros" padding reads outside).

Example generated code:
    sample_ix = (grid[..., 0] + 1.0) * 3.0 - 0.5
    sample_value = torch.gather(sample_flat, 2, sample_index.flatten(1)[:, None, :].expand(-1, 3, -1)) * ...
"""
from __future__ import annotations

from ..resize.grid import GRID_SAMPLE, flat_index_terms, grid_corners, reflect_bounds

__all__ = []

_HINTS = ("ix", "iy", "iz")


def _coordinate(t, node, g, size, a, hint):
    """Pixel coordinate of the normalized grid values ``g`` along an axis of ``size`` (Note [grid sample])."""
    scale, shift = ((size - 1) / 2, 0.0) if a["align_corners"] else (size / 2, 0.5)
    c = t.temp(node, f"({g} + 1.0) * {t.lit(scale)}" + (f" - {t.lit(shift)}" if shift else ""), hint)
    if a["padding"] == "reflection":
        low, span = reflect_bounds(size, a["align_corners"])
        if span <= 0:
            c = t.temp(node, f"torch.zeros_like({c})", hint)
        else:
            dist = t.temp(node, f"torch.abs({c} - {t.lit(low)})", f"{hint}_dist")
            flips = t.temp(node, f"torch.floor({dist} / {t.lit(span)})", f"{hint}_flips")
            extra = f"({dist} - {flips} * {t.lit(span)})"
            c = t.temp(node, f"torch.where(torch.remainder({flips}, 2.0) == 0, {extra} + {t.lit(low)}, "
                             f"{t.lit(span + low)} - {extra})", hint)
    if a["padding"] != "zeros":
        c = t.temp(node, f"torch.clamp({c}, 0.0, {t.lit(float(size - 1))})", hint)
    return c


def _read(t, node, flat, coords, weight, spatial, channels):
    """``flat`` (N, C, prod(spatial)) at the integer maps ``coords`` (one per spatial axis), times ``weight``
    and 0 outside the image."""
    inside = " & ".join(f"({c} >= 0) & ({c} <= {s - 1})" for c, s in zip(coords, spatial))
    inside = f"({inside}).to({coords[0]}.dtype)"
    flat_index = " + ".join(f"torch.clamp({c}, 0.0, {t.lit(float(s - 1))})" + (f" * {st}" if st > 1 else "")
                            for c, s, st in flat_index_terms(coords, spatial))
    index = t.temp(node, f"({flat_index}).long()", "index")
    index = f"{index}.flatten(1)[:, None, :].expand(-1, {channels}, -1)"
    return t.temp(node, f"torch.gather({flat}, 2, {index}) * (({weight}) * {inside}).flatten(1)[:, None, :]",
                  "value")


@GRID_SAMPLE.emits("torch-xla")
def _grid_sample_to_torch(node, t):
    """Linear: 2**rank weighted reads; nearest: one read at the rounded coordinate (half to even)."""
    (x, grid), a = node.inputs, node.attrs
    channels, spatial, out = x.type.shape[1], tuple(x.type.shape[2:]), tuple(grid.type.shape[1:-1])
    rank, g = len(spatial), t.ref(grid)
    coords = [_coordinate(t, node, f"{g}[..., {rank - 1 - axis}]", s, a, _HINTS[rank - 1 - axis])
              for axis, s in enumerate(spatial)]
    flat = t.temp(node, f"{t.ref(x)}.flatten(2)", "flat")
    if a["mode"] == "nearest":
        terms = [_read(t, node, flat, [f"torch.round({c})" for c in coords], "1.0", spatial, channels)]
    else:
        low = [t.temp(node, f"torch.floor({c})", f"{_HINTS[rank - 1 - axis]}0") for axis, c in enumerate(coords)]
        frac = [t.temp(node, f"{c} - {lo}", f"{_HINTS[rank - 1 - axis]}f")
                for axis, (c, lo) in enumerate(zip(coords, low))]
        terms = [_read(t, node, flat, [f"({lo} + {d:.1f})" for lo, d in zip(low, corner)],
                       " * ".join(f"({f})" if d else f"(1.0 - {f})" for f, d in zip(frac, corner)),
                       spatial, channels)
                 for corner in grid_corners(rank)]
    t.assign(node, f"({' + '.join(terms)}).unflatten(2, {out})")
