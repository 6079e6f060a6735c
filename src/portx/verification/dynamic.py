"""Free dimensions end to end (Note [free dims] in ir/types.py): which dims stay free, and the check at
several sizes of each.

``plan_dims`` lists the candidates: the batch (axis 0 of every input) unless ``--static-batch``, the
dims the source declares (torch.export Dims, Keras None dims) and ``--dynamic NAME:AXIS`` ones.
``find_free`` lowers the source again at a second size of each (a substitution into the symbols of one
torch.export where it has them: Note [symbolic export] in frontends/torch_symbols.py) and diffs the graphs
(passes/free_dims.py); a dim torch specialised, that the model cannot run at, or whose graph changes in a way no
free dim explains, is pinned at the example's size with a warning that says why (a declared one the model fixes
is an error); a static program's second graph comes from its ops' shape rules (Note [static batch] in
passes/static_batch.py). ``verify_sizes`` runs the source and the converted model at several sizes of each free
dim (the batch at the example's, 1 and 8, its reference the source on row chunks of the example's batch: Note
[rows independent] in chunks.py) and reports each.

Example:
    >>> dims = plan_dims(src, graph, dynamic=["x:1"])
    >>> src, graph, free = find_free(src, graph, prepare, dims, notes)
    >>> verify_sizes(src, graph, model, target, seed=0)[0]["sizes"]
"""
from __future__ import annotations

import re
import warnings
from concurrent.futures import ThreadPoolExecutor

from ..errors import BadInput
from ..ir import batch_inputs
from ..progress import step
from ..passes.free_dims import NotFree, apply_free, diff_free, merge_found
from ..passes.static_batch import rebatch
from .chunks import batch_reference, chunk_problem
from .compare import (DEFAULT_ATOL, DEFAULT_RTOL, compare, input_dtype, narrow_outputs, random_outputs,
                      sign_free_outputs)
from .domain import cycled, example_fraction, sized_batch, verify_in_domain
from .memory import release
from .trace import localize

__all__ = ["ONE_TRACED_AT", "example_shapes", "verify_example", "plan_dims", "find_free", "refree", "repin",
           "verify_sizes", "example_checked", "parse_dynamic", "check_static_batch", "BATCH_SAMPLES"]

#: batch sizes verified besides the example's
BATCH_SAMPLES = (1, 8)
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
    """``--dynamic`` axes of one example size are one symbol (ids and their mask share a sequence length)."""
    out, by_size = [], {}
    for row in rows:
        if row.get("flag") and row["size"] in by_size:
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


def _other_size(row) -> int | None:
    """A second size for diffing, never 1 (torch specializes sizes 0 and 1); None when the range has none."""
    size, low, high = row["size"], max(row.get("min") or 1, 2), row.get("max")
    for candidate in (size + 1, size + 2, size - 1):
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
    """'' when ``row``'s dim is free (its diff into ``found``), else why not (for one torch pinned, its guard)."""
    symbolic, pinned = _exported_free(src, row)
    if pinned:
        return row.update(found_by="symbolic export") or pinned
    other = _other_size(row)
    if other is None:
        return f"its range [{row.get('min')}, {row.get('max')}] has no second size to check"
    try:
        _, g1 = _at(src, prepare, rows, {row["symbol"]: other})
    except Exception as exc:  # noqa: BLE001 - any failure there (a guard, an op) means "not free"
        if row["symbol"] != "batch" or row.get("declared"):
            return f"the model does not run at {row['symbol']}={other} ({_one_line(exc)})"
        g1 = None  # a static program (Note [static batch] in passes/static_batch.py)
    # report.json says which: the symbols of one export, a second export's lowering, or the ops' shape rules
    row["found_by"] = ("symbolic export" if symbolic else "two lowerings") if g1 is not None else "the ops' shape rules"
    try:
        g1 = g1 or rebatch(graph, row["sites"], row["size"], other)
        found[row["symbol"]] = diff_free(graph, g1, row["symbol"], row["size"], other)
    except NotFree as exc:
        return str(exc)
    return ""


def _exported_free(src, row) -> tuple:
    """(symbolic, why pinned): whether ``row``'s sites are symbols of the source's one torch.export (its second size
    a substitution, not a second export), and why torch specialised one of them ('' if none or not exported so)."""
    if getattr(src, "pinned", None) is None:  # torch sources exported symbolically only (Note [symbolic export])
        return False, ""
    return src.symbolic(row["sites"]), next((src.pinned[tuple(s)] for s in row["sites"] if tuple(s) in src.pinned), "")


