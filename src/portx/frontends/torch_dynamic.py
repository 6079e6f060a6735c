"""Data-dependent shapes and host syncs in a torch program: found, listed, refused.

Example:
    >>> refuse_data_dependent(ep, strict_tpu=True)   # NotTpuLegal (exit 4) naming every scope
"""
from __future__ import annotations

from ..errors import NotTpuLegal, UnsupportedOps
from .torch_names import op_name, scope_of

__all__ = ["data_dependent_ops", "refuse_data_dependent", "explain_export_failure", "computed_at_run_time"]

#: config fields (Hugging Face's names) that bound the sequence length of a learned position table
_POSITION_LIMITS = ("max_position_embeddings", "n_positions", "max_target_positions")


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


def _configs(module):
    """(submodule, its Hugging Face-style config) pairs."""
    return [(sub, sub.config) for sub in module.modules() if getattr(sub, "config", None) is not None]


def _position_overrun(module, example_inputs):
    for sub, config in _configs(module):
        for field in _POSITION_LIMITS:
            limit = getattr(config, field, None)
            if not isinstance(limit, int):
                continue
            for i, x in enumerate(example_inputs):
                shape, dtype = getattr(x, "shape", ()), str(getattr(x, "dtype", ""))
                if len(shape) >= 2 and ("int" in dtype or "bool" in dtype) and shape[1] > limit:
                    return (f"input {i} has {shape[1]} positions (axis 1), more than {type(sub).__name__}'s "
                            f"position table ({field}={limit}); pass example inputs no longer than the table")
    return None


def _attention_implementation(module, example_inputs):
    for sub, config in _configs(module):
        kind = getattr(config, "_attn_implementation", None)
        if isinstance(kind, str) and kind not in ("eager", "sdpa"):
            return (f"{type(sub).__name__} uses attn_implementation={kind!r}, which torch.export cannot trace; "
                    f"build the model with attn_implementation='sdpa' (or 'eager')")
    return None


def _mask_mismatch(module, example_inputs):
    import inspect

    try:
        names = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return None
    given = dict(zip(names, example_inputs))
    for ids, mask in (("input_ids", "attention_mask"), ("decoder_input_ids", "decoder_attention_mask")):
        if ids in given and mask in given and tuple(given[ids].shape) != tuple(given[mask].shape):
            return (f"{mask} has shape {tuple(given[mask].shape)} but {ids} has {tuple(given[ids].shape)}; "
                    f"a mask has one entry per token")
    return None


def explain_export_failure(module, example_inputs):
    """Why ``torch.export`` failed on ``module``, when a Hugging Face-style model says so more plainly than the
    tracer, else None: an integer input longer than the position table its config declares (rotary positions
    have no table, so this is asked only after a failure), an attention implementation that does not trace
    (``flash_attention_2``), a mask whose shape is not its ids'.

    Example: ``"input 0 has 80 positions (axis 1), more than BertModel's position table (...)"``.
    """
    for check in (_attention_implementation, _mask_mismatch, _position_overrun):
        found = check(module, example_inputs)
        if found:
            return found
    return None


# Note [run-time tables]: positions a forward computes stay computations. An op that reads an ``arange``
# (relative positions ``j - i`` and their buckets in T5, a causal ``kv_idx <= q_idx``, rotary angles
# ``arange(L) * inv_freq``) is not folded, and neither are ``cos``/``sin`` (sinusoid tables of other constants):
# the arange itself stays a stored constant, which the free-dims pass turns into a run-time count
# (passes/free_dims.py), so tables derived from it follow the sequence length; folded, they would be tables
# of the example's length.
_NOT_FOLDED = {"aten::cos", "aten::sin"}


def computed_at_run_time(node) -> bool:
    """True for an op the frontend lowers even when all its inputs are constants (Note [run-time tables])."""
    return op_name(node.target) in _NOT_FOLDED or any(
        n.op == "call_function" and op_name(n.target) == "aten::arange" for n in node.all_input_nodes)
