"""Torch import rule for resize: every ``aten::upsample_*`` overload (nearest, nearest-exact, (bi/tri)linear,
bicubic; 1-d, 2-d and 3-d).

Both ATen forms arrive here: ``.vec`` (``output_size`` or ``scale_factors``) and the plain per-axis
form (``scales_d`` / ``scales_h`` / ``scales_w``). The IR keeps torch's scale factors, because torch maps output
coordinates with ``1 / scale`` when one was given, not with ``in / out`` (Note [resize as matrices]
in ``resize/__init__.py``); ``align_corners`` ignores them, so they are dropped there.

Example:
    aten::upsample_bilinear2d.vec(x, None, False, [2.0, 2.0]) on (1, 3, 4, 4) ->
    resize(%x) {size=(8, 8), mode="linear", align_corners=False, scales=(2.0, 2.0)}

``aten::_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` (``antialias=True``) are Keras' antialiased resize.
``aten::grid_sampler(_2d/_3d)`` (``F.grid_sample`` on 4-d or 5-d inputs) is ``grid_sample`` (Note [grid sample] in
``grid.py``).
"""
from __future__ import annotations

from ..resize import RESIZE
from ..resize.from_keras import resize_like_keras
from ..resize.grid import GRID_MODES, GRID_PADDINGS, GRID_SAMPLE

__all__ = []

_ATEN_MODES = {"aten::upsample_nearest1d": "nearest", "aten::upsample_nearest2d": "nearest",
               "aten::_upsample_nearest_exact1d": "nearest_exact", "aten::_upsample_nearest_exact2d": "nearest_exact",
               "aten::upsample_linear1d": "linear", "aten::upsample_bilinear2d": "linear",
               "aten::upsample_bicubic2d": "cubic", "aten::upsample_nearest3d": "nearest",
               "aten::_upsample_nearest_exact3d": "nearest_exact", "aten::upsample_trilinear3d": "linear"}
_SCALE_ARGS = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}


def _torch_scales(call, rank):
    """Scale factors as torch's kernel sees them: from ``scale_factors`` (.vec) or ``scales_d/_h/_w``."""
    given = call.arg("scale_factors")
    if given is None:
        given = [call.arg(name) for name in _SCALE_ARGS[rank]]
    scales = tuple(float(s) if s is not None and s > 0 else None for s in given)
    return None if all(s is None for s in scales) else scales


@RESIZE.imports("torch", *_ATEN_MODES)
def _resize_from_aten(call):
    """All upsample overloads: ``.vec`` (output_size or scale_factors) and the plain per-axis form."""
    mode = _ATEN_MODES[call.node.target._schema.name]
    x = call.arg("input", call.arg("self"))
    size = tuple(call.out_type(0).shape[2:])  # torch's own floor(in * scale) when only scales were given
    align = bool(call.arg("align_corners", False)) and not mode.startswith("nearest")
    scales = None if align else _torch_scales(call, len(size))  # align_corners ignores scale factors
    return call.emit(RESIZE, [x], {"size": size, "mode": mode, "align_corners": align, "scales": scales})


@GRID_SAMPLE.imports("torch", "aten::grid_sampler", "aten::grid_sampler_2d", "aten::grid_sampler_3d")
def _grid_sample_from_aten(call):
    """``F.grid_sample`` on 4-d or 5-d inputs: ATen's interpolation_mode (0 bilinear, 1 nearest) and padding_mode."""
    x, grid = call.arg("input"), call.arg("grid")
    mode, padding = int(call.arg("interpolation_mode", 0)), int(call.arg("padding_mode", 0))
    if x.type.rank not in (4, 5):
        call.unsupported(f"grid_sample of a rank-{x.type.rank} input (only 4-d NCHW and 5-d NCDHW are supported)")
    if mode >= len(GRID_MODES):
        call.unsupported("grid_sample with mode='bicubic' (bilinear and nearest are supported)")
    return call.emit(GRID_SAMPLE, [x, grid], {"mode": GRID_MODES[mode], "padding": GRID_PADDINGS[padding],
                                              "align_corners": bool(call.arg("align_corners", False))})


_AA_METHODS = {"aten::_upsample_bilinear2d_aa": "bilinear", "aten::_upsample_bicubic2d_aa": "bicubic"}


@RESIZE.imports("torch", *_AA_METHODS)
def _antialiased_resize_from_aten(call):
    """``F.interpolate(..., antialias=True)``: torch's antialiased kernels are ``jax.image.resize``'s (triangle and
    Keys a=-0.5 filters widened by the downscale factor), so they lower as Keras' resize does: constant matmuls."""
    x, size = call.arg("input", call.arg("self")), tuple(call.out_type(0).shape[2:])
    if call.arg("align_corners", False):
        call.unsupported("antialiased resize with align_corners=True (torch's own kernel refuses to downscale it "
                         "exactly; use align_corners=False)")
    scales = _torch_scales(call, 2)
    if scales is not None and any(s is not None and abs(s - n / m) > 1e-12 * max(1.0, s)
                                  for s, m, n in zip(scales, x.type.shape[2:], size)):
        call.unsupported(f"antialiased resize with scale factors {scales} that are not output/input sizes; pass "
                         "size= instead of scale_factor=")
    return resize_like_keras(call, x, size, _AA_METHODS[call.node.target._schema.name],
                             antialias=True, channels_last=False)

