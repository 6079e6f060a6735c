"""What the torch frontend keeps so that the converted model still trains like the source.

Note [kept dropout]: decompositions would turn ``aten::dropout`` into a ``clone`` (eval mode) and
lose its rate, so before they run each ``dropout`` / ``feature_dropout`` node is renamed to the
custom op ``portx_ir::dropout(x, p, feature)``, which they keep, and renamed back afterwards (the
caller's program is left as it was). ``ops/dropout/from_torch.py`` imports both names.

Parameters stay trainable through the constant folding of the lowering only where an op re-arranges
one parameter's numbers (``rearranges``: a transposed weight is the same weight); arithmetic on a
parameter stays in the graph instead of becoming a frozen constant (``frontends/torch/__init__.py``, ``fold``).

Note [in-place ops]: torch.export's training IR keeps ``relu_`` and ``add_`` (torchvision's ``inplace=True``);
functionalizing them takes a full re-trace (``run_decompositions``: 3-6 s on a ResNet-50). Where an in-place op
writes a fresh temporary that nothing reads afterwards (``functional_inplace`` checks: the written tensor is the
result of an op that returns no alias, every other reader of it comes earlier, none of them is a view, and the
dtypes agree, so no in-place cast happens), it is the same as its functional twin, and the node is renamed to it
(``aten::relu_`` -> ``aten::relu``) when an import rule knows the twin. Any other in-place op is left to the
decompositions.
"""
from __future__ import annotations

import torch

from .names import op_name

__all__ = ["decompose_keeping_dropout", "rearranges", "casts_to_bfloat16", "remove_effect_tokens", "stops_gradient",
           "functional_inplace"]

#: ops whose folded result is the same numbers as their one input, re-arranged (a trainable input stays trainable;
#: not ``detach``, whose result is a constant in the source too)
_VIEWS = {"aten::permute", "aten::t", "aten::transpose", "aten::view", "aten::reshape", "aten::_unsafe_view",
          "aten::unsqueeze", "aten::squeeze", "aten::clone", "aten::alias", "aten::_to_copy", "aten::to",
          "aten::contiguous", "aten::lift_fresh_copy", "aten::flatten"}


def stops_gradient(node) -> bool:
    """True for ``detach``: a detached parameter is a constant in the source, so it may fold into one."""
    return op_name(node.target) == "aten::detach"


def _casts(node) -> bool:
    """True for a ``_to_copy`` or ``to`` to another dtype (an autocast region's cast): it computes new numbers."""
    return _cast_dtype(node) is not None


def _cast_dtype(node):
    """The dtype a ``_to_copy`` / ``to`` node casts to when it differs from its input's, else None (``to`` passes
    its dtype by position or through ``other``; its result's dtype says which)."""
    if op_name(node.target) not in ("aten::_to_copy", "aten::to") or not node.args:
        return None
    source = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    result = node.meta.get("val")
    dtype = node.kwargs.get("dtype") or getattr(result, "dtype", None)
    return dtype if dtype is not None and getattr(source, "dtype", dtype) != dtype else None


def rearranges(node) -> bool:
    """True when ``node`` re-arranges its one input's numbers (``_VIEWS``; a cast to another dtype does not), so
    a parameter read through it still trains: ``rearranges(transpose_node)``."""
    return op_name(node.target) in _VIEWS and not _casts(node)


def casts_to_bfloat16(node) -> bool:
    """True for a cast to bfloat16, which portx keeps in the graph: folded, its constant would widen to float32
    (weights/tensors.py ``array_of``) and the ops after it would see float32 where the source computes in bfloat16."""
    return _cast_dtype(node) == torch.bfloat16


@torch.library.custom_op("portx_ir::dropout", mutates_args=())
def _kept_dropout(x: torch.Tensor, p: float, feature: bool) -> torch.Tensor:
    """Note [kept dropout]: a dropout that decompositions keep (the identity: programs run in eval mode)."""
    return x.clone()


@_kept_dropout.register_fake
def _kept_dropout_fake(x, p, feature):
    return torch.empty_like(x)


_DROPOUTS = {torch.ops.aten.dropout.default: False, torch.ops.aten.feature_dropout.default: True}


def decompose_keeping_dropout(ep):
    """``ep.run_decompositions({})`` with every dropout kept (Note [kept dropout])."""
    renamed = [(n, n.target, n.args) for n in ep.graph.nodes if n.op == "call_function" and n.target in _DROPOUTS]
    try:
        for node, target, args in renamed:
            node.target, node.args = torch.ops.portx_ir.dropout.default, (args[0], float(args[1]), _DROPOUTS[target])
        return ep.run_decompositions({})
    finally:
        for node, target, args in renamed:
            node.target, node.args = target, args


def _fresh(node) -> bool:
    """True when ``node``'s result is a new tensor (an ATen op whose schema returns no alias of an input)."""
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    return schema is not None and all(r.alias_info is None for r in schema.returns)


def _twin(target):
    """The functional overload of an in-place ATen op that writes its first argument only (``add_.Tensor`` ->
    ``add.Tensor``), or None."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.name.startswith("aten::") or not schema.name.endswith("_") or not schema.arguments:
        return None
    writes = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if writes != [schema.arguments[0]]:
        return None
    packet = getattr(torch.ops.aten, schema.name[len("aten::"):-1], None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def _same_dtype(node) -> bool:
    val = node.meta.get("val")
    args = [a.meta.get("val") for a in node.args if isinstance(a, torch.fx.Node)]
    return isinstance(val, torch.Tensor) and all(not isinstance(a, torch.Tensor) or a.dtype == val.dtype for a in args)


def functional_inplace(ep, known):
    """``ep`` with each in-place op on a temporary renamed to its functional twin where ``known(twin)`` (Note
    [in-place ops]); the program computes the same, so the caller's program may keep the renames."""
    order = {node: i for i, node in enumerate(ep.graph.nodes)}
    for node in ep.graph.nodes:
        twin = _twin(node.target) if node.op == "call_function" else None
        if twin is None or not known(twin) or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        written = node.args[0]
        readers = [u for u in written.users if u is not node]
        if _fresh(written) and _same_dtype(node) and all(order[u] < order[node] and _fresh(u) for u in readers):
            node.target = twin
    return ep


def remove_effect_tokens(ep):
    """``ep`` without effect tokens (Note [effect tokens]).

    Note [effect tokens]: an op with a side effect reaches a decomposed program wrapped in ``with_effects`` and
    threaded by ``token`` inputs and outputs; the ``linalg.*`` solvers (inv, solve, cholesky, lu_factor) decompose
    into such an op, ``_linalg_check_errors``, which raises on a singular or non-positive-definite input. Torch's
    own pass turns the wrapped calls back into plain ones and removes the tokens; the torch frontend then skips
    the check (``_SKIP``), so a converted solver returns NaN/inf on such an input instead of raising.
    """
    if not any(spec.kind == torch.export.graph_signature.InputKind.TOKEN for spec in ep.graph_signature.input_specs):
        return ep
    from torch.export._remove_effect_tokens_pass import _remove_effect_tokens
    return _remove_effect_tokens(ep)