def _one_line(exc) -> str:
    """An exception as one short line without terminal colour codes (Keras wraps errors in them)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Exception encount")]
    body = lines[0] if lines else ""
    if isinstance(exc, BadInput):
        return body[:240]
    return f"{type(exc).__name__}: {body[:200]}"


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
                 and d.scale == 1 and d.offset == 0]
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


def sample_sizes(dim) -> list:
    """The sizes a free dim is verified at: the example's, 1 and 8 for the batch, else the example's and one
    more, inside its range. The example's is the size the user gave (``example_shapes``)."""
    size, low, high = dim.get("example", dim["size"]), dim.get("min") or 1, dim.get("max")
    wanted = [size, *BATCH_SAMPLES] if dim["symbol"] == "batch" else [size, size + 3, max(low, size - 1)]
    inside = [n for n in dict.fromkeys(wanted) if n >= low and (high is None or n <= high)]
    return inside if dim["symbol"] == "batch" else inside[:2]


def verify_sizes(src, graph, model, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> list:
    """One row per free dim: {"symbol", "sizes": [{"size", "passed", "max_abs", ...}]}, each size checked
    with the other dims at the example's size (Note [compile ahead]). The example's own shapes are
    compiled here but checked by convert's verify stage, which compares the same seeded batch: their entry
    says ``"by": "verify"`` until ``example_checked`` copies that stage's result in."""
    dims = graph.meta.get("free", {}).get("dims", {})
    plan = [(symbol, n, example_shapes(graph, {symbol: n})) for symbol, dim in dims.items()
            for n in sample_sizes(dim)]
    plan = [(symbol, n, shapes) for symbol, n, shapes in plan
            if all(d >= 1 for shape in shapes for d in shape)]  # a dim that follows one with an offset: empty here
    example = repr(example_shapes(graph))
    checks, run = {}, target.runner(model)  # made here, once: its compiles are shared with later stages
    with ThreadPoolExecutor(max_workers=1) as compiler:
        ahead = _compile_ahead(compiler, run, graph, [shapes for _, _, shapes in plan])
        # inputs of one shape (two dims both at one size) are checked once
        others = {repr(shapes): (f"{symbol}={n}", shapes, symbol) for symbol, n, shapes in plan
                  if repr(shapes) != example}
        step(0, len(others), "the source at " + ", ".join(label for label, *_ in others.values()))
        allowed = example_fraction(src, graph) if others else None  # the source on its example: once, not per size
        batches = {key: batch_reference(src, graph, seed, shapes, allowed, dims[symbol] if symbol == "batch" else None)
                   for key, (_, shapes, symbol) in others.items()}
        release(collect=False)  # the source's freed activations, before XLA's threads allocate theirs
        for done, (key, (label, *_)) in enumerate(others.items()):
            step(done, len(others), label)  # progress.py display
            checks[key] = _check_size(graph, run, *batches.pop(key), atol, rtol, ahead.get(key))
            if others[key][2] == "batch":
                chunk_problem(checks[key], dims["batch"])
            release(collect=False)
    rows = []
    for symbol, dim in dims.items():
        sized = [{"size": n, **checks.get(repr(shapes), _BY_VERIFY)} for s, n, shapes in plan if s == symbol]
        rows.append({"symbol": symbol, "sites": [[graph.inputs[i].name, axis] for i, axis in dim["sites"]],
                     "min": dim.get("min"), "max": dim.get("max"), "sizes": sized,
                     "passed": all(c["passed"] is not False for c in sized)})
    return rows


_BY_VERIFY = {"passed": None, "problem": None, "max_abs": None, "max_rel": None, "by": "verify"}


def example_checked(rows, verification) -> list:
    """``verify_sizes``' rows with the example's size filled in from convert's verification result (the same
    seeded batch at the same shapes): passed, problem and the largest errors over the outputs."""
    outputs = verification.get("outputs") or []
    problem = verification.get("problem") or next((o.get("problem") for o in outputs if not o.get("passed")), None)
    result = {"passed": verification.get("passed"), "problem": problem or None,
              "max_abs": max((o.get("max_abs") or 0.0 for o in outputs), default=None),
              "max_rel": max((o.get("max_rel") or 0.0 for o in outputs), default=None)}
    for row in rows:
        row["sizes"] = [{**c, **result} if c.get("by") == "verify" else c for c in row["sizes"]]
        row["passed"] = all(c["passed"] is not False for c in row["sizes"])
    return rows


def example_shapes(graph, at=None) -> list:
    """The input shapes the user's example has: the graph's, but for a free dim traced at another size than the
    example's (a batch of 1 is traced at 2: Note [batch of one] in frontends/torch_files.py), at the example's.
    Convert verifies there, so the size checks and verification share that compile (batch 1: sizes 1 and 8 are
    two XLA compiles of the forward, not three). ``at``: {symbol: size} for dims checked at another size."""
    dims, at = graph.meta.get("free", {}).get("dims", {}), at or {}
    return [tuple(d.at(at.get(d.symbol, dims[d.symbol].get("example", d.size))) if getattr(d, "symbol", None) in dims
                  else (d if isinstance(d, int) else d.size) for d in graph.free_shape(v)) for v in graph.inputs]


def verify_example(src, graph, model, emitted, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> dict:
    """Convert's own check: the source against the loaded ``model`` on one seeded batch at ``example_shapes``;
    when they differ, the first IR node whose emitted value differs from the IR reference (verification/trace.py),
    read on those inputs with their rows cycled to the graph's own shapes (the reference runs there)."""
    shapes = example_shapes(graph)
    result, arrays = verify_in_domain(src, graph, model, target, seed, atol, rtol, shapes)  # verification/domain.py
    result.update({"seed": seed, "inputs": [[v.name, list(shape), v.type.dtype] for v, shape in
                                            zip(graph.inputs, shapes)]})
    if result["passed"] is False:
        arrays = cycled(arrays, [tuple(v.type.shape) for v in graph.inputs])
        result["first_divergence"] = localize(target, graph, model, emitted["var_of"], arrays, atol, rtol,
                                              emitted["code"])
    return result


def _compile_ahead(compiler, run, graph, plan) -> dict:
    """{repr(shapes): future} of the converted model's compile at each planned size, in plan order on one
    thread, when the runner can compile ahead (Note [compile ahead]); {} when it cannot."""
    compile_for = getattr(run, "compile_for", None)
    if compile_for is None:
        return {}
    ahead = {}
    for shapes in plan:
        if repr(shapes) not in ahead:
            ahead[repr(shapes)] = compiler.submit(compile_for, [(shape, input_dtype(v))
                                                                for shape, v in zip(shapes, graph.inputs)])
    return ahead

# Note [compile ahead]: each size check is a run of the source (torch on the CPU) and one XLA compile and run
# of the converted model. XLA compiles with the GIL released, so the compiles of every planned size start at
# once on one background thread, in plan order, while the main thread runs the source at every size first
# (on two cores the compiles overlap all of the source's runs; the expected outputs and inputs of every size
# are held until their check, a few MB for a batch of 8 images). Each check then waits for its own size's
# compile before it runs, so no shape compiles twice; a compile that fails is left for the run to report.
# The checks are the same as when run alone: their own seeded inputs, the same tolerances, and the target's
# runner (made once, so the jitted forward and its compile per shape are shared with the later stages).
# resnet50 with a batch-1 example (sizes 1 and 8): the source runs at 8 while the forward compiles at 1 and 8,
# and convert's verify stage then checks the example at 1 on that compile.


def _check_size(graph, run, arrays, expected, atol, rtol, compiled=None) -> dict:
    """{"passed", "problem", "max_abs", "max_rel"} of ``run`` (the converted model's runner) on ``arrays`` against
    ``expected`` (``sized_batch``'s: the source's outputs, or why it has none); ``compiled``: the future of
    ``run``'s compile at these shapes (Note [compile ahead])."""
    if compiled is not None:
        compiled.exception()  # waits; a failed compile is reported by the run below
    try:
        result = {"passed": False, "outputs": [], "problem": expected} if isinstance(expected, str) else \
            compare(expected, run(arrays), [v.name for v in graph.outputs], atol, rtol,
                    random=random_outputs(graph), signs=sign_free_outputs(graph), narrow=narrow_outputs(graph))
    except Exception as exc:  # noqa: BLE001 - a model that fails at this size is the finding
        result = {"passed": False, "outputs": [], "problem": _one_line(exc)}
    return {"passed": result["passed"], "problem": result.get("problem"),
            "max_abs": max((r.get("max_abs", 0.0) or 0.0 for r in result["outputs"]), default=None),
            "max_rel": max((r.get("max_rel", 0.0) or 0.0 for r in result["outputs"]), default=None)}
