"""Torch import rules for pad: aten::pad, constant_pad_nd, reflection_pad*, replication_pad*, _pad_circular.

Note [torch pad order]: F.pad lists pads for the LAST dims first, as (begin, end) pairs going
backwards: ``(left, right, top, bottom)`` pads W then H of an NCHW tensor. The import rules turn
that into one (begin, end) pair per axis, in axis order (``torch_pads``). Torch's mode names map
to the IR's: "replicate" is "edge", "circular" is "wrap".

Example:
    aten::pad(x, [1, 2], mode="reflect") on (1, 3, 8) -> pad {pads=((0, 0), (0, 0), (1, 2)), mode="reflect"}
"""
from __future__ import annotations

from ..pad import PAD

__all__ = ["torch_pads"]

#: torch mode name -> IR mode (numpy.pad / keras.ops.pad name)
_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def torch_pads(flat, rank) -> tuple:
    """Torch's flat pad list (last dim first) as (begin, end) per axis: Note [torch pad order].

    Example: ``torch_pads([1, 2], 3)`` -> ``((0, 0), (0, 0), (1, 2))``.
    """
    flat = [int(p) for p in flat]
    if len(flat) % 2 or len(flat) // 2 > rank:
        raise ValueError(f"pad list {flat} does not fit a rank-{rank} tensor")
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)]
    return ((0, 0),) * (rank - len(pairs)) + tuple(reversed(pairs))


def _emit_pad(call, x, flat, mode, value=0.0):
    """Emit the IR pad for a torch pad list; an all-zero list adds no node."""
    pads = tuple(_beyond_crop(size, pair, mode) for size, pair in zip(x.type.shape, torch_pads(flat, x.type.rank)))
    if not any(lo or hi for lo, hi in pads):
        return x
    value = float(value) if mode == "constant" else 0.0  # only the constant mode reads it
    return call.emit(PAD, [x], {"pads": pads, "mode": mode, "value": value})


def _beyond_crop(size, pair, mode):
    """Torch's replicate pad reads a negative pad that crops the whole axis from the source's edge (it repeats
    the last element): the same pair as crop-then-pad, the IR's meaning, which keeps that one element.

    Example: ``_beyond_crop(4, (-4, 5), "edge") == (-3, 4)`` (five copies of x[3]).
    """
    lo, hi = pair
    out = size + lo + hi if isinstance(size, int) else 0
    if mode != "edge" or out <= 0 or size - max(-lo, 0) - max(-hi, 0) > 0:
        return pair
    return (-(size - 1), out - 1) if lo < 0 else (out - 1, -(size - 1))


@PAD.imports("torch", "aten::pad")
def _pad_from_aten(call):
    mode = call.arg("mode", "constant")
    if mode not in _MODES:
        call.unsupported(f"pad mode {mode!r}; supported: {sorted(_MODES)}")
    return _emit_pad(call, call.arg("self"), call.arg("pad"), _MODES[mode], call.arg("value", 0.0))


@PAD.imports("torch", "aten::constant_pad_nd")
def _constant_pad_from_aten(call):
    return _emit_pad(call, call.arg("self"), call.arg("pad"), "constant", call.arg("value", 0.0))


@PAD.imports("torch", "aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d")
def _reflection_pad_from_aten(call):
    return _emit_pad(call, call.arg("self"), call.arg("padding"), "reflect")


@PAD.imports("torch", "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d")
def _replication_pad_from_aten(call):
    return _emit_pad(call, call.arg("self"), call.arg("padding"), "edge")


@PAD.imports("torch", "aten::_pad_circular")
def _circular_pad_from_aten(call):
    return _emit_pad(call, call.arg("self"), call.arg("pad"), "wrap")
