"""Padding: constant, reflect, edge (torch "replicate") and wrap (torch "circular"), with negative pads cropping.

Note [torch pad order]: F.pad lists pads for the LAST dims first, as (begin, end) pairs going
backwards: ``(left, right, top, bottom)`` pads W then H of an NCHW tensor. The import rules turn
that into one (begin, end) pair per axis, in axis order. A negative pad crops. Cropping happens
before padding, which is what torch does in every mode (it only matters for "circular", where
the wrapped values come from the cropped tensor).

Example IR:
    %y: float32[1x3x10x11] = pad(%x) {pads=((0, 0), (0, 0), (1, 1), (1, 2)), mode="reflect", value=0.0}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from ..shape.index import subscript_text

__all__ = ["PAD", "torch_pads"]

#: torch mode name -> IR mode (numpy.pad / keras.ops.pad name)
_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}

PAD = OpDef("pad", ("x",), {"pads": REQUIRED, "mode": "constant", "value": 0.0}, family="pad",
            doc="numpy.pad with one (begin, end) pair per axis; negative pads crop first.")


def _crop_and_pad(pads):
    """Split signed pads into the crop (begin, end) and the non-negative padding."""
    crop = tuple((max(-lo, 0), max(-hi, 0)) for lo, hi in pads)
    grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    return crop, grow


@PAD.infer
def _pad_type(x, *, pads, mode, value):
    if len(pads) != x.rank or mode not in _MODES.values():
        raise ValueError(f"pad needs {x.rank} (begin, end) pairs and a mode in {sorted(_MODES.values())}; "
                         f"got {pads!r}, mode {mode!r}")
    crop, grow = _crop_and_pad(pads)
    shape = []
    for size, (c0, c1), (g0, g1) in zip(x.shape, crop, grow):
        kept = size - c0 - c1
        limit = {"constant": None, "reflect": kept - 1, "edge": None if kept else 0, "wrap": kept}[mode]
        if kept < 0 or (max(g0, g1) and limit is not None and max(g0, g1) > limit):
            raise ValueError(f"{mode} padding by {(g0, g1)} does not fit an axis of {kept} after cropping")
        shape.append(kept + g0 + g1)
    return x.with_shape(tuple(shape))


@PAD.reference
def _pad_numpy(x, *, pads, mode, value):
    crop, grow = _crop_and_pad(pads)
    x = x[tuple(slice(c0, x.shape[i] - c1) for i, (c0, c1) in enumerate(crop))]
    if mode == "constant":
        return np.pad(x, grow, mode="constant", constant_values=np.asarray(value, dtype=x.dtype))
    return np.pad(x, grow, mode=mode)


def _crop_text(k, node, crop) -> str:
    """The input, cropped by the negative pads (a temporary when there are any)."""
    x = node.inputs[0]
    if not any(c0 or c1 for c0, c1 in crop):
        return k.ref(x)
    items = [f"{c0 or ''}:{x.type.shape[i] - c1 if c1 else ''}" for i, (c0, c1) in enumerate(crop)]
    return k.temp(node, k.ref(x) + subscript_text(items), "cropped")


def _zero_padding_layer(node, grow) -> str | None:
    """``ZeroPaddingND`` when this is zero padding of only the spatial axes of an NC... tensor."""
    a = node.attrs
    rank = len(grow)
    if a["mode"] != "constant" or a["value"] != 0 or rank not in (3, 4, 5) or any(grow[0] + grow[1]):
        return None
    return f"ZeroPadding{rank - 2}D"


@PAD.emits("keras-jax")
def _pad_to_keras(node, k):
    crop, grow = _crop_and_pad(node.attrs["pads"])
    source = _crop_text(k, node, crop)
    if not any(g0 or g1 for g0, g1 in grow):
        k.assign(node, source)
        return
    layer = _zero_padding_layer(node, grow)
    if layer:
        padding = grow[2] if len(grow) == 3 else grow[2:]
        k.layer(node, layer, {"padding": padding, "data_format": "channels_first"}, [source])
        return
    mode, value = node.attrs["mode"], node.attrs["value"]
    extra = f", mode={k.lit(mode)}" if mode != "constant" else ""
    extra += f", constant_values={k.lit(float(value))}" if mode == "constant" and value else ""
    k.assign(node, f"ops.pad({source}, {k.lit(grow)}{extra})")


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
    pads = torch_pads(flat, x.type.rank)
    if not any(lo or hi for lo, hi in pads):
        return x
    value = float(value) if mode == "constant" else 0.0  # only the constant mode reads it
    return call.emit(PAD, [x], {"pads": pads, "mode": mode, "value": value})


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
