"""Per-layer tracing for any target: each emitted intermediate against the IR's NumPy reference.

The emitted model and the IR's NumPy reference both follow the IR graph, so they are compared value
by value, in graph order, up to the first value that differs: that node is where a conversion went
wrong. Where the source computes the same value one-to-one (``Source.intermediates``), each row
also compares with the source's own number. ``Target.observe`` reads the emitted model's values
(build_model's locals for Keras, forward's locals for PyTorch); the emitter's ``names`` say which
variable holds which IR value.

Example:
    >>> where = localize(target, graph, model, emitted["var_of"], make_inputs(graph, 0), code=emitted["code"])
    >>> where["scope"], where["op"]
    ('block.3', 'conv')
"""
from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from ..progress import step
from ..session.report_rows import TraceRow
from ..session.report_sections import NodeErrors, NodeRow
from .compare import DEFAULT_ATOL, DEFAULT_RTOL, compare_arrays, run_reference
from .memory import release

__all__ = ["LAYER_SLACK", "TRACE_MAX_NODES", "TRACE_MAX_BYTES", "TRACE_SAMPLED_ROWS", "TRACE_SAMPLED_ELEMENTS",
           "observe_values", "trace_layers", "first_failure", "localize", "node_errors", "node_rows", "reference_steps"]

#: intermediate values carry more rounding than outputs: their tolerances are this many times looser
LAYER_SLACK = 10


def observe_values(target, model, graph, names, arrays, code=None) -> dict:
    """{IR Value: array} for every intermediate of ``model`` that ``names`` (Value -> variable) pairs with.

    Graph inputs, stored arrays and values whose shape differs from the IR's are left out.
    Example: ``observe_values(TARGETS["torch-xla"], model, graph, emitted["var_of"], arrays)[value]``.
    """
    wanted = {v: var for v, var in names.items() if v not in graph.inputs and not graph.is_param(v)}
    got = target.observe(model, arrays, set(wanted.values()), code)
    return {v: got[var] for v, var in wanted.items()
            if var in got and tuple(np.shape(got[var])) == tuple(v.type.shape)}


def _row(node, value, var, observed, reference, source, atol, rtol, order=None) -> TraceRow:
    """One trace row: the emitted intermediate against the IR reference, and against the source when known.

    ``order``: the axis order the layout pass stores ``value`` in (Note [stored orders] in passes/layout/sink.py).
    """
    ref = compare_arrays(reference[value], observed[value], atol * LAYER_SLACK, rtol * LAYER_SLACK)
    row = {"scope": node.scope, "op": node.op.name, "value": value.name, "var": var,
           "max_abs": ref["max_abs"], "max_rel": ref["max_rel"], "passed": ref["passed"], "problem": ref["problem"],
           "source": None}
    theirs = source.get(value.name)
    if theirs is not None and order is not None and np.ndim(theirs) == len(order):
        theirs = np.transpose(theirs, order)
    if theirs is not None and tuple(theirs.shape) == tuple(value.type.shape):
        src = compare_arrays(theirs, observed[value], atol * LAYER_SLACK, rtol * LAYER_SLACK)
        row["source"] = {k: src[k] for k in ("max_abs", "max_rel", "passed", "problem")}
        if ref["passed"] and not src["passed"]:
            row.update(passed=False, problem=f"differs from the source's intermediate: {src['problem']}")
    return TraceRow.from_dict(row)


def trace_layers(graph, observed, reference, source, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, names=None,
                 stop=True) -> list:
    """Rows per observed IR value in graph order, up to and including the first that diverges (every one when
    not ``stop``).

    ``source`` maps IR value names to the source's own intermediates (may be empty).
    Example: ``trace_layers(graph, observed, run_reference(graph, arrays), {})[-1].scope`` (a ``TraceRow``).
    """
    rows, orders = [], graph.meta.get("stored_orders", {})
    added = graph.meta.get("layout_transposes", ())  # the layout pass's own transposes: no source layer
    for node in graph.nodes:
        for value in node.outputs:
            if value in observed and value in reference and value.name not in added:
                rows.append(_row(node, value, (names or {}).get(value), observed, reference, source, atol, rtol,
                                 orders.get(value.name)))
                if stop and not rows[-1].passed:
                    return rows
    return rows


def first_failure(rows) -> TraceRow | None:
    """The first row that did not pass, or None."""
    return next((r for r in rows if not r.passed), None)


