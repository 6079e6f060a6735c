"""What the torch frontend keeps so that the converted model still trains like the source.

Note [kept dropout]: decompositions would turn ``aten::dropout`` into a ``clone`` (eval mode) and
lose its rate, so before they run each ``dropout`` / ``feature_dropout`` node is renamed to the
custom op ``portx_ir::dropout(x, p, feature)``, which they keep, and renamed back afterwards (the
caller's program is left as it was). ``ops/dropout/from_torch.py`` imports both names.

Parameters stay trainable through the constant folding of the lowering only where an op re-arranges
one parameter's numbers (``rearranges``: a transposed weight is the same weight); arithmetic on a
parameter stays in the graph instead of becoming a frozen constant (``frontends/torch.py``, ``fold``).
"""
from __future__ import annotations

import torch

from .torch_names import op_name

__all__ = ["decompose_keeping_dropout", "rearranges", "remove_effect_tokens", "stops_gradient"]

#: ops whose folded result is the same numbers as their one input, re-arranged (a trainable input stays trainable;
#: not ``detach``, whose result is a constant in the source too)
_VIEWS = {"aten::permute", "aten::t", "aten::transpose", "aten::view", "aten::reshape", "aten::_unsafe_view",
          "aten::unsqueeze", "aten::squeeze", "aten::clone", "aten::alias", "aten::_to_copy",
          "aten::contiguous", "aten::lift_fresh_copy", "aten::flatten"}


def stops_gradient(node) -> bool:
    """True for ``detach``: a detached parameter is a constant in the source, so it may fold into one."""
    return op_name(node.target) == "aten::detach"


def rearranges(node) -> bool:
    """True when ``node`` re-arranges its one input's numbers (``_VIEWS``)."""
    return op_name(node.target) in _VIEWS


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
