"""uint16/uint32/uint64 in the written PyTorch: computed in int64, stored back in the unsigned dtype.

Note [unsigned in int64]: PyTorch has almost no kernels for uint16, uint32 and uint64 on the CPU (``+``,
``-``, ``<``, shifts, ``torch.div``, ``minimum``, ``gather``, ``flip``, ... raise "not implemented for
'UInt32'"), while casting to and from int64 works. JAX computes in them: ``jnp.searchsorted``'s binary
search (keras.ops.searchsorted, digitize, histogram, keras.layers.Discretization) is uint32 index
arithmetic. So the emitter (TorchEmitter.check/ref/_bind) writes a node that reads such a value as:
every unsigned operand read as ``x.to(torch.int64)``, the op's own expression unchanged, and an unsigned
output narrowed back: ``((EXPR) & 0xFFFFFFFF).to(torch.uint32)``. The mask keeps unsigned wrap-around
(``0 - 1 == 4294967295``, ``x << 31`` drops the high bits) on every backend, XLA's convert included; ops
whose result cannot leave the operands' range (``minimum``, ``&``, ``>>``, ``div``) skip it.

uint16 and uint32 are exact: their values and products fit int64's 64 bits. uint64 is read as int64
(the same bits): add, sub, mul, neg, bitwise ops and left shifts stay exact mod 2**64, but comparisons,
min/max, division and right shifts are wrong for values of 2**63 and above (JAX only makes uint64 with
``jax_enable_x64``, and then rarely past 2**63).

Ops that only move values (reshape, slices, concat, where, casts, bitcasts) run on the unsigned dtypes
in PyTorch and are written as they are; an unsigned index (``index_select``, ``gather``) is read as int64.

Example:
    >>> narrowed("a + b", "uint32", "add")
    '((a + b) & 0xFFFFFFFF).to(torch.uint32)'
"""
from __future__ import annotations

from ...ir import lookup

__all__ = ["WIDE", "widens", "widened", "narrowed"]

#: unsigned dtypes PyTorch cannot compute in (uint8 has kernels) -> the mask of their bits (None: uint64)
WIDE = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF, "uint64": None}
def widens(node) -> bool:
    """True when ``node`` reads a uint16/uint32/uint64 value and its op needs int64 arithmetic in torch."""
    return not node.op.has("unsigned_as_is") and any(v is not None and v.type.dtype in WIDE for v in node.inputs)


def widened(expr: str, value) -> str:
    """``expr`` read in int64 when ``value`` is uint16/uint32/uint64, else ``expr``."""
    return f"{expr}.to(torch.int64)" if value.type.dtype in WIDE else expr


def narrowed(expr: str, dtype: str, op: str) -> str:
    """An int64 expression back in the unsigned ``dtype``, masked to its bits unless ``op`` stays in range."""
    mask = WIDE[dtype]
    if mask is not None and not lookup(op).has("unsigned_in_range"):
        return f"(({expr}) & 0x{mask:X}).to(torch.{dtype})"
    return f"({expr}).to(torch.{dtype})"
