"""All of a conversion's free-dim handling (Note [free dims] in ir/types.py): which dims stay free, and what
happens to one that cannot.

``plan_dims`` lists the candidates: the batch (axis 0 of every input) unless ``--static-batch``, the
dims the source declares (torch.export Dims, Keras None dims) and ``--dynamic NAME:AXIS`` ones.
``find_free`` gets the graph at a second size of each (from a symbolic torch.export's own shapes without
lowering again: Note [symbols read directly] in frontends/torch/symbols.py; else by lowering the source again,
by substitution into the export's symbols where it has them) and diffs the graphs
(passes/free_dims.py); a dim the model cannot run at, or whose graph changes in a way no free dim
explains, is pinned at the example's size with a warning that says why (a declared one the model
fixes to a constant is an error); a source that cannot run at another batch (a static program) gets that
graph from its ops' shape rules (Note [static batch] in passes/static_batch.py). ``emit_free`` pins a dim that
an emit rule cannot write, or that ``verify_sizes`` (verification/dynamic.py) finds wrong at another size.
``lower_for`` lowers a source as convert does, for ``portx verify`` (verification/recheck.py takes it as an
argument: verification never imports the session).

Example:
    >>> dims = plan_dims(src, graph, dynamic=["x:1"])
    >>> src, graph, free = find_free(src, graph, prepare, dims, notes)
"""
from __future__ import annotations

import re
import warnings

from ..errors import BadInput
from ..ir import FreeDimRefused, batch_inputs
from ..passes.free_dims import NotFree, apply_free, diff_free, merge_found
from ..passes.pipeline import inference_skip
from ..passes.static_batch import rebatch
from ..verification.dynamic import one_line, verify_sizes
from ..verification.recheck import prepared
from .report import DynamicDim

__all__ = ["ONE_TRACED_AT", "plan_dims", "find_free", "refree", "repin", "parse_dynamic", "check_static_batch",
           "pinned_batch", "emit_free", "dynamic_report", "lower_for"]

#: report.json's ``found_by`` where the one symbolic export's symbols did not settle the graph at a second size, so
#: that export was lowered again there (Note [symbols read directly])
FOUND_BY_SUBSTITUTION = "symbolic export, lowered twice"

#: a free dim whose example size is 1 is traced at this size instead (Note [free dims]: torch specializes 1)
ONE_TRACED_AT = 2


def parse_dynamic(specs, names) -> list:
    """``["x:1", "ids:0,1"]`` -> declared dims (one per input axis); BadInput names a bad spec."""
    rows = []
    for spec in specs or ():
        name, _, axes = str(spec).rpartition(":")
        shown = str(spec) if str(spec).isprintable() else repr(str(spec))  # a newline would split the message's line
        if not name or not axes:
            raise BadInput(f"--dynamic {shown}: expected NAME:AXIS[,AXIS]", hint="e.g. --dynamic x:0,1")
        if name not in names:
            raise BadInput(f"--dynamic {shown}: the model has no input {name if name.isprintable() else repr(name)}",
                           hint=f"its inputs are {', '.join(names)}")
        for axis in axes.split(","):
            if not re.fullmatch(r"[0-9]+", axis.strip()):  # str.isdigit() takes '²', which int() refuses
                raise BadInput(f"--dynamic {shown}: axis {axis!r} is not a number", hint="e.g. --dynamic x:0,1")
            rows.append({"symbol": f"{name}_{int(axis)}", "sites": [[names.index(name), int(axis)]],
                         "min": 1, "max": None, "declared": True, "flag": True})
    return rows


