"""Keras emit rule for pad: ``ZeroPaddingND`` for zero padding of the spatial axes, ``ops.pad`` otherwise.

Negative pads crop first, by slicing the input into a temporary. A pad with nothing left to grow
after cropping is just that slice.

Example generated code:
    pad = layers.ZeroPadding2D((1, 2), data_format='channels_first', name='pad')(x)
    pad = ops.pad(x, ((0, 0), (0, 0), (1, 2)), mode='reflect')
"""
from __future__ import annotations

from ...ir import FreeDimRefused, SymDim
from ..pad import PAD, crop_and_pad
from ..shape.index import subscript_text

__all__ = []


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


def _free_pad(node, k, pads) -> None:
    """Constant padding by widths read from input sizes at run time (``F.pad(x, (0, 0, 0, x.shape[1]))``):
    FreeShape's "pad"; a width that could be negative (a crop) or another mode is refused (the dim is pinned)."""
    free = [p for pair in pads for p in pair if isinstance(p, SymDim)]
    if node.attrs["mode"] != "constant" or any(d.scale < 0 or d.scale + d.offset < 0 for d in free) or any(
            p < 0 for pair in pads for p in pair if not isinstance(p, SymDim)):
        raise FreeDimRefused(f"a {node.attrs['mode']} pad by free widths {pads} that may crop",
                             {s for d in free for s in d.symbols})
    k.free_shape(node, "pad", k.ref(node.inputs[0]), [p for pair in pads for p in pair], node.attrs["value"])


@PAD.emits("keras-jax")
def _pad_to_keras(node, k):
    if any(isinstance(p, SymDim) for pair in node.attrs["pads"] for p in pair):
        _free_pad(node, k, node.attrs["pads"])
        return
    crop, grow = crop_and_pad(node.attrs["pads"])
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
