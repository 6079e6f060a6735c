"""JAX import rule for ``lax.pad``: low/high padding per axis (negative values crop) and interior padding.

Interior padding ``i`` on an axis of size ``n`` (what ``keras.ops.associative_scan`` uses to interleave) is a
new axis of size 1 after it, padded by ``i`` and merged back by a reshape (``n * (1 + i)``), whose trailing
``i`` the low/high pad then crops: static reshapes and pads only.

Example:
    pad[padding_config=((0, 0, 0), (1, 2, 0))](%x, 0.0) -> pad {pads=((0, 0), (1, 2)), value=0.0}
    pad[padding_config=((0, 0, 1),)](%x: f32[3], 0.0) -> reshape (3, 1); pad ((0, 0), (0, 1)); reshape (6,);
        pad ((0, -1),)  # [x0, 0, x1, 0, x2]
"""
from __future__ import annotations

from .._jax import reshaped
from ..pad import PAD

__all__ = []


@PAD.imports("jax", "pad")
def _pad_from_jax(call):
    """``(low, high, interior)`` per axis; negative low/high crop, as the IR pad does."""
    value = call.const_value(1)
    if value is None:
        call.unsupported("pad with a padding value computed at run time")
    config = [tuple(int(v) for v in c) for c in call.params["padding_config"]]
    fill = complex(value.reshape(()).item())  # complex pads (an irfft's zero-filled spectrum) fill with 0j
    if fill.imag:
        call.unsupported(f"pad of a complex tensor with {fill}: only a real padding value is representable")
    x, fill = call.input(0), fill.real
    pads = []
    for axis, (lo, hi, interior) in enumerate(config):
        size = x.type.shape[axis]
        if interior and size > 1:
            x = _interleave(call, x, axis, interior, fill)
            hi -= interior
        pads.append((lo, hi))
    if all(p == (0, 0) for p in pads):
        return x
    return call.emit(PAD, [x], {"pads": tuple(pads), "value": fill})


def _interleave(call, x, axis, interior, fill):
    """``interior`` fill values after each element along ``axis`` (the last ones too: the caller crops them)."""
    shape = tuple(x.type.shape)
    spread = reshaped(call, x, shape[:axis + 1] + (1,) + shape[axis + 1:])
    pads = tuple((0, interior) if i == axis + 1 else (0, 0) for i in range(len(shape) + 1))
    spread = call.emit(PAD, [spread], {"pads": pads, "value": fill})
    return reshaped(call, spread, shape[:axis] + (shape[axis] * (1 + interior),) + shape[axis + 1:])