def plan_dims(src, graph, dynamic=(), static_batch=None) -> list:
    """Candidate free dims: [{"symbol", "sites", "size", "min", "max", "declared"}]; the batch comes first."""
    names = [v.name for v in graph.inputs]
    declared = list(src.dynamic_dims()) + parse_dynamic(dynamic, names)
    for row in declared:
        for index, axis in row["sites"]:
            rank = graph.inputs[index].type.rank
            if axis >= rank:
                raise BadInput(f"--dynamic {names[index]}:{axis}: input {names[index]} has {rank} axes",
                               hint=f"give an axis below {rank}")
            row["size"] = graph.inputs[index].type.shape[axis]
    declared = _grouped(declared)
    claimed = {tuple(site) for row in declared for site in row["sites"]}
    ranked = [i for i, v in enumerate(graph.inputs) if v.type.rank]
    batch = [[i, 0] for i in batch_inputs([v.type.shape for v in graph.inputs]) if (i, 0) not in claimed]
    size = graph.inputs[batch[0][0]].type.shape[0] if batch else None
    rows = [] if static_batch or not batch else [
        {"symbol": "batch", "sites": batch, "size": size, "example": getattr(src, "batch_given", 0) or size,
         "min": 1, "max": None, "declared": False}]
    for row in declared:
        if sorted(map(tuple, row["sites"])) == [(i, 0) for i in ranked]:
            row["symbol"] = "batch"  # a Dim on axis 0 of every input is the batch, whatever torch called it
        if static_batch and any(axis == 0 for _, axis in row["sites"]):
            check_static_batch(row, static_batch, names)
            continue
        rows.append(row)
    return rows


def _grouped(rows) -> list:
    """``--dynamic`` axes of one example size on different inputs are one symbol (ids and their mask share a sequence
    length); two axes of one input stay two (an image's height and width, both 32 in the example)."""
    out, by_size = [], {}
    for row in rows:
        group = by_size.get(row["size"]) if row.get("flag") else None
        if group is not None and not {i for i, _ in row["sites"]} & {i for i, _ in group["sites"]}:
            by_size[row["size"]]["sites"] += row["sites"]
            continue
        if row.get("flag"):
            by_size[row["size"]] = row
        out.append(row)
    return out


def check_static_batch(row, n, names):
    """BadInput when ``--static-batch n`` lies outside the range a declared dim on axis 0 allows."""
    low, high = row.get("min") or 1, row.get("max")
    if n < low or (high is not None and n > high):
        index = row["sites"][0][0]
        raise BadInput(f"--static-batch {n}: input {names[index]} declares axis 0 free in [{low}, {high}]",
                       hint=f"pick a batch size inside [{low}, {high}]")


# Note [divided dims]: a U-Net pools its image by 2 and upsamples it back: ``h // 2``. Two sizes one apart cannot
# pin a floor's rounding (``h // 2`` and ``(h + 1) // 2`` agree at 16 and 20) and the model may not run at an odd
# size at all (torch's cat needs ``2 * (h // 2) == h``). Torch's shapes say what it divides each symbol by
# (``FloorDiv``, ``CeilDiv``, ``Mod`` in ``meta["val"]``: ``divisor`` in frontends/torch/symbols.py); the second
# size is that ``step`` away, so ``_affine`` (passes/free_dims.py) reads a half step as ``SymDim(..., div=2)``,
# exact at every size the example's plus a multiple of ``step``, which the checks and the warning keep to.
def _other_size(row) -> int | None:
    """A second size for diffing, never 1 (torch specializes sizes 0 and 1), ``row["step"]`` away (Note [divided
    dims]); None when the range has none."""
    size, low, high, step = row["size"], max(row.get("min") or 1, 2), row.get("max"), row.get("step", 1)
    for candidate in (size + step, size + 2 * step, size - step):
        if candidate >= low and (high is None or candidate <= high) and candidate != size:
            return candidate
    return None


def _sizes(src, rows, symbol_sizes) -> dict:
    return {(i, axis): symbol_sizes[row["symbol"]] for row in rows if row["symbol"] in symbol_sizes
            for i, axis in row["sites"]}


