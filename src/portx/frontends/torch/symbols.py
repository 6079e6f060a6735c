"""Exporting torch modules: at the example's static sizes, or once with the axes that may stay free symbolic.

Note [symbolic export]: a live module (and a .pt2 that declares Dims, exported again from its module) is exported
once with ``Dim.AUTO`` on every axis that may stay free: axis 0 of each batch input (``batch_inputs``), the
sequence axis of a Hugging Face model, a .pt2's declared Dims. Torch keeps an axis symbolic where the program
works at every size in its range and, with ``Dim.AUTO``, specialises it where an op fixes it instead of failing;
the placeholders' shapes say which stayed symbolic (``input_symbols``), ``ep.range_constraints`` their ranges, and
torch's shape log the guard that pinned each of the others and the line of the model that added it
(``pinned_by``). The program is then lowered at any size of its symbols without tracing again: the sizes are
substituted into the recorded shapes (``TorchSource.resized``, ``lower_exported(at=...)``), though in the common
case it is not lowered again at all (Note [symbols read directly]), and a dim torch pinned is pinned with the guard
as its warning, without a second lowering. The program is prepared for lowering once (its decompositions re-trace
it, slowly with symbols; torch's size ops such as ``sym_size`` are folded from the shapes, never decomposed) and
shared by every size it is lowered at. Where torch.export cannot trace symbolically, the module is exported at its
static sizes as before and each dim is found by exporting again at a second size; report["dynamic"]'s
``found_by`` says which ("symbolic export", "symbolic export, lowered twice" or "two lowerings").

Note [symbols read directly]: the one lowering of a symbolic program is the only one in the common case. Each fx
node's ``meta["val"]`` holds its shape as SymInt expressions over torch's symbols (``s0 * s1``, ``2 * s1 - 1``), and
each folded size (``sym_size`` and its arithmetic) its expression; ``hints_at`` evaluates them at a second size of
one symbol: the shape of every IR value an fx node became (stored constants included) and, for each size literal
at the example's sizes, its value there. ``rebatch(graph, sites, s0, s1, hints)`` (passes/static_batch.py) then
builds the prepared graph at that size from the ops' own shape rules, rewriting only literals torch computed from
the symbol (or a multiple of one: ``b * s`` where one of them moves), choosing among rewrites the one that gives
torch's recorded shape, growing stored constants whose torch shape grows (one row repeated, an arange, a band:
``grown``), and taking a scalar size a rule stored (an index's stride) for the size it equals (never a number the
program spells: Note [literal or size]); ``diff_free`` reads
the SymDims off the two graphs as before. Lowering again stays the fallback, with ``found_by`` "symbolic export,
lowered twice": where the rules and torch's shapes disagree at any node, or where a constant folded from a moving
size keeps its shape (its value there is unknown: ``fixed``); inputs and outputs that ``--io-layout`` permutes are
compared through those permutes (Note [free dims in the emitted layout] in passes/layout). SymDims are not written
into the IR while lowering because every pass after it (legalize, layout, fusions) computes attributes from static
shapes; the second graph is what those passes would give, so the free-dims stage stays one diff for every source.
What the shapes cannot show, a literal equal to a moving size by chance (a head count of 8 at a sequence of 8) read
as that size, is what the checks at other sizes catch (verification/dynamic.py): that dim is then pinned with a
warning, as before.

Example:
    >>> ep, pinned = export_free(module, (x,), [(0, 0)])
    >>> input_symbols(ep)
    {(0, 0): s77}
"""
from __future__ import annotations

import linecache
import logging
import re
import sys
from pathlib import Path

from ...errors import BadInput, first_line
from ...logs import quiet_prints
from .dynamic import explain_export_failure

__all__ = ["export_module", "export_free", "input_symbols", "symbol_rows", "size_hints", "pinned_by", "resized_at",
           "named_sites", "hints_at", "divisor"]

_SHAPES_LOG = "torch.fx.experimental.symbolic_shapes"
_CREATED = re.compile(r"create_symbol (\w+) = \d+ for L\['(\w+)'\]\.size\(\)\[(\d+)\]")
_PINNED = re.compile(r"set_replacement (\w+) = (-?\d+) ")


