"""Re-checking a converted model against its source, after the fact, for any target: ``portx verify``
and ``portx.testing``.

Note [trust nothing in OUT]: a converted folder may come from another portx version, or may have been
edited since. The folder's target is recognised by ``Target.owns`` (its weights file, else its model.py's
first line); only ``model.py`` and that weights file are run (imported as a user would). Input shapes and
the expected numbers come from the source, lowered again, at the batch report.json says convert pinned
(Note [what OUT records] in session/dims/recorded.py: the caller reads it and hands in ``pin``; nothing
else of report.json is believed). The IR is re-emitted in memory, for each pass set and ``--io-layout``
that ``portx convert`` may have used (the recorded layout first), to name each IR value's variable in
``model.py``; when no re-emitted text equals the file, per-layer comparisons would pair the wrong
tensors, so only outputs are compared.

The report is the typed ``VerifyReport`` (session/report.py, a leaf: Note [the report is a leaf] in
session/__init__.py), read by attribute, its rows too: per-seed ``Sample``s, per-output ``SampledOutput``s and
``TraceRow``s (session/report_rows.py).

Example:
    >>> report = verify_converted("model.pt2", "out/", lower=lower_for, samples=3)
    >>> report.passed, report.outputs[0].max_abs
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BadInput, UnsupportedOps, VerificationFailed, first_line
from ..frontends import Differentiable, load
from ..options import Trust
from ..passes.layout import IO_LAYOUTS, set_io_layout, source_arrays
from ..passes.pipeline import inference_skip, run_passes
from ..progress import Stages, step
from ..session.report import DynamicDim, Sample, SampledOutput, VerifyReport
from ..targets import DEFAULT_TARGET, target_of
from ..targets.size_checks import size_checks, size_refused, size_rule
from .compare import (DEFAULT_ATOL, DEFAULT_RTOL, compare, make_inputs, narrow_outputs, random_outputs, run_reference,
                      sign_free_outputs)
from .domain import expected_outputs
from .dynamic import verify_sizes
from .grads import compare_gradients, gradient_problem
from .trace import first_failure, observe_values, trace_layers

__all__ = ["Converted", "open_converted", "prepared", "check_converted", "verify_converted",
           "failure_message"]

# Pass sets 'portx convert' may have run (its --fold-bn/--inference are not read back: Note [trust nothing in OUT]).
_PASS_VARIANTS = (inference_skip(), inference_skip(fold_bn=True), inference_skip(inference=True))


@dataclass
class Converted:
    """A converted model to check: its target, the loaded model, and its ``model.py`` when it came from files."""

    target: object
    model: object
    code: Path | None = None
    label: str = ""


def open_converted(out) -> Converted:
    """An OUT folder, a ``model.py`` path or a live model, ready to run (BadInput when unusable).

    Example: ``open_converted("out/").target.name`` -> ``"torch-xla"``.
    """
    target = target_of(out)
    if not isinstance(out, (str, os.PathLike)):
        if target is None:
            raise BadInput(f"{type(out).__name__} is not a converted model",
                           hint="pass an OUT folder from 'portx convert', its model.py, or a keras.Model")
        return Converted(target, out, None, f"{target.name} model {getattr(out, 'name', '')}".strip())
    target = target or DEFAULT_TARGET  # nothing there: the messages name the default target's files
    path = Path(out)
    if not path.exists():
        raise BadInput(f"{path}: no such folder", hint="pass the OUT folder written by 'portx convert'")
    code = path / "model.py" if path.is_dir() else path
    for needed in (code, target.weights_path(code.parent)):
        if not needed.is_file():
            raise BadInput(f"{needed}: missing", hint=f"pass the OUT folder written by 'portx convert --to "
                                                      f"{target.name}' (model.py and {target.weights_file})")
    try:
        model = target.load(code)
    except Exception as exc:  # any failure here means the files do not make a model
        raise BadInput(f"{code}: load_model() failed ({type(exc).__name__}: {first_line(exc)})",
                       hint="the files may be damaged, or the weights may not fit model.py; "
                            f"convert again with 'portx convert --to {target.name} --force'") from None
    return Converted(target, model, code, str(code.parent if path.is_dir() else code))


def prepared(graph, target, skip, io_layout):
    """A lowered graph after ``target``'s passes (minus ``skip``) and ``--io-layout``: what is emitted."""
    graph = run_passes(graph, target.name, skip=skip)
    return set_io_layout(graph, io_layout) if io_layout != "source" else graph


