"""report.html: the conversion report as one self-contained page, a pure function of report.json (read back as a
typed ``ConversionReport``, session/report.py; Note [optional fields] in reporting/text.py).

The page opens from disk with no server, no network, no script and no external file: inline CSS, and the error
plot as inline SVG made with matplotlib (Agg, imported only here). It shows the numerical error along the graph
(``report["node_errors"]``: max relative error per node in graph order, log scale, the layer tolerance as a
line, the first diverging node marked), verification per output, per block (on the source's values) and per
batch size, the op inventory with each op's TPU status, what was folded or dropped, the inner transposes with their reasons, the TPU lowering, the
warnings, and the stage times (with memory when ``--profile`` was given). Every text that comes from a model
file (layer and value names) is escaped: model files are untrusted.

Example:
    >>> write_report(Path("out/report.html"), ConversionReport.read(json.loads(Path("out/report.json").read_text())))
    >>> "<svg" in render(report)
    True
"""
from __future__ import annotations

import io
import math
import re
from html import escape
from pathlib import Path

from ..session.report_rows import SizeCheck
from ..session.report_sections import Layout, NodeErrors, Profile, ProfileRow, TpuProof, Verification

__all__ = ["render", "write_report", "error_plot", "first_divergence"]

#: max relative errors of exactly 0 are drawn at this floor on the log scale
_FLOOR = 1e-12
#: graphs with at most this many traced nodes get one named tick per node
_NAMED_TICKS = 40
_REASONS = {"source": "the source model permutes here itself (e.g. splitting attention heads)",
            "layout": "kept by the layout pass: a reshape here really mixes the channel axis with others"}
_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#1b1f24;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.skip{color:#6e7781}
code{background:#f6f8fa;padding:0 3px;border-radius:3px}.bar{background:#54aeff;height:10px;display:inline-block}
.plot svg{max-width:100%;height:auto}.note{color:#57606a}"""


def _t(value) -> str:
    """Escaped text for any value (None as a dash)."""
    return "-" if value is None else escape(str(value))


def _num(x) -> str:
    return "-" if x is None else escape(f"{x:.3g}") if isinstance(x, (int, float)) else _t(x)


def _verdict(passed) -> str:
    return {True: '<span class="ok">passed</span>', False: '<span class="bad">FAILED</span>'}.get(
        passed, '<span class="skip">skipped</span>')


def _table(head, rows) -> str:
    """A table; ``rows`` hold cells that are already HTML (escape what comes from the model with ``_t``)."""
    if not rows:
        return '<p class="note">none</p>'
    cells = "".join(f"<tr>{''.join(f'<td>{c}</td>' for c in row)}</tr>" for row in rows)
    return f"<table><tr>{''.join(f'<th>{_t(h)}</th>' for h in head)}</tr>{cells}</table>"


def first_divergence(report) -> dict | None:
    """The first node that diverges: from the per-node trace, else from verification's ``first_divergence``;
    {"node", "op", "value"} (and "index" from the trace)."""
    errors = report.node_errors or NodeErrors()
    index, rows = errors.first_divergence, errors.rows or []
    if index is not None and index < len(rows):
        return {"index": index, "node": rows[index].node, "op": rows[index].op, "value": rows[index].value}
    found = (report.verification or Verification()).first_divergence
    return {"node": found.scope, "op": found.op, "value": found.value} if found is not None and found.op else None


def error_plot(node_errors) -> str:
    """Inline SVG: max relative error per node (graph order, log scale), the layer tolerance as a dashed line,
    nodes over it in red and the first diverging one annotated (``node_errors``: a ``NodeErrors``). Empty string
    when there are no rows."""
    rows = node_errors.rows or []
    if not rows:
        return ""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no global backend, nothing opens a window

    ys = [max(r.max_rel, _FLOOR) if isinstance(r.max_rel, (int, float)) and math.isfinite(r.max_rel)
          else 1.0 for r in rows]
    bad = [i for i, r in enumerate(rows) if not r.passed]
    fig = Figure(figsize=(11, 4.2 if len(rows) <= _NAMED_TICKS else 3.6), dpi=100)
    ax = fig.add_subplot()
    ax.plot(range(len(ys)), ys, color="#0969da", linewidth=1, marker="o", markersize=3, label="max relative error")
    if bad:
        ax.plot(bad, [ys[i] for i in bad], linestyle="none", marker="o", markersize=5, color="#cf222e",
                label="over the tolerance")
    tol = node_errors.rtol
    if tol:
        ax.axhline(tol, color="#cf222e", linestyle="--", linewidth=1, label=f"layer tolerance (rtol {tol:g})")
    first = node_errors.first_divergence
    if first is not None and first < len(rows):
        row = rows[first]
        ax.axvline(first, color="#cf222e", linewidth=0.8, alpha=0.5)
        ax.annotate(f"first divergence: {row.node or '<top>'} ({row.op})", (first, ys[first]),
                    xytext=(10, 12), textcoords="offset points", color="#cf222e", fontsize=9, parse_math=False,
                    arrowprops={"arrowstyle": "->", "color": "#cf222e"})
    ax.set_yscale("log")
    ax.set_ylim(top=max(ys + [tol or 0]) * 30)  # room above for the annotation
    if len(rows) <= _NAMED_TICKS:  # few nodes: each tick names its node
        ax.set_xticks(range(len(rows)), [r.node or "<top>" for r in rows], rotation=40, ha="right",
                      fontsize=7, parse_math=False)
    else:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("node (graph order)")
    ax.set_ylabel("max relative error vs IR reference")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "portx"}):
        fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # without the XML declaration and DOCTYPE: inline in HTML