def find_free(src, graph, prepare, rows, notes):
    """(source, graph, record): ``graph`` is what to emit, with ``meta["free"]``; ``record`` keeps the
    per-symbol diffs for ``refree``. A dim at the example size 1 is re-lowered at 2 first (Note [free dims];
    ``load(batch=ONE_TRACED_AT)`` has a live module's batch of 1 traced at 2 from the start: Note [batch of one])."""
    for row in rows:  # the size the user gave, verified as the example's (``example_shapes``)
        row.setdefault("example", row["size"])
    ones = {row["symbol"]: ONE_TRACED_AT for row in rows
            if row["size"] == 1 and (row.get("max") is None or row["max"] >= 3)}
    if ones:
        try:
            src, graph = _at(src, prepare, rows, ones)
            for row in rows:
                row["size"] = ones.get(row["symbol"], row["size"])
        except Exception:  # noqa: BLE001 - not at 2: diffed at 1 below, or pinned there
            pass
    found, kept = {}, []
    for row in rows:
        why = _diff_one(src, graph, prepare, rows, row, found)
        if why:
            if row.get("flag"):
                raise BadInput(f"--dynamic {row['symbol']}: {why}", hint="drop that --dynamic axis")
            notes.append(f"{row['symbol']} pinned to {row['example']}: {why}")
        else:
            kept.append(row)
            if row["step"] > 1:
                notes.append(f"{row['symbol']} stays free at {row['size']} plus multiples of {row['step']} only: the "
                             f"model divides it by {row['step']} (Note [divided dims])")
    notes += [n for n in getattr(src, "fallbacks", ()) if n not in notes]  # why a traced source lowered twice
    moved = _at_example(src, prepare, rows, [row for row in rows if row not in kept])
    if moved is not None and kept:  # the free dims found again on the graph at the example's pinned sizes
        return find_free(*moved, prepare, kept, notes)
    src, graph = moved or (src, graph)
    record = {"rows": kept, "found": found, "graph": graph, "src": src, "prepare": prepare}
    return src, refree(record, {row["symbol"] for row in kept}, notes), record


def repin(record, symbols, notes):
    """(source, graph) with only ``symbols`` free: ``refree``'s graph, or where a dim pinned now was traced at
    another size than the user's example (a batch of 1 at 2), the source at the example's with the free dims
    found again (``record`` updated), so the emitted model takes the user's own shapes (Note [batch of one])."""
    pinned = [row for row in record["rows"] if row["symbol"] not in symbols]
    moved = _at_example(record["src"], record["prepare"], record["rows"], pinned)
    if moved is None:
        return record["src"], refree(record, symbols, notes)
    kept = [row for row in record["rows"] if row["symbol"] in symbols]
    src, graph, again = find_free(*moved, record["prepare"], kept, notes)
    record.update(again)
    return src, graph


def _at_example(src, prepare, rows, pinned):
    """(source, graph) at the example's own sizes of the ``pinned`` rows traced at another size (a batch of 1 at
    2), so the emitted model takes the user's inputs; None where none moved or the source does not trace there
    (the traced size stays, and the note says which)."""
    sizes = {row["symbol"]: row["example"] for row in pinned if row["example"] != row["size"]}
    if not sizes:
        return None
    try:
        moved = _at(src, prepare, rows, sizes)
    except Exception:  # noqa: BLE001 - keeps the traced size (the note says which)
        return None
    for row in rows:
        row["size"] = sizes.get(row["symbol"], row["size"])
    return moved