def _takes(declared, shapes) -> bool:
    """True when inputs of ``shapes`` fit the ``declared`` ones (None: a free dim takes any size)."""
    return len(declared) == len(shapes) and all(
        len(d) == len(s) and all(a is None or a == b for a, b in zip(d, s)) for d, s in zip(declared, shapes))


def _fitting(src, raw, converted, lower, first="source"):
    """(graph, io_layout) for each ``--io-layout`` whose input shapes the converted model takes (all of
    them when the model does not say), lowered lazily; ``first``: the layout OUT records, tried first."""
    shapes = converted.target.input_shapes(converted.model)
    layouts = sorted(IO_LAYOUTS, key=lambda layout: layout != first)
    for free, io_layout in itertools.product((True, False), layouts):  # free dims, then pinned ones
        graph = lower(src, converted.target, raw=raw, io_layout=io_layout, free=free)
        if shapes is None or _takes(shapes, [tuple(v.type.shape) for v in graph.inputs]):
            yield graph, io_layout


#: what model.py ends with after the emitted program: its sharding plan (targets/keras_jax/sharding.py
#: ``layout_map``, targets/torch_xla/sharding.py ``tp_plan``), written once the model's variables are known
_PLANS = ("\n\n# Variable path:", "\n\ndef tp_plan():")


def _emitted(target, graph):
    """(model.py text, Value -> variable) of ``graph`` emitted in memory, or None when it cannot be."""
    try:
        emitter = target.emitter(graph)
        return emitter.emit_graph(), emitter.var_of()
    except UnsupportedOps:
        return None


def _origins(target, graph):
    """The emitter's ``origins`` of ``graph`` (Note [gradient pairing] in grad_pairs.py), emitted in memory."""
    emitter = target.emitter(graph)
    emitter.emit_graph()
    return emitter.origins


def _pair(src, raw, converted, lower, io_layout) -> tuple:
    """(graph, io_layout, names or None, note): the variant convert wrote as model.py (Note [trust nothing in
    OUT]); without a match, the first fitting variant and a note saying why layers are not compared."""
    fits = _fitting(src, raw, converted, lower, io_layout)
    first = next(fits, None)
    if first is None:  # the model takes other shapes: check_converted reports it
        return lower(src, converted.target, raw=raw), "source", None, ""
    cannot = "this portx version cannot emit the source again; comparing outputs only"
    if converted.code is None:  # a live model: its layers are matched by name to the default pass set
        emitted = _emitted(converted.target, first[0])
        return (*first, None, cannot) if emitted is None else (*first, emitted[1], "live model: layers matched by name")
    text = converted.code.read_text(encoding="utf-8")
    for graph, io_layout in itertools.chain([first], fits):
        for skip in _PASS_VARIANTS:
            variant = graph if skip == _PASS_VARIANTS[0] else lower(src, converted.target, skip, raw, io_layout)
            emitted = _emitted(converted.target, variant)
            if emitted is None:
                return (*first, None, cannot)
            if emitted[0] == text or (text.startswith(emitted[0]) and text[len(emitted[0]):].startswith(_PLANS)):
                return variant, io_layout, emitted[1], ""
    return (*first, None, f"{converted.code} differs from what this portx version writes for the source "
                          "(made by another portx version, or edited); comparing outputs only")


