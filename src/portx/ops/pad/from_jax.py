"""JAX import rule for ``lax.pad``: low/high padding per axis (negative values crop); no interior padding.

Example:
    pad[padding_config=((0, 0, 0), (1, 2, 0))](%x, 0.0) -> pad {pads=((0, 0), (1, 2)), value=0.0}
"""
from __future__ import annotations

from ..pad import PAD

__all__ = []


@PAD.imports("jax", "pad")
def _pad_from_jax(call):
    """``(low, high, interior)`` per axis; negative low/high crop, as the IR pad does."""
    value = call.const_value(1)
    if value is None:
        call.unsupported("pad with a padding value computed at run time")
    config = [tuple(int(v) for v in c) for c in call.params["padding_config"]]
    if any(interior for _, _, interior in config):
        call.unsupported("interior padding (use lax.conv_transpose or a reshape instead)")
    pads = tuple((lo, hi) for lo, hi, _ in config)
    x = call.input(0)
    if all(p == (0, 0) for p in pads):
        return x
    return call.emit(PAD, [x], {"pads": pads, "value": float(value.reshape(()).item())})
