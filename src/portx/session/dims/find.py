"""Which of a conversion's candidate free dims (plan.py) stay free (Note [free dims] in ir/types.py), and what
happens to one that cannot.

``find_free`` gets the graph at a second size of each (from a symbolic torch.export's own shapes without
lowering again: Note [symbols read directly] in frontends/torch/symbols.py; else by lowering the source again,
by substitution into the export's symbols where it has them) and diffs the graphs
(passes/free_dims.py); a dim the model cannot run at, or whose graph changes in a way no free dim
explains, is pinned at the example's size with a warning that says why (a declared one the model
fixes to a constant is an error); a source that cannot run at another batch (a static program) gets that
graph from its ops' shape rules (Note [static batch] in passes/static_batch.py). ``repin``/``refree`` give the
graph with fewer dims free (emit.py pins at emit time).

Example:
    >>> src, graph, free = find_free(src, graph, prepare, plan_dims(src, graph), notes)
"""
from __future__ import annotations

import warnings

import numpy as np

from ...errors import BadInput
from ...passes.free_dims import NotFree, apply_free, diff_free, merge_found
from ...passes.layout import graph_axis, source_ends
from ...passes.static_batch import rebatch
from ...verification.dynamic import one_line
from ...weights.tensors import array_of
from .divided import stepped_diff

__all__ = ["ONE_TRACED_AT", "find_free", "refree", "repin"]


#: report.json's ``found_by`` where the one symbolic export's symbols did not settle the graph at a second size, so
#: that export was lowered again there (Note [symbols read directly])
FOUND_BY_SUBSTITUTION = "symbolic export, lowered twice"

#: a free dim whose example size is 1 is traced at this size instead (Note [free dims]: torch specializes 1)
ONE_TRACED_AT = 2


# Note [divided dims]: a U-Net pools its image by 2 and upsamples it back: ``h // 2``. Two sizes one apart cannot
# pin a floor's rounding (``h // 2`` and ``(h + 1) // 2`` agree at 16 and 20) and the model may not run at an odd
# size at all (torch's cat needs ``2 * (h // 2) == h``). Torch's shapes say what it divides each symbol by
# (``FloorDiv``, ``CeilDiv``, ``Mod`` in ``meta["val"]``: ``divisor`` in frontends/torch/symbols.py); the second
# size is that ``step`` away, so ``_affine`` (passes/free_dims.py) reads a half step as ``SymDim(..., div=2)``,
# exact at every size the example's plus a multiple of ``step``, which the checks and the warning keep to. A source
# with no symbols (ONNX, a ``.pt2`` without Dims, JAX) finds its step by lowering: Note [steps found by lowering]
# in divided.py.
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
    notes += [n for n in src.fallback_notes() if n not in notes]  # why a traced source lowered twice
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
    if not symbolic and row["symbol"] != "batch":  # no symbols say its step (Note [steps found by lowering])
        row["found_by"] = "two lowerings"
        diff, why = stepped_diff(graph, row, lambda n: _at(src, prepare, rows, {row["symbol"]: n})[1], _other_size)
        found.update({row["symbol"]: diff} if diff is not None else {})
        return why
    row["step"] = src.divisor(row["sites"]) if symbolic else 1
    other = _other_size(row)
    if other is None:
        return f"its range [{row.get('min')}, {row.get('max')}] has no second size to check"
    if row["step"] > 1:  # torch may divide where the model cannot run (a reshape to literals): run it there once
        try:
            sized = src.resized(_sizes(src, rows, {row["symbol"]: other}))
            sized.run(*[a if isinstance(a, np.ndarray) else array_of(a, widen=True)
                         for a in sized.examples()])  # a torch source's examples are tensors
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
        g1 = g1 or rebatch(graph, _graph_sites(graph, row["sites"]), row["size"], other)
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
        g1 = rebatch(graph, _graph_sites(graph, row["sites"]), row["size"], other, hints)
    except NotFree:
        return None
    for (_, name, perm), v in zip(source_ends(graph), (*g1.inputs, *g1.outputs)):  # torch's shapes, permuted as
        want = hints["shapes"].get(name)  # --io-layout permuted the graph's (Note [free dims in the emitted layout])
        if not g1.is_param(v) and (want is None or _permuted(want, perm) != tuple(v.type.shape)):
            return None
    return g1


def _permuted(shape, perm) -> tuple:
    return tuple(shape) if perm is None else tuple(shape[p] for p in perm)


def _graph_sites(graph, sites) -> list:
    """``sites`` ([input, axis] in the source's axes) in ``graph``'s (Note [free dims in the emitted layout])."""
    return [[i, graph_axis(graph, i, axis)] for i, axis in sites]


def _exported_free(src, row) -> tuple:
    """(symbolic, why pinned): whether ``row``'s sites are symbols of the source's one torch.export (its second size
    a substitution, not a second export), and why torch specialised one of them ('' if none or not exported so)."""
    pinned = src.pinned_dims()
    if pinned is None:  # sources exported symbolically only (Note [symbolic export])
        return False, ""
    return src.symbolic(row["sites"]), next((pinned[tuple(s)] for s in row["sites"] if tuple(s) in pinned), "")


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
