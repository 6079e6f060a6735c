"""report.json's sections, built from a conversion's graph and results (the typed report: report.py).

Example:
    >>> base_report(src, graph, target, notes).ops["conv"].count
"""
from __future__ import annotations

from ..errors import VerificationFailed
from ..passes.layout import io_layouts
from ..passes.layout.one_channel import unknown_layout_notes
from ..passes.legalize import status_of
from .report import ConversionReport, Divergence, Dropped, Elements, Folded, Layout, OpRow, Training

__all__ = ["inventory", "base_report", "source_counts", "training", "written_files", "verification_failed",
           "GRAD_AUTO_BYTES"]

#: ``convert`` compares gradients by default up to this many bytes of weights (one backward pass each side)
GRAD_AUTO_BYTES = 64 << 20



def inventory(graph) -> dict:
    """op -> {"count": n, "scopes": [first scopes]} in first-seen order."""
    table = {}
    for node in graph.nodes:
        row = table.setdefault(node.op.name, {"count": 0, "scopes": []})
        row["count"] += 1
        if len(row["scopes"]) < 5 and node.scope not in row["scopes"]:
            row["scopes"].append(node.scope)
    return table


def base_report(src, graph, target, notes, io_layout="source") -> ConversionReport:
    """report.json's first fields: the source, target, graph size, op inventory, inputs, outputs and layout (with
    ``--io-layout``'s notes, also added to ``notes``: Note [one-channel images])."""
    layout = io_layouts(graph)
    notes += unknown_layout_notes(layout, io_layout)  # each note also on its layout row
    ops = {op: OpRow(**row, **{k: v for k, v in status_of(target.table, op).items() if k in ("status", "why")})
           for op, row in inventory(graph).items()}
    return ConversionReport(source=str(src.label), target=target.name, portx_ir_nodes=len(graph.nodes),
                            weight_bytes=graph.weight_bytes(), ops=ops,
                            inputs=[[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
                            outputs=[[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs],
                            layout=Layout.from_dict(layout), warnings=notes)


def source_counts(graph) -> dict:
    """Elements of the params the lowered graph reads: trainable in the source, and the rest."""
    trainable = sum(a.size for name, a in graph.params.items() if graph.is_trainable(name))
    return {"trainable": int(trainable), "non_trainable": int(sum(a.size for a in graph.params.values()) - trainable)}


def training(graph, source, converted, folding) -> Training:
    """report["training"]: what was folded or dropped, and the trainable/non-trainable element counts of the
    source (the params the model reads) and of the converted model, whose trainable ones must agree."""
    folded = [Folded(row["scope"], row["op"]) for rows in graph.meta.get("folded", {}).values() for row in rows]
    dropped = [Dropped(row["scope"], row["kind"]) for row in graph.meta.get("dropped", ())]
    match = source["trainable"] == converted["trainable"]
    problem = "" if match or folding else (
        f"trainable elements differ: source {source['trainable']:,}, converted {converted['trainable']:,} "
        "(a parameter read only through a folded computation became a constant)")
    return Training(mode="inference" if folding else "training", folded=folded, dropped=dropped,
                    parameters={"source": Elements(**source), "converted": Elements(**converted)},
                    trainable_match=match, problem=problem)


def written_files(out, target, export_tpu) -> dict:
    """ConversionResult.files: what OUT holds."""
    files = {"code": out / "model.py", "weights": target.weights_path(out), "report": out / "report.json",
             "report_html": out / "report.html"}
    if export_tpu:
        files.update(tpu_artifact=out / target.tpu_artifact, tpu_weights=out / f"{target.tpu_artifact}.weights.npz")
    return files


def verification_failed(result) -> VerificationFailed:
    """The error ``convert`` raises when its check fails; ``exc.result`` holds the result."""
    ver = result.typed.verification  # the typed report's Verification (report_sections.py)
    rows = ver.failed_outputs()
    where = ver.first_divergence or Divergence()
    exc = VerificationFailed(
        f"{result.out}: output {rows[0].name if rows else '?'} differs from the source "
        f"({rows[0].problem if rows else ver.problem}); first diverging node: "
        f"{where.scope or '?'} ({where.op or '?'})",
        hint="see report.html (the error along the graph) and report.json; rerun with --atol/--rtol if the "
             "tolerance is too tight")
    exc.result = result
    return exc
