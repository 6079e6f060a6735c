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

import numpy as np

from .compare import DEFAULT_ATOL, DEFAULT_RTOL, compare_arrays, run_reference

__all__ = ["LAYER_SLACK", "TRACE_MAX_NODES", "TRACE_MAX_BYTES", "TRACE_PASSED_NODES", "TRACE_PASSED_BYTES",
           "observe_values", "trace_layers", "first_failure", "localize", "node_errors"]

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


def _row(node, value, var, observed, reference, source, atol, rtol, order=None) -> dict:
    """One trace row: the emitted intermediate against the IR reference, and against the source when known.

    ``order``: the axis order the layout pass stores ``value`` in (Note [stored orders] in passes/layout_sink.py).
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
    return row


def trace_layers(graph, observed, reference, source, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, names=None,
                 stop=True) -> list:
    """Rows per observed IR value in graph order, up to and including the first that diverges (every one when
    not ``stop``).

    ``source`` maps IR value names to the source's own intermediates (may be empty).
    Example: ``trace_layers(graph, observed, run_reference(graph, arrays), {})[-1]["scope"]``.
    """
    rows, orders = [], graph.meta.get("stored_orders", {})
    added = graph.meta.get("layout_transposes", ())  # the layout pass's own transposes: no source layer
    for node in graph.nodes:
        for value in node.outputs:
            if value in observed and value in reference and value.name not in added:
                rows.append(_row(node, value, (names or {}).get(value), observed, reference, source, atol, rtol,
                                 orders.get(value.name)))
                if stop and not rows[-1]["passed"]:
                    return rows
    return rows


def first_failure(rows):
    """The first row that did not pass, or None."""
    return next((r for r in rows if not r["passed"]), None)


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
    return {k: bad[k] for k in ("scope", "op", "value", "max_abs", "problem")}


#: per-node errors are traced for graphs up to this many nodes and bytes of weights (the trace runs the IR's
#: NumPy reference and reads every intermediate of the emitted model once)
TRACE_MAX_NODES, TRACE_MAX_BYTES = 5000, 512 << 20
#: the limits when verification passed (the plot is then a line under the tolerance, and the NumPy reference
#: of a DenseNet-121 costs a minute on 2 cores): a failed verification is traced up to the limits above
TRACE_PASSED_NODES, TRACE_PASSED_BYTES = 300, 64 << 20


def node_errors(target, graph, model, names, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, code=None,
                passed=False) -> dict:
    """Every emitted intermediate against the IR's NumPy reference, past the first divergence (report.json's
    ``node_errors``, report.html's plot): the layer tolerances, the index of the first diverging row, and per
    row the node's scope, op, value and max relative error. A graph over the TRACE_MAX_* limits (TRACE_PASSED_*
    when ``passed``: verification passed), or a trace
    that fails, gets ``skipped`` (why) and no rows: the plot is a report extra, the conversion stands.
    Example: ``node_errors(target, graph, model, emitted["var_of"], arrays, code=emitted["code"])["rows"][0]``.
    """
    nodes, limit = (TRACE_PASSED_NODES, TRACE_PASSED_BYTES) if passed else (TRACE_MAX_NODES, TRACE_MAX_BYTES)
    if len(graph.nodes) > nodes or graph.weight_bytes() > limit:
        why = "verification passed; a passing model is traced up to " if passed else "limits "
        return {"skipped": f"not traced: {len(graph.nodes)} nodes and {graph.weight_bytes() / 1e6:.0f} MB of weights "
                f"({why}{nodes} nodes, {limit >> 20} MB); `portx verify --trace` traces every layer up to the first "
                "divergence", "rows": []}
    try:
        return _traced(target, graph, model, names, arrays, atol, rtol, code)
    except Exception as exc:  # noqa: BLE001 - a report extra: say why it is missing
        return {"skipped": f"the trace failed ({type(exc).__name__}: {str(exc)[:200]})", "rows": []}


def _traced(target, graph, model, names, arrays, atol, rtol, code) -> dict:
    from ..progress import step

    step(0, 2, "running the IR's NumPy reference")
    reference = run_reference(graph, arrays)
    step(1, 2, "reading the emitted model's intermediates")
    rows = trace_layers(graph, observe_values(target, model, graph, names, arrays, code), reference, {}, atol, rtol,
                        stop=False)
    step(2, 2, "compared")
    return {"atol": atol * LAYER_SLACK, "rtol": rtol * LAYER_SLACK,
            "first_divergence": next((i for i, r in enumerate(rows) if not r["passed"]), None),
            "rows": [{"node": r["scope"], "op": r["op"], "value": r["value"], "max_rel": r["max_rel"],
                      "passed": r["passed"]} for r in rows]}
