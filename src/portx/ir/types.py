"""IR value types: a static-or-symbolic shape and a dtype name.

Example:
    >>> TensorType((1, 3, 8, 8), "float32").rank
    4
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DTYPES", "FLOAT8", "VIEWED_AS_INT", "TensorType", "Value", "SymDim", "FreeDimRefused", "batch_inputs"]

# Names follow NumPy; every dtype the IR can carry is listed once here.
DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
          "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
          "float8_e5m2fnuz")
#: the 8-bit floats (ml_dtypes' names, torch.float8_*); NumPy holds them only through ml_dtypes. Keras takes the
#: first two as dtype strings, not the fnuz ones (ops/elementwise/float8.py)
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
#: floats NumPy holds only through ml_dtypes, which torch.from_numpy and Tensor.numpy refuse: they cross between
#: the two as the integers of their width, (NumPy view dtype, torch view dtype)
VIEWED_AS_INT = {"bfloat16": ("uint16", "int16"), **{name: ("uint8", "uint8") for name in FLOAT8}}


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


class FreeDimRefused(Exception):
    """An emit rule cannot write a free dimension (Note [free dims]); ``convert`` pins those symbols.

    ``symbols``: the symbols refused; ``where``: the node (filled in by the emitter's walk).
    """

    def __init__(self, message, symbols=(), where=""):
        super().__init__(message)
        self.symbols, self.where = set(symbols), where


@dataclass(frozen=True, slots=True)
class SymDim:
    """A dimension free at run time: ``(scale * symbol + offset) // div``, where ``symbol`` is a model input's size
    along one axis (``batch``: axis 0 of every input). ``size`` is the example's value, which the static IR
    holds in its place.

    Note [free dims]: the IR is static, built at the example's sizes. ``session/dims/find.py`` gets the graph at
    another size of each free symbol (for a symbolic torch.export, from torch's own shapes and the ops' rules
    without lowering again: Note [symbols read directly] in frontends/torch/symbols.py; else by lowering the
    source a second time) and diffs the two graphs; what changed becomes a
    SymDim in ``graph.meta["free"]`` (node attributes and value shapes), which emitters write as ``None``,
    ``-1`` or ``x.shape[0] * 4`` instead of the example's literal. A rule that meets a SymDim where it cannot
    write one raises FreeDimRefused (``int(dim)`` does), and that symbol is pinned with a warning. A batch stays
    free only where rows do not mix: its checks compare with the source run on row chunks of the example's batch
    (Note [rows independent] in verification/chunks.py); a static program's second graph comes from its ops'
    shape rules instead of a second lowering (Note [static batch] in passes/static_batch.py).

    ``symbol`` may be a product ``"batch*seq"``: an axis that merges two free dims (``mask.reshape(-1)``).
    ``div`` (1 unless the model divides a size: a pool by 2 is ``x_2 // 2``) is read off torch's ``FloorDiv``s,
    and the second size is a multiple of it away, so two sizes pin the rounding (Note [divided dims] in
    session/dims/find.py).
    Example: ``SymDim("batch", 4, 0, 2)`` is ``4 * batch``, 8 in the example.
    """

    symbol: str
    scale: int = 1
    offset: int = 0
    size: int = 0
    div: int = 1

    def __index__(self):
        raise FreeDimRefused(f"dimension {self} is free at run time", self.symbols)

    @property
    def symbols(self) -> set:
        """The symbols it follows: one, or the factors of a product (``"batch*seq"``)."""
        return set(self.symbol.split("*"))

    __int__ = __index__

    def at(self, n: int) -> int:
        """Its value when the symbol is ``n``."""
        return (self.scale * n + self.offset) // self.div

    def __str__(self):
        text = self.symbol if self.scale == 1 else f"{self.scale}*{self.symbol}"
        text += f"{self.offset:+d}" if self.offset else ""
        return text if self.div == 1 else f"({text})//{self.div}" if self.offset else f"{text}//{self.div}"


def batch_inputs(shapes) -> list:
    """Indices of the inputs (by their ``shapes``) whose axis 0 is the batch (Note [free dims]): every input of rank
    1 or more whose leading size is the first such input's; inputs of another leading size carry no batch."""
    ranked = [i for i, shape in enumerate(shapes) if len(shape)]
    return [i for i in ranked if shapes[i][0] == shapes[ranked[0]][0]]
