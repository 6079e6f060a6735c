"""Free dims at emit time: ``emit_free`` pins a dim that an emit rule cannot write, or that ``verify_sizes``
(verification/dynamic.py) finds wrong at another size, and emits again; ``dynamic_report`` is report.json's
``dynamic`` section.

Example:
    >>> src, graph, emitted, model, sized = emit_free(stages, target, graph, record, tmp, src, ...)
"""
from __future__ import annotations

from ...ir import FreeDimRefused
from ...passes.layout import graph_axis
from ...verification.dynamic import verify_sizes
from ..report import DynamicDim
from .find import repin

__all__ = ["emit_free", "dynamic_report"]


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
                bad = next(c for c in row["sizes"] if c.passed is False)
                notes.append(_pinned_note(row["symbol"], bad, graph.meta["free"]["dims"][row["symbol"]]))
        free -= wrong
        src, graph = repin(record, free, notes)


def _pinned_note(symbol, bad, dim) -> str:
    """The warning for a dim pinned by its size check ``bad``; where rows mix, naming the node first (Note [which
    node mixes rows] in verification/chunks.py): "batch pinned at 2: node mean (mean) mixes rows: ...; at ..."."""
    problem = bad.problem or "outputs differ"
    culprit, _, problem = problem.partition("; ") if problem.startswith("node ") else ("", "", problem)
    head = f"{symbol} pinned at {dim.get('example', dim['size'])}: {culprit}; at" if culprit else f"{symbol} pinned: at"
    return f"{head} {symbol}={bad.size} " + (
        problem if problem.startswith("the source") else f"the converted model differs ({problem})")


def dynamic_report(dims, graph, sized) -> list[DynamicDim]:
    """report["dynamic"]: each candidate dim, whether it stayed free, and its checks per size; its sites in the emitted
    model's axes (Note [free dims in the emitted layout] in passes/layout/__init__.py); the ``--dynamic`` axes that
    asked for it in the source's (``flag``: what ``portx verify`` reads back)."""
    free = graph.meta.get("free", {}).get("dims", {})
    checks = {row["symbol"]: row for row in sized}
    return [DynamicDim(symbol=d["symbol"], free=d["symbol"] in free,
                       sites=_report_sites(graph, free, d),
                       example_size=d.get("example", d["size"]) if d["symbol"] in free else d["size"],
                       min=d.get("min"), max=d.get("max"), torch_symbol=d.get("torch_symbol"),
                       found_by=d.get("found_by"), verified=checks.get(d["symbol"], {}).get("sizes", []),
                       step=free[d["symbol"]].get("step", 1) if d["symbol"] in free else None,
                       flag=[f"{graph.inputs[i].name}:{axis}" for i, axis in d["flag"]] if d.get("flag") else None)
            for d in dims]


def _report_sites(graph, free, dim) -> list:
    """[[input name, axis]] in the emitted model's axes: a free dim's are (``refree``); a pinned one's are the
    source's, mapped through ``--io-layout``'s permutes."""
    if dim["symbol"] in free:
        return [[graph.inputs[i].name, axis] for i, axis in free[dim["symbol"]]["sites"]]
    return [[graph.inputs[i].name, graph_axis(graph, i, axis)] for i, axis in dim["sites"]]
