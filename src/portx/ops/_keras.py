"""Helpers shared by the Keras import rules of several families (Keras layers, read without importing Keras).

Example:
    >>> class Layer: data_format = "channels_last"
    >>> keras_spatial_axes(Layer(), 4)
    (1, 2)
"""
from __future__ import annotations

__all__ = ["keras_spatial_axes"]


def keras_spatial_axes(layer, rank) -> tuple:
    """The spatial axes of a rank-``rank`` tensor in the layer's data format."""
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        return tuple(range(2, rank))
    return tuple(range(1, rank - 1))