def localize(target, graph, model, names, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, code=None) -> dict:
    """The first IR node whose emitted intermediate differs from the IR's NumPy reference (used by convert).

    ``names`` is the emitter's Value -> variable map (``emitted["var_of"]``), ``code`` the written model.py.
    Example: ``localize(target, graph, model, emitted["var_of"], arrays, code=emitted["code"])["scope"]``.
    """
    observed = observe_values(target, model, graph, names, arrays, code)
    bad = first_failure(trace_layers(graph, observed, run_reference(graph, arrays), {}, atol, rtol))
    if bad is None:
        return {"scope": None, "op": None, "problem": "every intermediate matches the IR reference: "
                "the IR itself differs from the source (a frontend import rule)"}
    return {k: getattr(bad, k) for k in ("scope", "op", "value", "max_abs", "problem")}


#: per-node errors are traced for graphs up to this many nodes and bytes of weights (the trace runs the IR's
#: NumPy reference once and reads every intermediate of the emitted model in one run)
TRACE_MAX_NODES, TRACE_MAX_BYTES = 5000, 512 << 20
#: when verification passed (the plot is then a line under the tolerance), at most this many intermediates, evenly
#: spaced along the graph, and at most this many of their elements (64 MB as float32: they are held together
#: while the NumPy reference runs), are read (report.html says the plot is sampled); a failed verification
#: reads them all. Below 256 MB of weights the elements are at most a quarter of the weight bytes' worth (at
#: least a quarter of this): what the trace holds follows the model's size (Note [activations follow the weights])
TRACE_SAMPLED_ROWS, TRACE_SAMPLED_ELEMENTS = 1000, 16 << 20
#: and its trace stops after this share of the conversion's time so far, or TRACE_MIN_SECONDS when more (the
#: NumPy reference runs in float64: on a ViT-S at 224 it is most of the trace's ~6 s in a 45 s conversion)
TRACE_SHARE, TRACE_MIN_SECONDS = 0.1, 10.0


def node_errors(target, graph, model, names, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, code=None,
                passed=False, spent=None) -> NodeErrors:
    """Every emitted intermediate against the IR's NumPy reference, past the first divergence (report.json's
    ``node_errors``, report.html's plot): the layer tolerances, the index of the first diverging row, and per
    row the node's scope, op, value and max relative error. When ``passed`` (verification passed) and the graph
    has more than TRACE_SAMPLED_ROWS intermediates, an evenly spaced sample of them (``sampled``: every how
    many, of how many); with ``spent`` (the conversion's seconds so far) its trace stops once it took
    TRACE_SHARE of that (at least TRACE_MIN_SECONDS): ``stopped`` says after how many rows of how many, and why.
    A graph over the TRACE_MAX_* limits, or a trace that fails, gets ``skipped`` (why) and no rows: the plot is
    a report extra, the conversion stands.
    Example: ``node_errors(target, graph, model, emitted["var_of"], arrays, code=emitted["code"]).rows[0]``.
    """
    if len(graph.nodes) > TRACE_MAX_NODES or graph.weight_bytes() > TRACE_MAX_BYTES:
        return NodeErrors(skipped= f"not traced: {len(graph.nodes)} nodes and {graph.weight_bytes() / 1e6:.0f} MB of weights "
                f"(limits {TRACE_MAX_NODES} nodes, {TRACE_MAX_BYTES >> 20} MB); `portx verify --trace` traces every "
                "layer up to the first divergence", rows=[])
    try:
        budget = max(TRACE_MIN_SECONDS, TRACE_SHARE * spent) if passed and spent is not None else None
        with tempfile.TemporaryDirectory(prefix="portx-trace-") as scratch:
            names, code, model = _flat_for_trace(target, graph, names, code, model, scratch)
            return NodeErrors.from_dict(_traced(target, graph, model, names, arrays, atol, rtol, code, passed, budget))
    except Exception as exc:  # noqa: BLE001 - a report extra: say why it is missing
        return NodeErrors(skipped=f"the trace failed ({type(exc).__name__}: {str(exc)[:200]})", rows=[])


