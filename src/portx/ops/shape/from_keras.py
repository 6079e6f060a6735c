"""Keras import rules for merge layers (Add ... Concatenate) and reshaping layers.

Merge layers take a list of tensors; inputs of lower rank get size-1 axes inserted at axis 1 as
Keras' ``Merge._reshape_required`` does, then the binary op is chained left to right (Average is
the chained sum divided by the count, as Keras computes it). Reshape and Flatten use the static
output shape Keras recorded (batch resolved), Flatten of a channels_first layer permutes first.

Example:
    Add()([a, b, c]) -> add(add(a, b), c);  Flatten() on (1, 2, 3, 4) -> reshape {shape=(1, 24)}
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY
from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE

__all__ = []

_MERGES = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Maximum": "maximum", "Minimum": "minimum",
           "Average": "add"}


def _same_rank(call, values):
    rank = max(v.type.rank for v in values)
    out = []
    for v in values:
        if v.type.rank < rank:
            shape = (v.type.shape[0],) + (1,) * (rank - v.type.rank) + tuple(v.type.shape[1:])
            v = call.emit(RESHAPE, [v], {"shape": shape})
        out.append(v)
    return out


def _merge_inputs(call):
    if call.kwargs.get("mask") is not None:
        call.unsupported("merge layer with a mask")
    return _same_rank(call, call.inputs)


def _merge_from_keras(call):
    """Add/Subtract/Multiply/Maximum/Minimum/Average over the listed inputs, left to right."""
    name = type(call.layer).__name__
    values = _merge_inputs(call)
    op = BINARY[_MERGES[name]]
    y = values[0]
    for v in values[1:]:
        y = call.emit(op, [y, v])
    if name == "Average":
        y = call.emit(BINARY["div"], [y, call.const(np.array(len(values), np.float32), "count")])
    return y


for _cls, _name in _MERGES.items():  # each merge layer hangs on the binary op it chains
    BINARY[_name].imports("keras", _cls)(_merge_from_keras)


@CONCAT.imports("keras", "Concatenate")
def _concatenate_from_keras(call):
    """Concatenate(axis)."""
    values = _merge_inputs(call)
    return call.emit(CONCAT, values, {"axis": int(call.layer.axis) % values[0].type.rank})


@RESHAPE.imports("keras", "Reshape")
def _reshape_from_keras(call):
    """Reshape(target_shape), the batch axis kept and a -1 resolved from the static input shape."""
    x = call.inputs[0]
    target = [int(d) for d in call.layer.target_shape]
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(x.type.shape[1:])) // max(known, 1)
    return call.emit(RESHAPE, [x], {"shape": (x.type.shape[0], *target)})


@RESHAPE.imports("keras", "Flatten")
def _flatten_from_keras(call):
    """Flatten: (N, ...) -> (N, prod); channels_first layers flatten in channels-last order like Keras."""
    x = call.inputs[0]
    if getattr(call.layer, "data_format", "channels_last") == "channels_first" and x.type.rank > 2:
        x = call.to_channels_last(x)
    return call.emit(RESHAPE, [x], {"shape": (x.type.shape[0], int(np.prod(x.type.shape[1:])))})


@PERMUTE.imports("keras", "Permute")
def _permute_from_keras(call):
    """Permute(dims): dims count from 1, the batch axis stays."""
    return call.emit(PERMUTE, [call.inputs[0]], {"perm": (0,) + tuple(int(d) for d in call.layer.dims)})


@EXPAND.imports("keras", "RepeatVector")
def _repeat_vector_from_keras(call):
    """RepeatVector(n): (N, F) -> (N, n, F) as a reshape then a broadcast."""
    x = call.inputs[0]
    n, f = x.type.shape
    y = call.emit(RESHAPE, [x], {"shape": (n, 1, f)})
    return call.emit(EXPAND, [y], {"shape": (n, int(call.layer.n), f)})