def _summary(report) -> str:
    ver, tpu = report.verification or Verification(), report.tpu or TpuProof()
    node = first_divergence(report)  # this module's {"node", "op", "value"}
    where = (f'<p class="bad">First diverging node: <code>{_t(node.get("node") or "<top>")}</code> '
             f'({_t(node.get("op"))}, value <code>%{_t(node.get("value"))}</code>)</p>') if node else ""
    return (f"<h1>portx conversion report</h1><p><code>{_t(report.source)}</code> &rarr; "
            f"<b>{_t(report.target)}</b>: verification {_verdict(ver.passed)}; "
            f"{_t(report.portx_ir_nodes)} IR nodes, {_num((report.weight_bytes or 0) / 1e6)} MB of "
            f"weights; TPU lowering <b>{_t(tpu.verdict or 'not checked')}</b></p>{where}")


def _plot_section(report) -> str:
    errors = report.node_errors or NodeErrors()
    head = "<h2>Numerical error along the graph</h2>"
    if not errors.rows:
        return head + f'<p class="note">No per-node errors: {_t(errors.skipped or "not traced")}.</p>'
    rows = [[str(i), f"<code>{_t(r.node or '<top>')}</code>", _t(r.op), f"<code>{_t(r.value)}</code>",
             f'<span class="num">{_num(r.max_rel)}</span>', _verdict(r.passed)] for i, r in enumerate(errors.rows)]
    return (head + f'<p class="note">Each emitted intermediate against the IR\'s NumPy reference on the '
            f'verification batch; intermediates are checked at atol {_num(errors.atol)}, rtol '
            f'{_num(errors.rtol)}.{_sampled(errors)}</p><div class="plot" id="error-plot">{error_plot(errors)}</div>'
            f"<details><summary>{len(rows)} nodes</summary>"
            + _table(["#", "node", "op", "value", "max rel", ""], rows) + "</details>")


