"""float8 casts as each source means them, and how the torch-xla target writes the IR's.

Note [float8 casts]: the IR's ``cast`` to ``float8_e4m3fn`` / ``float8_e5m2`` rounds to the nearest (ties to even)
and does not saturate, as ml_dtypes (the NumPy reference), XLA, JAX and Keras do: a value past the largest finite
one becomes NaN in float8_e4m3fn (which has no inf) and inf in float8_e5m2. Two sources mean otherwise, and their
import rules say so with a clamp to the finite range before the cast (``saturating_cast``):

- torch's ``.to(torch.float8_e4m3fn)`` saturates (overflow and inf become +-448, NaN stays); its e5m2 cast does not;
- ONNX ``Cast`` / ``CastLike`` to float8 with ``saturate=1`` (the default) clamps to +-max (``numpy_helper.
  saturate_cast``: inf too), and ``saturate=0`` is the IR's cast.

torch's own e4m3fn cast saturating on the CPU and not under XLA, the torch-xla emitter writes the IR's cast to
float8_e4m3fn as NaN past ``E4M3FN_NAN_ABOVE`` (the half-way point past 448, which rounds to 448) and then
``.to()`` (``non_saturating_e4m3fn``), so the written model computes one thing on every device.

The fnuz formats (``float8_e4m3fnuz``, ``float8_e5m2fnuz``: no negative zero, one NaN) are torch dtypes and XLA
types, but Keras 3 refuses their names ("Invalid dtype"), so the keras-jax emitter refuses a cast that makes or
reads one (``refuse_for_keras``). The torch-xla target writes them (they run on CPU and GPU), but torchax has no
JAX type for them, so its TPU proof fails (op_tables/torch_xla.toml ``dtype.float8_e4m3fnuz``).

Example:
    >>> y = saturating_cast(call, x, "float8_e4m3fn")   # maximum(x, -448) -> minimum(., 448) -> cast
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ...errors import Unsupported
from ...ir.types import FLOAT8
from ..elementwise import BINARY, CAST

__all__ = ["FLOAT8_MAX", "E4M3FN_NAN_ABOVE", "KERAS_FLOAT8", "saturating_cast", "non_saturating_e4m3fn",
           "refuse_for_keras"]

#: the largest finite value of each float8 dtype: 448 (e4m3fn), 57344 (e5m2)
FLOAT8_MAX = {name: float(ml_dtypes.finfo(getattr(ml_dtypes, name)).max) for name in FLOAT8}
#: the float8 dtypes Keras 3 names (``keras.backend.standardize_dtype``)
KERAS_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
#: |x| above this rounds past float8_e4m3fn's 448 (to NaN, without saturation); 464 itself ties to 448
E4M3FN_NAN_ABOVE = 464.0


def saturating_cast(call, x, dtype):
    """``x`` clamped to ``dtype``'s finite range, then cast to it (Note [float8 casts]); NaN stays NaN. The clamp
    runs in float32 (float64 stays), which holds every float8, float16 and bfloat16 value exactly."""
    if x.type.dtype not in ("float32", "float64"):
        x = call.emit(CAST, [x], {"dtype": "float32"})
    top = FLOAT8_MAX[dtype]
    x = call.emit(BINARY["maximum"], [x, call.const(np.array(-top, x.type.dtype), "float8_min")])
    x = call.emit(BINARY["minimum"], [x, call.const(np.array(top, x.type.dtype), "float8_max")])
    return call.emit(CAST, [x], {"dtype": dtype})


def non_saturating_e4m3fn(expr: str, source_dtype: str) -> str:
    """Torch source for the IR's cast of ``expr`` (a tensor of ``source_dtype``) to float8_e4m3fn: NaN past the
    range, which torch's own cast would saturate to +-448 on the CPU (Note [float8 casts]). A float8 source is
    read in float32 first (torch has no abs or where on float8)."""
    expr = f"{expr}.float()" if source_dtype in FLOAT8 else expr
    return f"torch.where({expr}.abs() > {E4M3FN_NAN_ABOVE}, float('nan'), {expr}).to(torch.float8_e4m3fn)"


def refuse_for_keras(node):
    """Unsupported when ``node`` makes or reads a float8 dtype Keras has no name for (the fnuz ones)."""
    for value in node.inputs + node.outputs:
        dtype = value.type.dtype if value is not None else ""
        if dtype in FLOAT8 and dtype not in KERAS_FLOAT8:
            raise Unsupported(f"{node.op.name} with {dtype}: Keras 3 has no {dtype} dtype (its float8 dtypes are "
                              f"{' and '.join(KERAS_FLOAT8)}); convert to torch-xla, which has torch.{dtype} "
                              "(not for TPU: torchax cannot lower it)")
