"""Data-dependent shapes and host syncs in a torch program: found, listed, refused.

Example:
    >>> refuse_data_dependent(ep, strict_tpu=True)   # NotTpuLegal (exit 4) naming every scope
"""
from __future__ import annotations

from ...errors import NotTpuLegal, UnsupportedOps
from ...ir import DTYPES
from .names import op_name, scope_of

__all__ = ["data_dependent_ops", "refuse_data_dependent", "explain_export_failure", "computed_at_run_time",
           "known_sizes", "unrepresentable_values"]

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
    "tensor_split": "data-dependent split points (a tensor input); pass them as a Python list or keep them in a buffer",
}
_ALIASES = {"argwhere": "nonzero", "_local_scalar_dense": "item", "_unique": "unique", "_unique2": "unique",
            "unique_dim": "unique", "unique_consecutive": "unique"}


def _static_alternative(op) -> str:
    short = op.split("::")[-1]
    return _STATIC_ALTERNATIVE.get(_ALIASES.get(short, short), "data-dependent shape; pad to a fixed size")


def data_dependent_ops(ep) -> list:
    """(op, [scope], reason) per op whose output shape or value the host must know, one per occurrence; sizes that
    constants settle (Note [static sizes]) are not listed."""
    known = known_sizes(ep)
    return [(op_name(n.target), [scope_of(n)], _static_alternative(op_name(n.target)))
            for n in ep.graph.nodes if n.op == "call_function" and n.meta.get("unbacked_bindings")
            and not set(n.meta["unbacked_bindings"]) <= set(known)]


# Note [static sizes]: torch.export marks a size as data-dependent (an unbacked symbol) whenever an op's output
# shape is computed from tensor values, even when those values are constants of the program (split points of
# ``tensor_split`` in a buffer, an ``.item()`` of a stored tensor) or when the op's sizes depend only on its input's
# shape (``combinations``). ``known_sizes`` evaluates such ops with torch (constants as stored, the data input of
# a ``_SIZE_FROM_SHAPE`` op as zeros of its static shape) and reads each symbol's value where the op binds it; the
# torch frontend resolves recorded shapes with these values, and only the symbols left are refused.
_SIZE_FROM_SHAPE = {"aten::combinations", "aten::tensor_split", "aten::slice", "aten::narrow", "aten::split",
                    "aten::split_with_sizes", "aten::as_strided"}


def known_sizes(ep) -> dict:
    """Unbacked symbol -> int for every data-dependent size that constants settle (Note [static sizes])."""
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and n.meta.get("unbacked_bindings")]
    if not nodes:
        return {}
    import torch
    from torch.utils import _pytree as pytree

    stored = {**ep.state_dict, **ep.constants}
    names = {spec.arg.name: stored[spec.target] for spec in ep.graph_signature.input_specs
             if spec.target is not None and spec.target in stored}
    consts = {n: names[n.name] for n in ep.graph.nodes if n.op == "placeholder" and n.name in names}
    sizes = {}
    needed = set()
    for node in nodes:
        needed |= _ancestors(node)
    for node in ep.graph.nodes:
        if node.op == "placeholder" or node not in needed:
            continue
        inputs = node.all_input_nodes
        data = node.args[0] if op_name(node.target) in _SIZE_FROM_SHAPE and node.args else None
        if not all(n in consts for n in inputs if n is not data):
            continue
        try:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: _value(n, consts, sizes))
            with torch.no_grad():
                value = node.target(*args, **kwargs)
            found = {symbol: int(pytree.key_get(value, path))
                     for symbol, path in (node.meta.get("unbacked_bindings") or {}).items()}
        except Exception:  # noqa: BLE001 - not evaluable on the host: its sizes stay data-dependent
            continue
        sizes.update(found)
        if all(n in consts for n in inputs):
            consts[node] = value
    return sizes


def _ancestors(node) -> set:
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.all_input_nodes)
    return seen


def _value(node, consts, sizes):
    """A constant's value, else zeros of the node's recorded shape (sizes resolved with ``sizes``)."""
    import torch

    if node in consts:
        return consts[node]
    val = node.meta["val"]
    shape = [d if isinstance(d, int) else int(d.node.expr.xreplace(sizes)) for d in val.shape]
    return torch.zeros(shape, dtype=val.dtype)


#: what to do instead, for a torch dtype the IR has no name for
_DTYPE_ADVICE = {"complex32": "use complex64 (x.cfloat()) or keep the real and imaginary parts as float16"}


def unrepresentable_values(ep) -> list:
    """(op or input, [scope], reason) per program value the IR cannot hold: a dtype it has no name for
    (complex32 from ``x.chalf()``, float8) or a sparse layout (CSR/COO: the targets compute on dense arrays)."""
    import torch

    items = []
    for n in ep.graph.nodes:
        vals = n.meta.get("val")
        for v in (vals if isinstance(vals, (list, tuple)) else [vals]):
            if not isinstance(v, torch.Tensor) or n.op not in ("placeholder", "call_function"):
                continue
            dtype, what = str(v.dtype).replace("torch.", ""), (op_name(n.target) if n.op == "call_function"
                                                               else f"input {n.name}")
            if dtype not in DTYPES:
                items.append((what, [scope_of(n)], f"dtype {dtype} has no portx dtype; "
                                                   f"{_DTYPE_ADVICE.get(dtype, 'cast to float32 first')}"))
                break
            if v.layout != torch.strided:
                items.append((what, [scope_of(n)], f"{str(v.layout).replace('torch.', '')} (sparse) tensors are not "
                                                   "supported; use dense tensors (x.to_dense())"))
                break
    return items


def refuse_data_dependent(ep, strict_tpu):
    """Raise UnsupportedOps for values the IR cannot hold (``unrepresentable_values``: complex32, sparse), then
    NotTpuLegal (strict) or UnsupportedOps listing every data-dependent op."""
    refused = unrepresentable_values(ep)
    if refused:
        raise UnsupportedOps(refused)
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


def draws_random(node) -> bool:
    """True for a random sampler (``randn``, ``rand_like``, ``normal_``, ``bernoulli``, ``randperm``...): torch tags
    them ``nondeterministic_seeded``. Note [random ops]: never folded, even without inputs (``torch.randn(3)``):
    folded, the converted model would repeat one draw on every call."""
    import torch

    return torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())


def computed_at_run_time(node) -> bool:
    """True for an op the frontend lowers even when all its inputs are constants (Note [run-time tables],
    Note [random ops])."""
    return op_name(node.target) in _NOT_FOLDED or draws_random(node) or any(
        n.op == "call_function" and op_name(n.target) == "aten::arange" for n in node.all_input_nodes)