def _flat_for_trace(target, graph, names, code, model, scratch) -> tuple:
    """(names, code, model) to trace: for code that writes repeated blocks once (Note [structured code] in
    targets/structure.py), whose intermediates are the locals of a block function or a block class's ``forward``,
    the same graph emitted flat into ``scratch``. Keras builds it with the converted model's own weights, layer by
    layer (their names are the same); torch loads it with the graph's arrays, the ones the converted model was
    written from (a nested path may differ from its flat emission's: a keras.applications block's layers)."""
    if not graph.meta.get("blocks") or (code is None and target.name == "keras-jax"):
        return names, code, model
    flat_graph = graph.replace(meta={**graph.meta, "blocks": []})
    if target.name != "keras-jax":
        emitted = target.emit(flat_graph, scratch)
        return emitted["var_of"], emitted["code"], target.load(scratch)
    emitter = target.emitter(flat_graph)
    flat = Path(scratch) / "model.py"
    flat.write_text(emitter.emit_graph(), encoding="utf-8")
    return emitter.var_of(), flat, model


def _traced(target, graph, model, names, arrays, atol, rtol, code, passed, budget) -> dict:
    began, stopped = time.perf_counter(), None
    added = graph.meta.get("layout_transposes", ())
    traced = [v for node in graph.nodes for v in node.outputs
              if v in names and v.name not in added and v not in graph.inputs and not graph.is_param(v)]
    elements = sum(math.prod(v.type.shape) for v in traced)
    most = min(TRACE_SAMPLED_ELEMENTS, max(TRACE_SAMPLED_ELEMENTS // 4, graph.weight_bytes() // 16))
    every = max(1, -(-len(traced) // TRACE_SAMPLED_ROWS), -(-elements // most)) if passed else 1
    chosen = set(traced[::every]) | set(traced[-1:])
    step(0, len(graph.nodes), "reading the emitted model's intermediates (one run)")
    observed = observe_values(target, model, graph, {v: names[v] for v in chosen}, arrays, code)
    release(collect=False)  # the probe's compile, given back before the reference allocates (verification/memory.py)
    rows, orders = [], graph.meta.get("stored_orders", {})
    for done, (node, reference) in enumerate(reference_steps(graph, arrays)):
        if budget is not None and time.perf_counter() - began > budget and observed:
            stopped = {"rows": len(rows), "of": len(rows) + len(observed), "seconds": round(budget, 1),
                       "why": f"a passing model's trace gets {TRACE_SHARE:.0%} of the conversion's time, at least "
                              f"{TRACE_MIN_SECONDS:.0f} s"}
            break
        if done % 50 == 0:
            step(done, len(graph.nodes), f"{node.scope or '<top>'} ({node.op.name}) against the NumPy reference")
        for value in node.outputs:
            if value in observed and value in reference:  # reduced to its row at once: memory stays bounded
                rows.append(_row(node, value, names.get(value), observed, reference, {}, atol, rtol,
                                 orders.get(value.name)))
                del observed[value]
    step(len(graph.nodes), len(graph.nodes), "compared")
    if stopped and not rows:
        return {"skipped": f"the emitted model's run took the trace's {budget:.0f} s (a passing model's trace gets "
                f"{TRACE_SHARE:.0%} of the conversion's time)", "rows": []}
    return {"atol": atol * LAYER_SLACK, "rtol": rtol * LAYER_SLACK,
            "first_divergence": next((i for i, r in enumerate(rows) if not r.passed), None),
            **({"sampled": {"every": every, "of": len(traced)}} if every > 1 else {}),
            **({"stopped": stopped} if stopped else {}),
            "rows": node_rows(rows)}


def node_rows(rows) -> list:
    """``TraceRow``s as report["node_errors"]'s rows (``NodeRow``: node, op, value, max_rel, passed)."""
    return [NodeRow(node=r.scope, op=r.op, value=r.value, max_rel=r.max_rel, passed=r.passed) for r in rows]


def reference_steps(graph, arrays):
    """(node, {Value: array}) per node in graph order: the IR's NumPy reference (as ``run_reference``), each value
    dropped once the last node that reads it has run, so a long graph holds only its live values."""
    env = {v: np.asarray(a) for v, a in zip(graph.inputs, arrays)}
    env.update({graph.param_values[n]: a for n, a in graph.params.items()})
    last = {v: i for i, node in enumerate(graph.nodes) for v in node.inputs if v is not None}
    for i, node in enumerate(graph.nodes):
        args = [None if v is None else env[v] for v in node.inputs]
        while args and args[-1] is None and not node.op.variadic:
            args.pop()
        result = node.op.reference_rule(*args, **node.attrs)
        produced = {v: np.asarray(a) for v, a in zip(node.outputs, result if isinstance(result, (list, tuple))
                                                     else [result])}
        env.update(produced)
        yield node, produced
        for v in [*node.inputs, *produced]:
            if v is not None and last.get(v, -1) <= i:
                env.pop(v, None)