def _signature_problem(graph, converted) -> str:
    """Why the converted model cannot take the source's inputs, or ''."""
    want = [tuple(v.type.shape) for v in graph.inputs]
    got = converted.target.input_shapes(converted.model)
    if got is not None and not _takes(got, want):
        return f"the converted model takes inputs of shapes {got}, the source {want}"
    return ""


def _explicit_batch(graph, inputs) -> list:
    arrays = [np.asarray(a) for a in inputs]
    want = [tuple(v.type.shape) for v in graph.inputs]
    free = [tuple(None if not isinstance(d, int) else d for d in graph.free_shape(v)) for v in graph.inputs]
    if not _takes(free, [a.shape for a in arrays]):  # a free dim (the batch) takes any size
        raise BadInput(f"inputs: shapes {[a.shape for a in arrays]}, the source was converted for {want}",
                       hint="pass arrays of the converted shapes, or inputs=None for seeded ones")
    for value, axis, step, offset in size_checks(graph):  # Note [size checks] in targets/size_checks.py
        n = arrays[graph.inputs.index(value)].shape[axis]
        if (n - offset) % step:
            raise BadInput(f"inputs: input {value.name} axis {axis} has size {n}, not {size_rule(step, offset)}: "
                           f"the model divides it by {step}", hint=f"pass a size that is {size_rule(step, offset)}")
    return [a.astype(v.type.dtype) for a, v in zip(arrays, graph.inputs)]


def _run_samples(src, graph, converted, batches, atol, rtol) -> list:
    """Per batch, a ``Sample``: the source and the converted model on the same inputs, compared output by output."""
    run = converted.target.runner(converted.model)  # prepared once: one compile for all batches
    names = [v.name for v in graph.outputs]
    rows = []
    for done, (seed, arrays) in enumerate(batches):
        step(done, len(batches), f"batch {done + 1} (seed {seed})")  # progress.py: the display's count
        try:
            got = run(arrays)
        except Exception as exc:  # the model cannot take the source's inputs (edited, or another model)
            if size_refused(exc):  # a size the model cannot take: Note [size checks] in targets/size_checks.py
                raise BadInput(f"{converted.label}: {size_refused(exc)}", hint="pass sizes the model takes, as "
                               "report.json's dynamic section gives them (each free dim's step)") from None
            rows.append(Sample(seed, False, [], f"the converted model fails on the source's inputs "
                                                f"({type(exc).__name__}: {first_line(exc)})"))
            continue
        rows.append(Sample.from_dict({"seed": seed, **compare(
            expected_outputs(src, graph, arrays), got, names, atol, rtol, random=random_outputs(graph),
            signs=sign_free_outputs(graph), narrow=narrow_outputs(graph))}))
    return rows


def _summary(samples) -> list:
    """Per output, a ``SampledOutput``: the worst error over all samples, with the seed it came from."""
    merged = []
    for i, row in enumerate(samples[0].outputs):
        rows = [(s.seed, s.outputs[i]) for s in samples if i < len(s.outputs)]
        failing = [(seed, r) for seed, r in rows if not r.passed] or rows
        seed, worst = max(failing, key=lambda sr: -1.0 if sr[1].max_abs is None else sr[1].max_abs)
        merged.append(SampledOutput(**{**vars(worst), "name": row.name, "seed": seed,
                                       "passed": all(r.passed for _, r in rows),
                                       "max_abs": max((r.max_abs or 0.0) for _, r in rows),
                                       "max_rel": max((r.max_rel or 0.0) for _, r in rows)}))
    return merged


