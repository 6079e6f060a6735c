"""Data-dependent shapes and host syncs in a torch program: found, listed, refused.

Example:
    >>> refuse_data_dependent(ep, strict_tpu=True)   # NotTpuLegal (exit 4) naming every scope
"""
from __future__ import annotations

from ..errors import NotTpuLegal, UnsupportedOps
from .torch_names import op_name, scope_of

__all__ = ["data_dependent_ops", "refuse_data_dependent"]


# Note [data-dependent shapes]: nonzero, boolean-mask indexing, unique... give outputs whose size
# depends on tensor values, and .item() moves a value to the host. torch.export records each
# such op with ``unbacked_bindings`` (the symbols it introduces). TPUs (XLA) need static shapes
# and have no host round trip inside a program, so every occurrence is listed with a static
# alternative before lowering starts (TPU_NOTES.md, sections 2 and 3).
_STATIC_ALTERNATIVE = {
    "nonzero": "data-dependent shape; use torch.nonzero_static(x, size=N, fill_value=-1) with a fixed N",
    "index": "boolean-mask indexing has a data-dependent shape; use torch.where(mask, x, 0) or x * mask",
    "masked_select": "data-dependent shape; use torch.where(mask, x, 0) or x * mask",
    "unique": "data-dependent shape; use torch.bincount(x, minlength=K) or a one-hot sum over K values",
    "item": "host sync; keep the value as a 0-d tensor (no .item()) and use torch.where for control flow",
}
_ALIASES = {"argwhere": "nonzero", "_local_scalar_dense": "item", "_unique": "unique", "_unique2": "unique",
            "unique_dim": "unique", "unique_consecutive": "unique"}


def _static_alternative(op) -> str:
    short = op.split("::")[-1]
    return _STATIC_ALTERNATIVE.get(_ALIASES.get(short, short), "data-dependent shape; pad to a fixed size")


def data_dependent_ops(ep) -> list:
    """(op, [scope], reason) per op whose output shape or value the host must know, one per occurrence."""
    return [(op_name(n.target), [scope_of(n)], _static_alternative(op_name(n.target)))
            for n in ep.graph.nodes if n.op == "call_function" and n.meta.get("unbacked_bindings")]


def refuse_data_dependent(ep, strict_tpu):
    """Raise NotTpuLegal (strict) or UnsupportedOps listing every data-dependent op."""
    items = data_dependent_ops(ep)
    if not items:
        return
    if not strict_tpu:
        raise UnsupportedOps(items)
    listing = "; ".join(f"{op} at {scopes[0] or '<top>'} [{reason}]" for op, scopes, reason in items)
    exc = NotTpuLegal(f"{len(items)} data-dependent op{'s' if len(items) > 1 else ''} (TPUs need static shapes "
                      f"and no host round trips): {listing}", hint="rewrite each as suggested and export again")
    exc.items = items
    raise exc
