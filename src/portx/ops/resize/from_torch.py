"""Torch import rule for resize: every ``aten::upsample_*`` overload (nearest, nearest-exact, linear, bicubic).

Both ATen forms arrive here: ``.vec`` (``output_size`` or ``scale_factors``) and the plain per-axis
form (``scales_h`` / ``scales_w``). The IR keeps torch's scale factors, because torch maps output
coordinates with ``1 / scale`` when one was given, not with ``in / out`` (Note [resize as matrices]
in ``resize/__init__.py``); ``align_corners`` ignores them, so they are dropped there.

Example:
    aten::upsample_bilinear2d.vec(x, None, False, [2.0, 2.0]) on (1, 3, 4, 4) ->
    resize(%x) {size=(8, 8), mode="linear", align_corners=False, scales=(2.0, 2.0)}
"""
from __future__ import annotations

from ..resize import RESIZE

__all__ = []

_ATEN_MODES = {"aten::upsample_nearest1d": "nearest", "aten::upsample_nearest2d": "nearest",
               "aten::_upsample_nearest_exact1d": "nearest_exact", "aten::_upsample_nearest_exact2d": "nearest_exact",
               "aten::upsample_linear1d": "linear", "aten::upsample_bilinear2d": "linear",
               "aten::upsample_bicubic2d": "cubic"}


def _torch_scales(call, rank):
    """Scale factors as torch's kernel sees them: from ``scale_factors`` (.vec) or ``scales_h/_w``."""
    given = call.arg("scale_factors")
    if given is None:
        given = [call.arg("scales")] if rank == 1 else [call.arg("scales_h"), call.arg("scales_w")]
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