class _ShapeLog(logging.Handler):
    """Torch's shape log while one export runs: which input axis each symbol stands for, the guards added (with
    the innermost line outside torch that added each), and the symbols set to a constant."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.sites, self.guards, self.pinned = {}, [], {}

    def emit(self, record):
        text = record.getMessage()
        created, pinned = _CREATED.match(text), _PINNED.match(text)
        if created:
            self.sites[created.group(1)] = (created.group(2), int(created.group(3)))
        elif pinned:
            self.pinned[pinned.group(1)] = int(pinned.group(2))
        elif "[guard added]" in text:
            self.guards.append((text.split(" [guard added]")[0].split(" ", 1)[-1], _model_frame(self.skip)))

    def __enter__(self):
        import torch

        self.skip = tuple(str(Path(m.__file__).parent) for m in (torch, logging)) + (str(Path(__file__).parents[1]),)
        self.logger = logging.getLogger(_SHAPES_LOG)
        self.saved = self.logger.level, self.logger.propagate, self.logger.handlers
        self.logger.setLevel(logging.INFO)
        self.logger.propagate, self.logger.handlers = False, [self]  # torch's own handlers would print each record
        self.logger.manager = _LetThrough()  # this logger only: portx disables logging while it works (logs.py)
        self.logger._cache.clear()
        return self

    def __exit__(self, *exc):
        del self.logger.manager
        self.logger.propagate, self.logger.handlers = self.saved[1:]
        self.logger.setLevel(self.saved[0])  # and clears the loggers' caches of what is enabled


class _LetThrough:
    """The part of a ``logging.Manager`` that ``Logger.isEnabledFor`` reads, with nothing disabled."""

    disable = logging.NOTSET


def _model_frame(skip):
    """(file, line) of the innermost frame outside the folders ``skip`` (torch, logging, portx): the model's own line
    that a guard came from (its text is read only for a guard that pins a dim), None when none. Frames are walked,
    not extracted: a large model adds thousands of guards."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _line_text(where) -> str:
    """``file.py:12 (x.reshape(2, -1) * 2)`` for a ``_model_frame``, '' for None."""
    if where is None:
        return ""
    text = linecache.getline(*where).strip()
    return f"{Path(where[0]).name}:{where[1]}" + (f" ({text})" if text else "")


def export_module(module, example_inputs):
    """``torch.export`` a module in eval mode at the example's static sizes, with a BadInput that says how to fix
    failures."""
    import torch

    try:
        module.eval()
    except NotImplementedError:  # an ExportedProgram's module() is already in the program's mode
        pass
    try:
        with torch.no_grad(), quiet_prints():  # Note [framework prints]
            return torch.export.export(module, tuple(example_inputs), strict=False)
    except Exception as exc:  # torch raises many kinds here; all mean "cannot trace"
        plain = explain_export_failure(module, example_inputs)
        if plain:
            raise BadInput(f"{type(module).__name__}: {plain}") from exc
        first = first_line(exc, 300, type(exc).__name__)
        raise BadInput(f"torch.export could not trace {type(module).__name__}: {first}",
                       hint="make forward() traceable (no data-dependent Python control flow, "
                            "static shapes) or pass a .pt2 saved with torch.export.save") from exc


def export_free(module, inputs, sites):
    """(program, pinned): ``module`` exported once with ``Dim.AUTO`` on each (input index, axis) of ``sites``, and
    {(input, axis): why} for those torch specialised (``pinned_by``); (None, None) when torch.export cannot trace
    it symbolically (the caller exports at static sizes instead)."""
    import torch
    from torch.export import Dim

    shapes = tuple({axis: Dim.AUTO for i, axis in sites if i == k} or None for k in range(len(inputs)))
    # new tensor objects: a failed export leaves its dim markings on them, and the static export would read them
    inputs = tuple(t.detach() if isinstance(t, torch.Tensor) else t for t in inputs)
    try:
        with _ShapeLog() as log, torch.no_grad(), quiet_prints():  # Note [framework prints]
            ep = torch.export.export(module, inputs, dynamic_shapes=shapes, strict=False)
    except Exception:  # noqa: BLE001 - any failure here means "not symbolically"; the static export says why
        return None, None
    return ep, pinned_by(log, ep, sites)


def pinned_by(log, ep, sites) -> dict:
    """{(input, axis): why} for each of ``sites`` that is not symbolic in ``ep``: the guard that set its symbol to
    a constant and the model's line that added it, as torch's shape log (``_ShapeLog``) recorded them."""
    kept = input_symbols(ep)
    names = [n.name for n in _user_placeholders(ep)]
    symbol_of = {(names.index(name), axis): s for s, (name, axis) in log.sites.items() if name in names}
    why = {}
    for site in map(tuple, sites):
        symbol = symbol_of.get(site)
        if site in kept or symbol is None:  # no symbol at all: a size of 0 or 1, which torch always specialises
            continue
        guard = next(((g, line) for g, line in reversed(log.guards) if re.search(rf"\b{symbol}\b", g)),
                     None)
        size = log.pinned.get(symbol)
        text = "torch.export specialised it" + (f" to {size}" if size is not None else "")
        if guard:
            text += f": guard {guard[0]}" + (f" added at {_line_text(guard[1])}" if guard[1] else "")
        why[site] = text
    return why


