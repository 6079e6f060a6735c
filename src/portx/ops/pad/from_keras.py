"""Keras import rules for ZeroPadding*D (a ``pad``) and Cropping*D (a ``slice`` per cropped axis, or none).

Cropping belongs to no single OpDef (it is several slices, or the input itself), so it is a
free-standing ``imports`` rule here rather than one hung on shape's ``SLICE``.

Example:
    ZeroPadding2D(padding=((1, 1), (2, 2))) on (N, H, W, C) -> pad {pads=((0, 0), (1, 1), (2, 2), (0, 0))}
"""
from __future__ import annotations

from ...ir import imports
from .._keras import keras_spatial_axes
from ..pad import PAD
from ..shape.index import SLICE

__all__ = []


def _per_axis_pairs(value, rank):
    """Keras padding/cropping for ``rank`` spatial axes as ((begin, end), ...)."""
    if rank == 1:
        return (tuple(value),)
    return tuple(tuple(p) for p in value)


@PAD.imports("keras", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D")
def _zero_padding_from_keras(call):
    """ZeroPaddingND: a constant pad of the spatial axes in the layer's layout."""
    x = call.inputs[0]
    axes = keras_spatial_axes(call.layer, x.type.rank)
    spatial = dict(zip(axes, _per_axis_pairs(call.layer.padding, len(axes))))
    pads = tuple(tuple(int(p) for p in spatial.get(a, (0, 0))) for a in range(x.type.rank))
    return call.emit(PAD, [x], {"pads": pads, "mode": "constant", "value": 0.0})


@imports("keras", "Cropping1D", "Cropping2D", "Cropping3D")
def _cropping_from_keras(call):
    """CroppingND: one slice per cropped spatial axis."""
    x = y = call.inputs[0]
    axes = keras_spatial_axes(call.layer, x.type.rank)
    for axis, (begin, end) in zip(axes, _per_axis_pairs(call.layer.cropping, len(axes))):
        if begin or end:
            y = call.emit(SLICE, [y], {"axis": axis, "start": int(begin), "end": y.type.shape[axis] - int(end)})
    return y
