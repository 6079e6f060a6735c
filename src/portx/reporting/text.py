"""The console's view of a report: what ``portx convert`` and ``portx verify`` print after their work.

Every reader here takes any field as optional (Note [optional fields]): a report row without ``max_rel`` (a
gradient row whose sizes differ), a report from another portx version, a hand-edited report.json. A missing
number prints ``n/a``, a missing list prints nothing, a missing name prints ``?``; a printer never raises.

Note [optional fields]: the readers (this module, reporting/html.py, reporting/explorer.py) take the typed report
(session/report.py: ``ConversionReport``, ``VerifyReport``, and the sections of report_sections.py:
``Verification``, ``NodeErrors``, ``Gradients``, ``TpuProof``) and read their fields as attributes, any of which may
be None (a report.json read back with ``ConversionReport.read`` lacks what its writer left out), the rows too (an
output's, a trace row, ``layout``'s, ``sharding``); what is still a JSON object (a free dim's per-size checks, the
sharding proof's maps) is read with ``.get`` and a default.
tests/test_report_readers.py renders all three from a real report with each field removed in turn.

Example:
    >>> print_conversion(result.typed, result.out)      # the lines after the progress display
    >>> print_verification(VerifyReport.read(api.verify("model.pt2", "out/")))
"""
from __future__ import annotations

import math

import click

__all__ = ["print_conversion", "print_verification", "print_dynamic", "print_gradients", "print_blocks", "print_profile",
           "num", "sharding_line"]

#: inner transposes named on the console's layout line (the rest are counted; report.json lists them all)
LAYOUT_SHOWN = 3


def num(x, spec=".3g") -> str:
    """``x`` formatted with ``spec``; ``n/a`` for None or anything that is not a number."""
    return format(x, spec) if isinstance(x, (int, float)) and not isinstance(x, bool) else "n/a"


def _table(value) -> dict:
    """``value`` (a JSON object) as a dict (a missing or malformed field: empty)."""
    return value if isinstance(value, dict) else {}


def _tolerances(row) -> str:
    return f"(atol {num(row.atol, 'g')}, rtol {num(row.rtol, 'g')})"


def print_conversion(report, out) -> None:
    """What ``portx convert`` prints about a finished conversion, a ``ConversionReport`` (its warnings go to
    stderr)."""
    for note in report.warnings or []:
        click.echo(f"  warning: {note}", err=True)
    inner = (report.layout.inner_transposes if report.layout is not None else None) or []
    if inner:  # a count and the first few; report.json has them all
        where = ", ".join(f"{_known(row.origin)} {_known(row.value)} -> {'/'.join(row.feeds or []) or 'output'}"
                          for row in inner[:LAYOUT_SHOWN])
        more = f", and {len(inner) - LAYOUT_SHOWN} more in report.json" if len(inner) > LAYOUT_SHOWN else ""
        click.echo(f"  layout: {len(inner)} transpose(s) inside the model: {where}{more}")
    ver, tpu = report.verification, report.tpu
    if tpu is not None and tpu.verdict is not None:
        problems = tpu.problems or []
        click.echo(f"  TPU lowering: {tpu.verdict}" + (f" ({'; '.join(problems)})" if problems else ""))
    if report.sharding is not None:
        click.echo(f"  sharded: {sharding_line(report.sharding)}")
    if ver is None or ver.skipped or (ver.passed is None and not ver.outputs):
        click.echo(f"wrote {out} (verification skipped)")
        return
    for row in ver.outputs or []:
        click.echo(f"  output {_known(row.name)}: max abs {num(row.max_abs)}, max rel {num(row.max_rel)} "
                   f"{_tolerances(row)}")
    print_blocks(report.blocks)
    print_dynamic(report.dynamic)
    print_gradients(report.gradients)
    print_profile(report.profile)
    click.echo(f"verified: {out}/model.py matches {_known(report.source, 'the source')}; see {out}/report.html")


def print_dynamic(dims) -> None:
    """One line per free-dim row (``DynamicDim``) of convert's report or ``verify --dynamic``'s: the sizes it was
    checked at, a size that differs marked. Example: ``  x_1: free, verified at 6, 9``."""
    for dim in dims or []:
        sizes = ", ".join(_known(c.size) + ("" if c.passed is not False else " DIFFERS") for c in dim.verified or [])
        free = f"free, verified at {sizes}" if sizes else "free, not checked at other sizes"
        click.echo(f"  {_known(dim.symbol)}: " + (free if dim.free else f"pinned to {_known(dim.example_size)}"))


