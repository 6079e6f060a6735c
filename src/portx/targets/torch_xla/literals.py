"""Python literals in emitted torch code: the nested data of a small stored array, and the dtype torch gives
``tensor OP python_scalar``.

Example:
    >>> plain(np.array([0.1, 2.0], dtype=np.float32))
    [0.1, 2.0]
"""
from __future__ import annotations

import numpy as np

from ...ops._util import kind

__all__ = ["plain", "scalar_result"]


def plain(array):
    """Nested Python data for an array; float32/float16 values in their shortest round-trip form, but for one
    whose shortest form lies past the dtype's largest finite value (float32's max is ``3.4028235e+38`` shortest,
    above the max itself): that one keeps its exact value, since torch refuses a Python number that overflows the
    tensor's dtype (``torch.where(m, 3.4028235e+38, x)``: nan_to_num's ``finfo.max``)."""
    array = np.asarray(array)
    if str(array.dtype) in ("float32", "float16", "bfloat16"):
        narrow = array.astype(np.float32) if str(array.dtype) == "bfloat16" else array
        top = float(np.finfo(array.dtype).max)
        short = [float(str(v)) for v in narrow.ravel()]
        short = [s if abs(s) <= top or np.isinf(v) else float(v) for s, v in zip(short, narrow.ravel())]
        return np.array(short, dtype=object).reshape(array.shape).tolist()
    return array.tolist()


def scalar_result(dtype: str, scalar_dtype: str) -> str:
    """torch's dtype for ``tensor(dtype) OP python_scalar``: the scalar only lifts the category."""
    lifted = kind(scalar_dtype)
    return dtype if lifted <= kind(dtype) else {1: "int64", 2: "float32", 3: "complex64"}[lifted]