def _at(src, prepare, rows, symbol_sizes):
    sized = src.resized(_sizes(src, rows, symbol_sizes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first lowering reported these
        return sized, prepare(sized)


def _diff_one(src, graph, prepare, rows, row, found) -> str:
    """'' when ``row``'s dim is free (its diff into ``found``), else why not (for one torch pinned, its guard).

    A ``--dynamic`` axis torch specialised in the symbolic export is still tried by two lowerings, as before the
    symbolic export (an ``nn.LSTM`` pins its sequence there, yet runs at any length); the guard is the reason
    only when that fails too."""
    symbolic, pinned = _exported_free(src, row)
    if pinned and not row.get("flag"):
        return row.update(found_by="symbolic export") or pinned
    why = _second_size(src, graph, prepare, rows, row, found, symbolic and not pinned)
    return (pinned or why) if why else ""


def _second_size(src, graph, prepare, rows, row, found, symbolic) -> str:
    """Lower at a second size of ``row``'s dim and diff: '' when free (its diff into ``found``), else why not."""
    row["step"] = src.divisor(row["sites"]) if symbolic else 1
    other = _other_size(row)
    if other is None:
        return f"its range [{row.get('min')}, {row.get('max')}] has no second size to check"
    if row["step"] > 1:  # torch may divide where the model cannot run (a reshape to literals): run it there once
        from ..frontends.torch.arrays import array_of  # a torch source (a JAX-traced one has example_arrays)
        try:
            sized = src.resized(_sizes(src, rows, {row["symbol"]: other}))
            sized.run(*getattr(sized, "example_arrays", None) or [array_of(t) for t in sized.example_inputs])
        except Exception as exc:  # noqa: BLE001 - any failure there means "not free"
            return f"the model does not run at {row['symbol']}={other} ({one_line(exc)})"
    g1 = _by_symbols(src, graph, rows, row, other) if symbolic else None
    if g1 is not None:
        row["found_by"] = "symbolic export"
    else:
        try:
            _, g1 = _at(src, prepare, rows, {row["symbol"]: other})
        except Exception as exc:  # noqa: BLE001 - any failure there (a guard, an op) means "not free"
            if row["symbol"] != "batch" or row.get("declared"):
                return f"the model does not run at {row['symbol']}={other} ({one_line(exc)})"
            g1 = None  # a static program (Note [static batch] in passes/static_batch.py)
        # report.json says which: one export's symbols read directly (above), that export lowered at a second size,
        # a second export's lowering, or the ops' shape rules
        row["found_by"] = (FOUND_BY_SUBSTITUTION if symbolic else "two lowerings") if g1 is not None \
            else "the ops' shape rules"
    try:
        g1 = g1 or rebatch(graph, row["sites"], row["size"], other)
        found[row["symbol"]] = diff_free(graph, g1, row["symbol"], row["size"], other)
    except NotFree as exc:
        return str(exc)
    return ""


def _by_symbols(src, graph, rows, row, other):
    """``graph`` at ``row``'s dim = ``other`` from the source's one symbolic lowering, by torch's shapes and the ops'
    rules (Note [symbols read directly]); None where they do not settle it (the caller lowers again)."""
    hints = src.hints(_sizes(src, rows, {row["symbol"]: other}))
    if hints is None:
        return None
    try:
        g1 = rebatch(graph, row["sites"], row["size"], other, hints)
    except NotFree:
        return None
    ends = [v for v in (*g1.inputs, *g1.outputs) if not g1.is_param(v)]
    return g1 if all(hints["shapes"].get(v.name) == tuple(v.type.shape) for v in ends) else None


def _exported_free(src, row) -> tuple:
    """(symbolic, why pinned): whether ``row``'s sites are symbols of the source's one torch.export (its second size
    a substitution, not a second export), and why torch specialised one of them ('' if none or not exported so)."""
    if getattr(src, "pinned", None) is None:  # torch sources exported symbolically only (Note [symbolic export])
        return False, ""
    return src.symbolic(row["sites"]), next((src.pinned[tuple(s)] for s in row["sites"] if tuple(s) in src.pinned), "")


def refree(record, symbols, notes):
    """The recorded graph with only ``symbols`` free (the others pinned); a clash between two pins the later."""
    rows = [row for row in record["rows"] if row["symbol"] in symbols]
    kept, found = [], []
    for row in rows:
        try:
            merge_found(found + [record["found"][row["symbol"]]])
        except NotFree as exc:
            notes.append(f"{row['symbol']} pinned to {row['size']}: {exc}")
            continue
        kept.append(row)
        found.append(record["found"][row["symbol"]])
    graph, merged = record["graph"], merge_found(found)
    dims = {}
    for row in kept:
        sites = [[i, axis] for i, v in enumerate(graph.inputs)
                 for axis, d in merged["values"].get(v.name, {}).items() if d.symbol == row["symbol"]
                 and d.scale == 1 and d.offset == 0 and d.div == 1]
        if not sites:
            notes.append(f"{row['symbol']} pinned to {row['size']}: no input axis carries it")
            continue
        dims[row["symbol"]] = {**{k: v for k, v in row.items() if k not in ("flag",)}, "sites": sites}
    if not dims:
        return graph
    try:
        return apply_free(graph, dims, merge_found([record["found"][s] for s in dims]))
    except NotFree as exc:
        notes.append(f"{', '.join(dims)} pinned: {exc}")
        return graph


def pinned_batch(src, graph, n, strict_tpu):
    """(source, graph) at batch ``n`` for ``--static-batch`` (BadInput where the model cannot run there)."""
    for row in src.dynamic_dims():
        if any(axis == 0 for _, axis in row["sites"]):
            check_static_batch(row, n, [v.name for v in graph.inputs])
    sites = {(i, 0): n for i, v in enumerate(graph.inputs) if v.type.rank}
    if all(graph.inputs[i].type.shape[0] == n for i, _ in sites):
        return src, graph
    try:
        src = src.resized(sites)
    except BadInput as exc:
        raise BadInput(f"--static-batch {n}: {exc}", hint="convert at the batch the model was saved with, or "
                       "re-export it with a free batch (torch.export.Dim)") from None
    return src, src.lower("model", strict_tpu)


def emit_free(stages, target, graph, record, tmp, src, seed, atol, rtol, verify, notes, emit_options, abstract):
    """Emit and load ``graph``; a free dim an emit rule cannot write, or that verifies wrong at another size,
    is pinned with a warning and the model emitted again. Returns (source, graph, emitted, model, size checks)."""
    free = set(graph.meta.get("free", {}).get("dims", {}))
    while True:
        try:
            emitted = stages.run("emit", target.emit, graph, tmp, **emit_options)  # UnsupportedOps (3): every node
        except FreeDimRefused as exc:
            if not exc.symbols & free:
                raise
            notes.append(f"{', '.join(sorted(exc.symbols & free))} pinned: {target.name} cannot keep it free at "
                         f"{exc.where or 'a node'} ({exc})")
            free -= exc.symbols
            src, graph = repin(record, free, notes)
            continue
        emitted.pop("model", None)  # the writer's copy; free it before loading the user's view of the files
        model = stages.run("load-emitted", target.load_abstract if abstract else target.load, tmp)
        sized = stages.run("verify-sizes", verify_sizes, src, graph, model, target, seed, atol, rtol) if verify else []
        wrong = {row["symbol"] for row in sized if not row["passed"]}
        if not wrong:
            return src, graph, emitted, model, sized
        for row in sized:
            if not row["passed"]:
                bad = next(c for c in row["sizes"] if c["passed"] is False)
                notes.append(_pinned_note(row["symbol"], bad, graph.meta["free"]["dims"][row["symbol"]]))
        free -= wrong
        src, graph = repin(record, free, notes)


def _pinned_note(symbol, bad, dim) -> str:
    """The warning for a dim pinned by its size check ``bad``; where rows mix, naming the node first (Note [which
    node mixes rows] in verification/chunks.py): "batch pinned at 2: node mean (mean) mixes rows: ...; at ..."."""
    problem = bad["problem"] or "outputs differ"
    culprit, _, problem = problem.partition("; ") if problem.startswith("node ") else ("", "", problem)
    head = f"{symbol} pinned at {dim.get('example', dim['size'])}: {culprit}; at" if culprit else f"{symbol} pinned: at"
    return f"{head} {symbol}={bad['size']} " + (
        problem if problem.startswith("the source") else f"the converted model differs ({problem})")


def dynamic_report(dims, graph, sized) -> list[DynamicDim]:
    """report["dynamic"]: each candidate dim, whether it stayed free, and its checks per size."""
    free = graph.meta.get("free", {}).get("dims", {})
    checks = {row["symbol"]: row for row in sized}
    return [DynamicDim(symbol=d["symbol"], free=d["symbol"] in free,
                       sites=[[graph.inputs[i].name, axis] for i, axis in free.get(d["symbol"], d)["sites"]],
                       example_size=d.get("example", d["size"]) if d["symbol"] in free else d["size"],
                       min=d.get("min"), max=d.get("max"), torch_symbol=d.get("torch_symbol"),
                       found_by=d.get("found_by"), verified=checks.get(d["symbol"], {}).get("sizes", []))
            for d in dims]


def lower_for(src, target, skip=None, raw=None, io_layout="source", free=True):
    """The source's IR after ``target``'s passes (minus ``skip``) and ``--io-layout``: what convert emitted,
    with the free dims it keeps by default (``free=False``: static, as with ``--static-batch``).

    ``skip`` None: the default pass set. ``raw`` reuses an already lowered, not yet rewritten graph (passes are
    pure functions).
    Example: ``make_inputs(lower_for(load("model.pt2"), TARGETS["keras-jax"]), seed=0)``.
    """
    skip = inference_skip() if skip is None else skip
    def prepare(graph):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convert already reported these warnings
            return prepared(graph, target, skip, io_layout)

    graph = prepare(src.lower() if raw is None else raw)
    if not free:
        return graph
    try:  # the dims convert keeps free by default (Note [free dims])
        return find_free(src, graph, lambda s: prepare(s.lower()), plan_dims(src, graph), [])[1]
    except BadInput:
        return graph
