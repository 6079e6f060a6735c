"""torch-xla emit rule for grid_sample: torch's coordinates, a flat ``torch.gather`` per neighbour, a weighted sum.

PyTorch/XLA has no lowering for ``grid_sampler_2d`` (it would run on the CPU), so the rule writes
``F.grid_sample``'s steps (Note [grid sample] in ``grid.py``) with ops XLA lowers: each (x, y) of the
grid becomes a pixel coordinate (unnormalized, reflected and clamped per ``padding``), each
neighbour an index into the image flattened to (N, C, H * W), read with ``torch.gather`` and
weighted by its bilinear weight times an in-image mask (what "zeros" padding reads outside).

Example generated code:
    sample_ix = (grid[..., 0] + 1.0) * 3.0 - 0.5
    sample_value = torch.gather(sample_flat, 2, sample_index.flatten(1)[:, None, :].expand(-1, 3, -1)) * ...
"""
from __future__ import annotations

from ..resize.grid import GRID_SAMPLE, reflect_bounds

__all__ = []


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


def _read(t, node, flat, iy, ix, weight, shape):
    """``flat`` (N, C, H * W) at the integer maps (iy, ix), times ``weight`` and 0 outside the image."""
    c, h, w = shape
    inside = (f"(({iy} >= 0) & ({iy} <= {h - 1}) & ({ix} >= 0) & ({ix} <= {w - 1})).to({iy}.dtype)")
    index = t.temp(node, f"(torch.clamp({iy}, 0.0, {t.lit(float(h - 1))}) * {w} + "
                         f"torch.clamp({ix}, 0.0, {t.lit(float(w - 1))})).long()", "index")
    index = f"{index}.flatten(1)[:, None, :].expand(-1, {c}, -1)"
    return t.temp(node, f"torch.gather({flat}, 2, {index}) * (({weight}) * {inside}).flatten(1)[:, None, :]",
                  "value")


@GRID_SAMPLE.emits("torch-xla")
def _grid_sample_to_torch(node, t):
    """Bilinear: four weighted reads; nearest: one read at the rounded coordinate (half to even)."""
    (x, grid), a = node.inputs, node.attrs
    _, c, h, w = x.type.shape
    ho, wo = grid.type.shape[1:3]
    g = t.ref(grid)
    ix = _coordinate(t, node, f"{g}[..., 0]", w, a, "ix")
    iy = _coordinate(t, node, f"{g}[..., 1]", h, a, "iy")
    flat = t.temp(node, f"{t.ref(x)}.flatten(2)", "flat")
    if a["mode"] == "nearest":
        terms = [_read(t, node, flat, f"torch.round({iy})", f"torch.round({ix})", "1.0", (c, h, w))]
    else:
        x0, y0 = t.temp(node, f"torch.floor({ix})", "x0"), t.temp(node, f"torch.floor({iy})", "y0")
        fx, fy = t.temp(node, f"{ix} - {x0}", "fx"), t.temp(node, f"{iy} - {y0}", "fy")
        terms = [_read(t, node, flat, f"({y0} + {dy:.1f})", f"({x0} + {dx:.1f})", f"({wy}) * ({wx})", (c, h, w))
                 for dy, wy in ((0, f"1.0 - {fy}"), (1, fy)) for dx, wx in ((0, f"1.0 - {fx}"), (1, fx))]
    t.assign(node, f"({' + '.join(terms)}).unflatten(2, ({ho}, {wo}))")
