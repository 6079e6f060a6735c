"""IR value types: a static-or-symbolic shape and a dtype name.

Example:
    >>> TensorType((1, 3, 8, 8), "float32").rank
    4
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DTYPES", "TensorType", "Value"]

# Names follow NumPy; every dtype the IR can carry is listed once here.
DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
          "complex64", "complex128")


@dataclass(frozen=True, slots=True)
class TensorType:
    """Shape (ints, or strings for symbolic dims such as 'batch') and dtype name.

    Example: ``TensorType((1, 16), "float32")``.
    """

    shape: tuple
    dtype: str

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {DTYPES}")
        object.__setattr__(self, "shape", tuple(self.shape))

    @property
    def rank(self) -> int:
        """Number of dimensions, e.g. 4 for NCHW."""
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when every dimension is a concrete int."""
        return all(isinstance(d, int) for d in self.shape)

    def with_shape(self, shape) -> "TensorType":
        """Same dtype, new shape: ``t.with_shape((1, 4))``."""
        return TensorType(tuple(shape), self.dtype)

    def with_dtype(self, dtype: str) -> "TensorType":
        """Same shape, new dtype: ``t.with_dtype("int32")``."""
        return TensorType(self.shape, dtype)

    def __str__(self):
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        return f"{self.dtype}[{dims}]"


@dataclass(frozen=True, slots=True, eq=False)
class Value:
    """A named SSA value. Identity is the object; names are unique within a graph.

    Example: ``Value("x", TensorType((1, 3), "float32"))``.
    """

    name: str
    type: TensorType

    def __repr__(self):
        return f"%{self.name}: {self.type}"