def print_blocks(rows) -> None:
    """One line for report.json's ``blocks`` (each block on the source's values: Note [block rows]), and one per
    block that failed. Example: ``blocks: 12 on the source's values, max abs 3.1e-07 (encoder.layers.7)``."""
    rows = [r for r in rows or [] if getattr(r, "block", None) is not None]
    ran = [r for r in rows if r.passed is not None and r.worst() is not None]
    if not rows:
        return
    worst = max(ran, key=lambda r: r.worst(), default=None)
    skipped = len(rows) - len(ran)
    click.echo(f"  blocks: {len(ran)} on the source's values" + (
        f", max abs {num(worst.worst())} ({worst.block})" if worst else "") + (
        f", {skipped} not compared (report.json says why)" if skipped else ""))
    for row in rows:
        if row.passed is False:
            click.echo(f"    block {row.block}: {row.failure() or 'differs'}  DIFFERS")


def _known(value, missing="?") -> str:
    """``value`` as text; ``missing`` for a field the report lacks (None)."""
    return missing if value is None else str(value)


def sharding_line(proof) -> str:
    """A ``Sharding`` in one line: ``ok on batch=2,model=4: max 1.01 x weights/4 per device, all-gather 4,
    all-reduce 16, diff 3.8e-06``."""
    if proof.verdict in ("skipped", "failed"):
        return f"{proof.verdict} ({'; '.join(proof.problems or []) or proof.why or ''})"
    counts = ", ".join(f"{name} {n}" for name, n in _table(proof.collectives).items() if n) or "no collectives"
    mesh = _table(proof.mesh)
    shape = ",".join(f"{axis}={size}" for axis, size in mesh.items()) or "?"
    last = ("abstract weights, not run" if proof.abstract else
            f"largest difference {num(proof.max_abs_diff, '.2g')}")
    return (f"{_known(proof.verdict)} on {shape}: max {num(proof.per_device_ratio)} x weights/"
            f"{mesh.get('model', 1)} per device, {counts}, {last}")


def print_profile(profile) -> None:
    """--profile (a ``Profile``): one line per stage with its time, its CPU time and the RSS after it, and the
    peak RSS."""
    for row in profile.stages or [] if profile is not None else []:
        rss = num(row.rss_mb, ".0f").replace("n/a", "-")
        cpu = num(row.cpu_seconds, "8.2f").replace("n/a", "-")
        click.echo(f"  profile {row.stage or '?':<13}{num(row.seconds, '8.2f'):>8}s  CPU {cpu:>8}s  "
                   f"RSS {rss} MB, peak {num(row.peak_rss_mb, '.0f')} MB", err=True)


def print_gradients(grads) -> None:
    """One line for report["gradients"] (a ``Gradients``): what was compared and the worst relative error (or why
    it was skipped)."""
    if grads is None:
        return
    if grads.passed is None:
        click.echo(f"  gradients: not compared ({grads.skipped or 'nothing to compare'})")
        return
    inputs, params = grads.inputs or [], grads.parameters or []
    rels = [r.max_rel for r in inputs + params if isinstance(r.max_rel, (int, float)) and math.isfinite(r.max_rel)]
    matched = len(params) if grads.matched is None else grads.matched
    click.echo(f"  gradients: {len(inputs)} input(s) and {matched} parameter(s), max rel "
               f"{num(max(rels, default=0.0))} (atol {num(grads.atol, 'g')}, rtol {num(grads.rtol, 'g')})"
               + ("" if grads.passed else "  DIFFER"))


def print_verification(report) -> None:
    """What ``portx verify`` prints about a ``VerifyReport``: each output's errors, the gradients, a note, the trace
    rows."""
    for row in report.outputs or []:
        click.echo(f"  output {_known(row.name)}: max abs {num(row.max_abs)}, max rel {num(row.max_rel)} "
                   f"{_tolerances(row)}" + ("" if row.passed else "  DIFFERS"))
    print_dynamic(report.dynamic)
    print_gradients(report.gradients)
    if report.note:
        click.echo(f"  note: {report.note}", err=True)
    if report.trace is not None:
        click.echo(f"  trace (seed {_known(report.trace_seed)}): each layer vs the IR reference | vs the source")
    for row in report.trace or []:  # TraceRow (session/report_rows.py)
        theirs = row.source
        vs_source = f" | {num(theirs.max_abs)} / {num(theirs.max_rel)}" if theirs is not None else ""
        mark = "" if row.passed else "   <- first divergence"
        click.echo(f"    {(row.scope or '<top>') + ' (' + _known(row.op) + ')':<32} "
                   f"%{_known(row.value):<20} max abs {num(row.max_abs)}, max rel "
                   f"{num(row.max_rel)}{vs_source}{mark}")