def _user_placeholders(ep) -> list:
    user = set(ep.graph_signature.user_inputs)
    return [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]


def input_symbols(ep) -> dict:
    """{(input index, axis): sympy symbol} for each user input axis that is one plain symbol in ``ep``."""
    import torch

    found = {}
    for index, n in enumerate(_user_placeholders(ep)):
        for axis, dim in enumerate(getattr(n.meta.get("val"), "shape", ())):
            if isinstance(dim, torch.SymInt) and dim.node.expr.is_Symbol:
                found[(index, axis)] = dim.node.expr
    return found


def size_hints(ep) -> dict:
    """{sympy symbol: the example's size} for every backed symbol of ``ep``'s shapes."""
    import torch

    for n in ep.graph.nodes:
        for dim in getattr(n.meta.get("val"), "shape", ()):
            if isinstance(dim, torch.SymInt):
                env = dim.node.shape_env
                hints = getattr(env, "backed_var_to_val", None) or env.var_to_val
                return {s: int(v) for s, v in hints.items()}
    return {}


def _bound(value):
    """A range bound as an int, None for infinity (sympy's ``int_oo``)."""
    try:
        return int(value)
    except (TypeError, ValueError, AttributeError, OverflowError):
        return None


def symbol_rows(ep) -> list:
    """One row per plain symbol of ``ep``'s inputs: {"symbol", "torch_symbol", "sites", "declared", "min", "max"}
    (a .pt2's ``torch.export.Dim``s); a derived dim (``2 * s0``) follows its symbol's own site."""
    found = {}
    names = [n.name for n in _user_placeholders(ep)]
    for (index, axis), expr in input_symbols(ep).items():
        row = found.setdefault(str(expr), {"symbol": f"{names[index]}_{axis}", "torch_symbol": str(expr),
                                           "sites": [], "declared": True})
        row["sites"].append([index, axis])
        bounds = ep.range_constraints.get(expr)
        if bounds is not None:
            row["min"], row["max"] = _bound(bounds.lower) or 1, _bound(bounds.upper)
    return list(found.values())


def resized_at(ep, symbols, at, sizes):
    """{symbol: size}: ``at`` with ``sizes`` ({(input, axis): size}) substituted, or None where substitution cannot
    give them: a site without a symbol of its own, two sizes for one symbol or a size for only some of its sites
    (torch tied them), a size outside the symbol's range (the caller exports again there)."""
    given = {}
    for site, n in sizes.items():
        symbol = symbols.get(tuple(site))
        if symbol is None or given.setdefault(symbol, n) != n:
            return None
    if any(symbol in given and site not in sizes for site, symbol in symbols.items()):
        return None
    for symbol, n in given.items():
        bounds = ep.range_constraints.get(symbol)
        low, high = (_bound(bounds.lower), _bound(bounds.upper)) if bounds is not None else (None, None)
        if (low is not None and n < low) or (high is not None and n > high):
            return None
    return {**at, **given}


def named_sites(module, inputs, specs) -> list:
    """(input, axis) pairs of ``--dynamic NAME:AXIS[,AXIS]`` specs, by the names torch.export gives ``module``'s
    inputs (its forward's parameters; ``xs_0``, ``xs_1`` for ``*xs``). A spec that names no input axis is left out:
    the free-dims plan refuses it with its own message (verification/dynamic.py ``parse_dynamic``)."""
    import inspect

    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    names = []
    for param in params:
        more = max(len(inputs) - len(names), 0) if param.kind is param.VAR_POSITIONAL else 1
        names += [f"{param.name}_{i}" for i in range(more)] if param.kind is param.VAR_POSITIONAL else [param.name]
    sites = []
    for spec in specs or ():
        name, _, axes = str(spec).rpartition(":")
        for axis in axes.split(","):
            index = names.index(name) if name in names[:len(inputs)] else None
            if index is not None and axis.strip().isdecimal() and int(axis) < inputs[index].dim():
                sites.append((index, int(axis)))
    return sites


