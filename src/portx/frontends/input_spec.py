"""The ``--input NAME:SHAPE[:DTYPE]`` grammar, shared by every frontend (no framework imports).

Formats that do not record input shapes (TorchScript, pickled modules) need one spec per input; Keras
models may change their batch and unknown dimensions with the same grammar (Note [keras input checks]).

Example:
    >>> parse_input_spec("x:1x3x32x32:float32")
    ('x', (1, 3, 32, 32), 'float32')
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import MAX_INPUT_ELEMENTS, BadInput

__all__ = ["parse_input_spec", "INPUT_DTYPES", "resize_array"]

_SPEC = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)?:?(?P<shape>\d+(x\d+)*|scalar)(:(?P<dtype>\w+))?$")
#: the dtypes a spec may name
INPUT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64", "int64", "int32", "bool", "uint8", "int8"})


def parse_input_spec(spec: str):
    """``"x:1x3x32x32:float32"`` -> ("x", (1, 3, 32, 32), "float32"); BadInput when malformed."""
    m = _SPEC.match(spec.strip())
    if not m or (m.group("dtype") and m.group("dtype") not in INPUT_DTYPES):
        raise BadInput(f"--input {spec!r}: expected NAME:SHAPE[:DTYPE] such as x:1x3x224x224:float32",
                       hint=f"dtype is one of {sorted(INPUT_DTYPES)}")
    shape = () if m.group("shape") == "scalar" else tuple(int(d) for d in m.group("shape").split("x"))
    elements = math.prod(max(d, 1) for d in shape)  # a 0 elsewhere does not make 1e20 fine
    if elements > MAX_INPUT_ELEMENTS:
        raise BadInput(f"--input {spec!r}: {elements:.3g} elements is more than portx allocates for an example "
                       f"input ({MAX_INPUT_ELEMENTS:.3g})", hint="convert for a smaller example shape; "
                       "TPU programs are compiled per shape anyway")
    return m.group("name") or "", shape, m.group("dtype") or "float32"


def resize_array(array, axes: dict) -> np.ndarray:
    """``array`` cut or repeated along each axis in ``axes`` ({axis: size}) to that size (rows cycle).

    Example: ``resize_array(np.arange(2), {0: 5})`` -> ``[0, 1, 0, 1, 0]``.
    """
    array = np.asarray(array)
    for axis, n in axes.items():
        array = np.take(array, np.arange(n) % array.shape[axis], axis=axis)
    return array