def check_converted(src, converted, *, lower, batch=None, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL,
                    trace=False, grad=False, stages=None, sized=None, io_layout="source") -> VerifyReport:
    """Compare a loaded source with a converted model; returns the report (see ``verify_converted``).

    ``lower(src, target, skip, raw, io_layout, free)``: the source's graph as convert emits it, with its free dims
    (session/dims/lower.py ``lower_for``; passed in, as verification never imports the session).
    ``sized(src, graph)``: the free dims to check at other sizes too once the outputs agree, at the sizes convert
    checks (``verify_sizes``; session/dims/lower.py ``requested_dims``); their rows are ``report.dynamic``.

    ``grad`` also compares gradients (``report.gradients``); a difference fails the report. ``stages``: a
    ``progress.Stages`` that times and shows the steps (pair, samples, trace, grad). ``io_layout``: the
    ``--io-layout`` OUT records, tried first (Note [what OUT records] in session/dims/recorded.py).

    Example: ``check_converted(load("model.pt2"), open_converted("out/"), lower=lower_for, samples=3).passed``.
    """
    if samples < 1:
        raise BadInput(f"--samples {samples}: must be at least 1", hint="pass --samples 1 or more")
    stages = stages or Stages()
    graph, io_layout, names, note = stages.run("pair", _pair, src, src.lower(), converted, lower, io_layout)
    symbols = sized(src, graph) if sized is not None else []  # a spec the graph does not keep free: BadInput now
    report = VerifyReport(source=str(src.label), out=converted.label, target=converted.target.name, atol=atol,
                          rtol=rtol, io_layout=io_layout, passed=False, outputs=[], samples=[],
                          inputs=[[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs])
    report.problem = _signature_problem(graph, converted) or None
    if report.problem:
        return report
    batches = [(None, _explicit_batch(graph, batch))] if batch is not None else \
        [(s, make_inputs(graph, s)) for s in range(seed, seed + samples)]
    report.samples = runs = stages.run("samples", _run_samples, src, graph, converted, batches, atol, rtol)
    if not all(r.outputs for r in runs):
        failed = next(r for r in runs if not r.outputs)
        report.problem = f"{converted.label}: {failed.problem}"
        return report
    report.passed, report.outputs = all(r.passed for r in runs), _summary(runs)
    if trace or not report.passed:
        chosen = next((i for i, r in enumerate(runs) if not r.passed), 0)
        report.code_matches, report.note = names is not None and converted.code is not None, note
        at_graph_sizes = all(a.shape == v.type.shape for a, v in zip(batches[chosen][1], graph.inputs))
        if names is not None and at_graph_sizes:
            stages.run("trace", _layer_report, report, src, graph, converted, names, batches[chosen], trace)
        elif names is not None:
            report.note = "layers are traced at the converted sizes only: pass inputs of those sizes for a trace"
    if not report.passed:
        report.problem = failure_message(report)
    elif symbols:  # the outputs agree at the samples' sizes: now at the free dims' other sizes
        stages.run("sizes", _check_sizes, report, src, graph, converted, symbols, seed)
    if report.passed and grad:  # the outputs agree: their gradients must too
        origins = _origins(converted.target, graph) if names is not None else None  # Note [gradient pairing]
        report.gradients = grads = stages.run("grad", compare_gradients, src, graph,
                                              Differentiable(converted.model, converted.target.framework), seed,
                                              origins=origins)
        if grads.passed is False:
            report.passed, report.problem = False, gradient_problem(grads)
    return report


def _check_sizes(report, src, graph, converted, symbols, seed) -> None:
    """Into ``report``: ``dynamic``, a row per free dim in ``symbols`` with its checks per size (convert's sizes:
    ``verify_sizes``), and the verdict and problem of the first size that differs."""
    dims = graph.meta["free"]["dims"]
    rows = verify_sizes(src, graph, converted.model, converted.target, seed, report.atol, report.rtol, symbols)
    report.dynamic = [DynamicDim(symbol=row["symbol"], free=True, sites=row["sites"], min=row["min"], max=row["max"],
                                 example_size=dims[row["symbol"]].get("example", dims[row["symbol"]]["size"]),
                                 verified=row["sizes"], step=dims[row["symbol"]].get("step", 1))
                      for row in rows]
    bad = next(((row["symbol"], c) for row in rows for c in row["sizes"] if c.passed is False), None)
    if bad is not None:
        (symbol, check), report.passed = bad, False
        report.problem = f"{report.out}: at {symbol}={check.size} {check.problem or 'the outputs differ'}"


def _layer_report(report, src, graph, converted, names, batch, trace) -> None:
    """Into ``report``: the trace rows (``trace``) and the first diverging layer, each also against the source's
    own values."""
    seed, arrays = batch
    observed = observe_values(converted.target, converted.model, graph, names, arrays, converted.code)
    report.trace_seed = seed
    try:
        source = src.intermediates(source_arrays(graph, arrays))
    except Exception as exc:  # private torch APIs; the reference comparison still stands
        source, report.note = {}, f"source intermediates unavailable ({type(exc).__name__})"
    rows = trace_layers(graph, observed, run_reference(graph, arrays), source, report.atol, report.rtol, names)
    if trace:
        report.trace = rows
    report.first_divergence = first_failure(rows)


def failure_message(report: VerifyReport) -> str:
    """One line: which output differs, on which seed, and the first diverging layer when known.

    Example: ``out/: output y differs from the source on seed 0 (...); first diverging layer: fc (linear) %y``.
    """
    if not report.outputs:
        return f"{report.out}: {report.problem or 'no outputs to compare'}"
    bad = next((s for s in report.samples if not s.passed), report.samples[0])
    row = next((r for r in bad.outputs if not r.passed), None)
    seed = "" if bad.seed is None else f" on seed {bad.seed}"
    what = f"output {row.name} differs from the source{seed} ({row.problem})" if row else \
        (bad.problem or "outputs differ")
    where = report.first_divergence
    place = f"; first diverging layer: {where.scope or '<top>'} ({where.op}) %{where.value}" if where else ""
    return f"{report.out}: {what}{place}"


def verify_converted(source, out, *, lower, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, inputs=(),
                     trust=None, trace=False, grad=False, check=True, progress=None, sized=None, pin=None,
                     io_layout="source") -> VerifyReport:
    """Re-check OUT (folder written by ``portx convert``, for any target) against SOURCE on seeds
    seed..seed+samples-1.

    Returns the report; raises BadInput (2), or VerificationFailed (1) when ``check`` and it differs.
    ``progress``: a ``progress.Reporter`` (or ``progress(name, seconds)``) shown each stage and per-batch counts.
    ``trust``: an ``options.Trust`` (all of it reaches ``load``: Note [one trust]); ``lower``, ``sized``,
    ``io_layout``: as ``check_converted``. ``pin(src)``: the source at the batch OUT was converted at
    (session/dims/recorded.py ``at_batch``; Note [what OUT records]).
    Example: ``verify_converted("model.pt2", "out/", lower=lower_for, samples=3).passed``.
    """
    stages = Stages(progress)
    src = stages.run("load", load, source, inputs=inputs, **(trust or Trust()).load_kwargs())
    src = pin(src) if pin is not None else src
    converted = stages.run("load-out", open_converted, out)
    if converted.code is None:
        raise BadInput(f"{type(out).__name__}: OUT must be a folder or a model.py path", hint="pass the OUT folder")
    report = check_converted(src, converted, lower=lower, samples=samples, seed=seed, atol=atol, rtol=rtol,
                             trace=trace, grad=grad, stages=stages, sized=sized, io_layout=io_layout)
    if not report.passed and not report.outputs:  # nothing compared: OUT takes or gives other tensors
        first = next((s.problem for s in report.samples if s.problem), None)
        raise BadInput(f"{report.out}: was converted from another model or for other input shapes: "
                       f"{first or report.problem}", hint="pass the model OUT was made from, or convert SRC anew")
    if check and not report.passed:
        raise VerificationFailed(report.problem, hint="rerun with --trace for every layer's error")
    return report
