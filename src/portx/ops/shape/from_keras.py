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
    if call.arg("mask") is not None:
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


def _free_dims(call) -> tuple:
    """The static shape a ``FreeShape`` layer computes on this call's inputs (validated config data only)."""
    dims, refs = call.config.get("dims"), call.args[1:]  # args: x may also be one of the inputs read
    if not isinstance(dims, (list, tuple)):
        call.unsupported("a FreeShape layer whose dims are not a list")
    shape = []
    for d in dims:
        if isinstance(d, int) and not isinstance(d, bool):
            shape.append(d)
        elif isinstance(d, (list, tuple)) and len(d) == 4 and all(isinstance(v, int) for v in d) \
                and 0 <= d[0] < len(refs) and hasattr(refs[d[0]], "type") and 0 <= d[1] < refs[d[0]].type.rank:
            shape.append(refs[d[0]].type.shape[d[1]] * d[2] + d[3])
        else:
            call.unsupported(f"a FreeShape dim {d!r} that is neither a size nor [input, axis, scale, offset]")
    return tuple(shape)


@RESHAPE.imports("keras", "FreeShape")
def _free_shape_from_keras(call):
    """portx's own ``FreeShape`` layer (Note [free dims]): a reshape or broadcast_to whose free dims it read from
    the model inputs; here at the inputs' sizes, where the free-dim diff finds them free again."""
    op = {"reshape": RESHAPE, "broadcast_to": EXPAND}.get(call.config.get("op"))
    if op is None:
        call.unsupported(f"a FreeShape layer with op {call.config.get('op')!r}")
    x = call.args[0]
    x = x if hasattr(x, "type") else call.const(np.asarray(x), "value")  # an inline constant in the code
    return call.emit(op, [x], {"shape": _free_dims(call)})
