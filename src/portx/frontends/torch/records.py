"""Whether a program's recorded types are its own: torch recomputes a node from its inputs' records.

Note [recorded types]: the torch frontend checks each import rule's output type against the type torch recorded
for the node (``node.meta["val"]``); a difference is a portx bug (IRError, exit 70). A ``.pt2`` archive stores
those records as JSON (model.json's ``tensor_values``), so an edited or damaged archive can record a type that its
own program does not compute (``add`` recorded as (2454, 3) where its inputs are (2, 3)). Before calling a
difference a bug, the frontend asks torch to compute the node again, on meta tensors of its inputs' recorded types:
where torch disagrees with the record of that node or of one before it (``first_stale``: a rule may take its
output type from the record, so the first wrong record can sit upstream), the archive is at fault (BadInput).
Where the records agree but torch's real kernel refuses the node's inputs (``refused_for_real``: a fake kernel
let torch.export through), the example does not fit the model (BadInput) either.

Example:
    >>> recomputed(node)        # torch's output types now, or None when it cannot say
    [((2, 3), torch.float32)]
"""
from __future__ import annotations

import torch

from ...errors import BadInput, first_line
from ...ir.validate import IRError
from .names import op_name

__all__ = ["recomputed", "recorded", "describe", "first_stale", "type_error", "refused_for_real"]


def _dims(shape, hints=False) -> tuple:
    """A recorded shape: ints, a symbolic size as its expression (``s77``), or with ``hints`` as the example's size
    (torch's hint, read without a guard); never ``int()`` of a SymInt (Note [no guards from records])."""
    out = []
    for d in shape:
        known = d.node.maybe_as_int() if isinstance(d, torch.SymInt) else int(d)
        if known is None and hints and d.node.hint is not None:
            known = int(d.node.hint)
        out.append(str(d) if known is None else known)
    return tuple(out)


def _meta(arg, device="meta", hints=False):
    """A tensor of an fx node's recorded type (zeros off the meta device); other arguments as they are. ValueError
    for a symbolic size, unless ``hints`` (then the example's size): torch cannot recompute the node at a size it
    does not know."""
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        if isinstance(val, torch.Tensor):
            shape = _dims(val.shape, hints)
            if not all(isinstance(d, int) for d in shape):
                raise ValueError(f"{arg.name} has a symbolic shape {shape}")
            return torch.zeros(shape, dtype=val.dtype, device=device)
        if isinstance(val, torch.SymInt) and val.node.maybe_as_int() is None:
            if hints and val.node.hint is not None:
                return int(val.node.hint)
            raise ValueError(f"{arg.name} is a symbolic size")
        return val
    return arg


def _types(result) -> list:
    outs = result if isinstance(result, (list, tuple)) else [result]
    return [(_dims(o.shape), o.dtype) if isinstance(o, torch.Tensor) else None for o in outs]


# Note [no guards from records]: a symbolic export's records hold SymInts, and ``int()`` of one is not an error:
# torch answers with the example's size and adds a guard (``Eq(s77, 3)``) to the program's ShapeEnv, pinning the
# symbol for whoever reads those guards next (frontends/torch/symbols.py reads why torch pinned a dim). These
# checks run in error paths, where a type already differs: they must neither raise on a symbolic size nor guard.
# A symbolic record is its expression's text, and a node whose inputs have symbolic sizes is not recomputed;
# ``refused_for_real`` runs torch's real kernel at the example's sizes (the SymInts' hints, read without a
# guard), so an example the kernel refuses is still bad input under a symbolic export.


def recorded(node) -> list:
    """The (shape, dtype) torch recorded for each output of ``node`` (None for a non-tensor)."""
    return _types(node.meta.get("val"))


def recomputed(node):
    """The (shape, dtype) of each output torch computes now for ``node`` from its inputs' recorded types, or None
    when it cannot (a symbolic size, an op that refuses meta tensors, a higher-order op)."""
    try:
        args = torch.fx.node.map_aggregate(node.args, _meta)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, _meta)
        return _types(node.target(*args, **kwargs))
    except Exception:  # noqa: BLE001 - torch cannot say: the difference stays portx's (IRError)
        return None


def refused_for_real(node):
    """The exception torch's own kernel raises for ``node`` on zeros of its inputs' recorded types, or None.

    A fake-tensor kernel may accept what the real one refuses (``aten::linear`` of an int64 input and float32
    weights: float32 on fake tensors, a dtype error on real ones), so an example that does not fit the model can
    pass torch.export and reach portx's type check."""
    try:
        args = torch.fx.node.map_aggregate(node.args, lambda a: _meta(a, "cpu", hints=True))  # the example's sizes
        kwargs = torch.fx.node.map_aggregate(node.kwargs, lambda a: _meta(a, "cpu", hints=True))
    except Exception:  # noqa: BLE001 - a symbolic size: nothing to run
        return None
    try:
        node.target(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        return exc
    return None


def describe(types) -> str:
    """``float32 (2, 3)`` for each output, comma-separated (``-`` for a non-tensor)."""
    return ", ".join(f"{str(t[1]).replace('torch.', '')} {_shape_text(t[0])}" if t else "-" for t in types)


def _shape_text(dims) -> str:
    """``(s77, 3)``: a shape as a Python tuple, its symbolic sizes without quotes."""
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def first_stale(node):
    """(fx node, its record, torch's types now) for the first call up to ``node`` whose record torch disagrees
    with, or None when every record there is torch's own."""
    for earlier in node.graph.nodes:
        if earlier.op == "call_function":
            again = recomputed(earlier)
            if again is not None and again != recorded(earlier):
                return earlier, recorded(earlier), again
        if earlier is node:
            return None
    return None


def type_error(node, scope_of, got, expected) -> Exception:
    """The error for an import rule's output type ``got`` that differs from torch's record ``expected``: BadInput
    naming the first node whose record torch itself disagrees with (``first_stale``), else IRError (a portx bug)."""
    stale = first_stale(node)
    if stale is not None:
        culprit, record, again = stale
        return BadInput(f"node {scope_of(culprit) or culprit.name} ({op_name(culprit.target)}): the program records "
                        f"its output as {describe(record)}, but its inputs give {describe(again)}",
                        hint="the archive's models/model.json was edited or damaged: export the model again")
    refused = refused_for_real(node)
    if refused is not None:
        return BadInput(f"node {scope_of(node) or node.name} ({op_name(node.target)}): torch itself cannot run it on "
                        f"the example's inputs ({type(refused).__name__}: {first_line(refused, 200)})",
                        hint="check the example's shapes and dtypes (--input NAME:SHAPE:DTYPE) against the model's")
    return IRError(f"node {scope_of(node) or node.name} ({op_name(node.target)}): import rule gave {got}, torch "
                   f"computed {expected}")