def hints_at(low, at) -> dict:
    """What the symbolic program's one lowering ``low`` (``walk_program``) would be at the sizes ``at`` ({symbol:
    size}), read from torch's own shapes (Note [symbols read directly]): {"shapes": {IR value name: shape at
    ``at``}, "literals": {int at the example's sizes: {ints at ``at``}}} for each value an fx node became and
    each size torch computed from a symbol that changes; "numbers": the stored ints the program spells as numbers,
    never sizes (Note [literal or size])."""
    import torch

    moved = {s for s, n in at.items() if low.sizes.get(s) != n}
    shapes, literals = {}, {}

    def read(dim):
        if not isinstance(dim, torch.SymInt):
            return int(dim)
        expr = dim.node.expr
        try:
            now, then = int(expr.xreplace(low.sizes)), int(expr.xreplace(at))
        except (TypeError, ValueError):  # a symbol neither size settles: no hint for this dim
            return None
        if expr.free_symbols & moved:
            literals.setdefault(now, set()).add(then)
        return then

    for fx, value in low.env.items():
        val = fx.meta.get("val")
        vals, outs = (val, value) if isinstance(val, (list, tuple)) else ([val], [value])
        if isinstance(val, torch.SymInt):
            read(val)
        for v, out in zip(vals, outs if isinstance(outs, (list, tuple)) else [outs]):
            if isinstance(v, torch.Tensor) and hasattr(out, "type"):
                shape = tuple(read(d) for d in v.shape)
                if None not in shape:
                    shapes[out.name] = shape
    sized = set()  # fx nodes of a changing size, and the constants folded from them
    for fx in low.ep.graph.nodes:
        val = fx.meta.get("val")
        dims = list(getattr(val, "shape", ())) + ([val] if isinstance(val, torch.SymInt) else [])
        if any(isinstance(d, torch.SymInt) and d.node.expr.free_symbols & moved for d in dims) or \
                fx in low.consts and any(n in sized and n in low.consts for n in fx.all_input_nodes):
            sized.add(fx)
            if isinstance(val, torch.SymInt) and fx in low.consts:  # a folded size: a literal of the rules
                read(val)
    # a stored constant computed from a changing size whose shape does not change (a scale 1/sqrt(seq)): its
    # value at the other size is not in torch's shapes, so the caller lowers again
    fixed = {v.name for fx, v in low.env.items() if fx in sized and fx in low.consts and hasattr(v, "type")
             and shapes.get(v.name) == tuple(v.type.shape)}
    return {"shapes": shapes, "literals": literals, "fixed": fixed, "numbers": set(low.literals)}


def divisor(ep, sites) -> int:
    """The least common multiple of the divisors torch applies to the symbols of ``sites`` ((input, axis) pairs) in
    ``ep``'s shapes: 2 for a pool by 2 (``s0 // 2``, ``Mod(s0, 2)``), 4 for two; 1 where none divides
    (Note [divided dims] in session/dims/find.py)."""
    import math

    import torch
    from torch.utils._sympy.functions import CeilDiv, FloorDiv, Mod

    symbols = {s for site, s in input_symbols(ep).items() if list(site) in [list(x) for x in sites]}
    found = 1
    for n in ep.graph.nodes:
        val = n.meta.get("val")
        dims = list(getattr(val, "shape", ())) + ([val] if isinstance(val, torch.SymInt) else [])
        for dim in dims:
            if not isinstance(dim, torch.SymInt):
                continue
            for part in dim.node.expr.atoms(FloorDiv, CeilDiv, Mod):
                base, by = part.args
                if by.is_Integer and int(by) > 1 and base.free_symbols & symbols:
                    found = math.lcm(found, int(by))
    return found

# Note [literal or size]: a rule stores the sizes it reads off its input's static shape as scalar constants (an
# index's stride, a wrap size), and ``rebatch`` takes one for the size it equals at the other size. A number the
# program spells (BART's position offset ``+ 2``, T5's ``relative_position < max_exact`` with max_exact = 8) is
# stored the same way, and where it equals the example's size (batch 2, sequence 8) it was taken for that size:
# BART's positions then moved with the batch and T5's buckets with the length, so both dims were pinned after the
# checks at other sizes failed. In a symbolic export a size computed from a symbol is an fx node (``sym_size``
# and its arithmetic), never a number among a node's arguments, so ``TorchCall.const`` records the stored ints
# that equal such a number (``_Lowering.literals``), and ``hints_at`` passes them on as ``numbers``: constants.