def _sampled(errors) -> str:
    """The note's sentences for a sampled or stopped trace (a passing model, large or slow), or ''."""
    sampled, stopped = errors.sampled, errors.stopped
    text = (f' <b>The plot is sampled</b>: 1 in {_t(sampled.every)} of the graph\'s {_t(sampled.of)} intermediates '
            "(verification passed; a failing conversion traces them all).") if sampled else ""
    if stopped:
        text += (f' <b>The plot stops early</b>: after {_t(stopped.rows)} of {_t(stopped.of)} nodes, when the trace '
                 f'had taken its {_num(stopped.seconds)} s ({_t(stopped.why)}; <code>portx verify --trace</code> '
                 "traces every layer).")
    return text


def _verification_section(report) -> str:
    ver = report.verification or Verification()
    out = f"<h2>Verification</h2><p>{_verdict(ver.passed)}"
    if ver.skipped:
        return out + " (--no-verify)</p>"
    out += (f" on seed {_t(ver.seed)}, inputs "
            + ", ".join(f"<code>{_t(n)}</code> {_t(d)}{_t(s)}" for n, s, d in ver.inputs or []) + "</p>")
    out += _table(["output", "max abs", "max rel", "atol", "rtol", "", "problem"],
                  [[f"<code>{_t(r.name)}</code>", _num(r.max_abs), _num(r.max_rel), _num(r.atol), _num(r.rtol),
                    _verdict(r.passed), _t(r.problem or "")] for r in ver.outputs or []])
    rows = [[f"<code>{_t(d.symbol)}</code>", "free" if d.free else f"pinned to {_t(d.example_size)}",
             ", ".join(f"{_t(s[0])}:{_t(s[1])}" for s in d.sites or []), _t(c.size),
             _verdict(c.passed) if checked else "", _num(c.max_abs), _num(c.max_rel),
             _t(c.problem or "") if checked else "not checked at other sizes (see the warnings)"]
            for d in (report.dynamic or []) for checked in (bool(d.verified),)
            for c in (d.verified or [SizeCheck()])]
    out += "<h3>Per batch size (free dims)</h3>" + _table(
        ["dim", "kept", "sites", "size", "", "max abs", "max rel", "problem"], rows)
    out += _blocks_table(report.blocks or [])
    grads = report.gradients
    if grads is not None:
        out += f"<p>Gradients: {_verdict(grads.passed)} {_t(grads.skipped or '')}</p>"
    return out


def _blocks_table(rows) -> str:
    """One row per block run on the source's values (Note [block rows]): its largest error, verdict, and why it failed
    or was not compared."""
    rows = [r for r in rows if getattr(r, "block", None) is not None]
    if not rows:
        return ""
    cells = [[f"<code>{_t(r.block)}</code>", _t(r.kind), f'<span class="num">{_t(r.nodes)}</span>',
              f'<span class="num">{_num((r.weight_bytes or 0) / 1e6)}</span>', _num(r.worst()), _verdict(r.passed),
              _t(r.skipped or r.failure())] for r in rows]
    return ("<h3>Per block, on the source's values</h3><p class=\"note\">Each block of the emitted model run on the "
            "source's own values at its inputs and compared with the source's at its outputs: an error shows in the "
            "block that makes it.</p>" + _table(["block", "kind", "nodes", "weights MB", "max abs", "", "problem"],
                                                 cells))


def _ops_section(report) -> str:
    rows = [[f"<code>{_t(op)}</code>", f'<span class="num">{_t(r.count)}</span>', _t(r.status),
             _t(r.why or ""), ", ".join(f"<code>{_t(s or '<top>')}</code>" for s in (r.scopes or [])[:3])]
            for op, r in sorted((report.ops or {}).items(), key=lambda kv: -(kv[1].count or 0))]
    return (f"<h2>Op inventory and TPU status ({_t(report.target)})</h2>"
            + _table(["op", "count", "TPU status", "why", "first scopes"], rows))


def _training_section(report) -> str:
    tr = report.training  # None: a report without the section shows it empty
    mode, problem = (tr.mode, tr.problem) if tr else (None, None)
    folded, dropped, params = (tr.folded, tr.dropped, tr.parameters) if tr else ([], [], {})
    rows = [[k, f'<span class="num">{_t(v.trainable)}</span>', f'<span class="num">{_t(v.non_trainable)}</span>']
            for k, v in (params or {}).items()]
    return (f"<h2>Training: folded and dropped</h2><p>Mode: <b>{_t(mode)}</b>. {_t(problem or '')}</p>"
            "<h3>Folded</h3>" + _table(["scope", "op"], [[f"<code>{_t(r.scope)}</code>", _t(r.op)]
                                                        for r in folded or []])
            + "<h3>Dropped</h3>" + _table(["scope", "kind"], [[f"<code>{_t(r.scope)}</code>", _t(r.kind)]
                                                            for r in dropped or []])
            + "<h3>Parameter elements</h3>" + _table(["", "trainable", "non-trainable"], rows))


def _layout_section(report) -> str:
    lay = report.layout or Layout()
    io_rows = [[kind, f"<code>{_t(r.name)}</code>", _t(r.shape), _t(r.layout), _t(r.source_layout),
                _t(r.transposed_inside)]
               for kind, rows in (("input", lay.inputs), ("output", lay.outputs)) for r in rows or []]
    inner = [[f"<code>{_t(r.scope or '<top>')}</code>", f"<code>{_t(r.value)}</code>", _t(r.perm), _t(r.origin),
              _t(r.reason or _REASONS.get(r.origin, "")), _t(", ".join(r.feeds or []) or "output")]
             for r in lay.inner_transposes or []]
    return ("<h2>Layout</h2>" + _table(["", "name", "shape", "layout", "source layout", "transposed inside"], io_rows)
            + f"<h3>Inner transposes ({len(inner)})</h3>"
            + _table(["scope", "value", "perm", "origin", "reason", "feeds"], inner))


def _stages_section(report) -> str:
    stages = report.stages or {}
    longest = max(stages.values(), default=0) or 1
    profile = report.profile or Profile()
    prof = {r.stage: r for r in profile.stages or []}
    head = ["stage", "seconds", ""] + (["RSS after (MB)", "peak RSS (MB)"] if prof else [])
    rows = [[_t(name), f'<span class="num">{secs:.2f}</span>', f'<span class="bar" style="width:{int(300 * secs / longest)}px">'
             "</span>"] + ([_num(prof.get(name, ProfileRow()).rss_mb), _num(prof.get(name, ProfileRow()).peak_rss_mb)]
                           if prof else [])
            for name, secs in stages.items()]
    peak = profile.peak_rss_mb
    return ("<h2>Stage times</h2>" + _table(head, rows)
            + (f"<p>Peak RSS: {_num(peak)} MB</p>" if peak is not None else
               '<p class="note">Memory per stage: convert with --profile.</p>'))


def _other_section(report) -> str:
    tpu = report.tpu or TpuProof()
    warnings = report.warnings or []
    return (f"<h2>TPU lowering</h2><p><b>{_t(tpu.verdict or 'not checked')}</b></p>"
            + ("<ul>" + "".join(f"<li>{_t(p)}</li>" for p in tpu.problems) + "</ul>" if tpu.problems else "")
            + f"<h2>Warnings ({len(warnings)})</h2>"
            + ("<ul>" + "".join(f"<li>{_t(w)}</li>" for w in warnings) + "</ul>" if warnings else '<p class="note">none</p>'))


def render(report) -> str:
    """The whole page for ``report`` (a ``ConversionReport``: report.json's, ``ConversionReport.read``)."""
    body = "".join(part(report) for part in (_summary, _plot_section, _verification_section, _ops_section,
                                               _training_section, _layout_section, _stages_section, _other_section))
    title = f"portx report: {report.source}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_t(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{_CSS}</style></head><body>{body}</body></html>\n")


def write_report(path, report) -> Path:
    """Write ``render(report)`` to ``path`` (inside convert's staging folder, so never half-written in OUT)."""
    path = Path(path)
    path.write_text(re.sub(r"[\ud800-\udfff]", "\ufffd", render(report)), encoding="utf-8")
    return path
