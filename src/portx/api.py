"""Orchestration: load -> lower -> passes -> emit -> verify -> files. The CLI calls only this.

Example:
    >>> result = convert(module, example_inputs=(x,), to="keras-jax", out="out/")
    >>> result.model, result.report["verification"]["passed"], result.files
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402

from . import ops  # noqa: E402,F401  (registers every op)
from .errors import BadInput, NotTpuLegal, VerificationFailed  # noqa: E402
from .explore import write_conversion  # noqa: E402
from .frontends import KERAS_SUFFIXES, load  # noqa: E402
from .logs import quiet_unless_debug  # noqa: E402
from .outputs import staged_output  # noqa: E402
from .report_html import write_report  # noqa: E402
from .passes.legalize import PortxWarning, status_of  # noqa: E402
from .passes.layout import IO_LAYOUTS, io_layouts  # noqa: E402
from .passes.layout_one_channel import unknown_layout_notes  # noqa: E402
from .passes.pipeline import inference_skip  # noqa: E402
from .passes.sharding import parse_mesh  # noqa: E402
from .oplist import op_table  # noqa: E402
from .targets import TARGETS, find_target  # noqa: E402
from .targets.codegen import missing_emit_rules  # noqa: E402
from .ir import FreeDimRefused  # noqa: E402
from .verification.compare import DEFAULT_ATOL, DEFAULT_RTOL, make_inputs, nonfinite_params  # noqa: E402
from .verification.dynamic import (ONE_TRACED_AT, check_static_batch, example_checked, find_free,  # noqa: E402
                                   plan_dims, repin, verify_example, verify_sizes)
from .verification.grads import compare_gradients, gradient_problem, settled, start_gradients  # noqa: E402
from .verification.recheck import prepared, verify_converted  # noqa: E402
from .verification.trace import node_errors  # noqa: E402
from .verification.memory import LeanStages  # noqa: E402
from .verification.budget import over_budget  # noqa: E402
from .verification.streaming import verify_streaming  # noqa: E402
from .verification.sharding import proof_devices, sharding_report  # noqa: E402
from .weights import shard_gb  # noqa: E402

__all__ = ["convert", "load", "inspect", "op_table", "ConversionResult", "TARGETS", "KERAS_SUFFIXES",
           "missing_emit_rules", "verify", "DEFAULT_ATOL", "DEFAULT_RTOL"]


@dataclass
class ConversionResult:
    """What ``convert`` returns: the live emitted model, the report dict and the written files."""

    model: object
    report: dict
    files: dict
    graph: object = None
    out: Path | None = None
    ok: bool = True
    stage_times: dict = field(default_factory=dict)


def check_tolerances(atol, rtol):
    """BadValue (exit 2; a ValueError) unless both tolerances are finite and >= 0: NaN would pass anything."""
    import math

    from .errors import BadValue

    for name, value in (("atol", atol), ("rtol", rtol)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise BadValue(f"--{name} {value!r}: a tolerance must be a finite number >= 0",
                           hint=f"e.g. --{name} {DEFAULT_ATOL if name == 'atol' else DEFAULT_RTOL:g} (the default)")


def inventory(graph) -> dict:
    """op -> {"count": n, "scopes": [first scopes]} in first-seen order."""
    table = {}
    for node in graph.nodes:
        row = table.setdefault(node.op.name, {"count": 0, "scopes": []})
        row["count"] += 1
        if len(row["scopes"]) < 5 and node.scope not in row["scopes"]:
            row["scopes"].append(node.scope)
    return table


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def inspect(source, *, example_inputs=None, inputs=(), trust_pickle=False, target=None,
            trust_savedmodel=False, debug=False) -> dict:
    """Op inventory of a source without converting: {"ops": {...}, "inputs": [...], "outputs": [...]}.

    With ``target="tpu"`` (a target name or alias) each op row also carries its status, reason and source
    from that target's op table. Example: ``inspect("model.pt2")["ops"]["conv"]["count"]``.
    """
    table = find_target(target, "--target").table if target else None
    graph = load(source, example_inputs=example_inputs, inputs=inputs, trust_pickle=trust_pickle,
                 trust_savedmodel=trust_savedmodel).lower()
    ops_rows = inventory(graph)
    if table:
        for op, row in ops_rows.items():
            row.update(status_of(table, op))
    return {"ops": ops_rows, "nodes": len(graph.nodes), "weight_bytes": graph.weight_bytes(),
            "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
            "outputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs]}


def _require_jax_backend():
    import keras

    if keras.config.backend() != "jax":
        raise BadInput(f"Keras was imported with backend {keras.config.backend()!r}; portx writes and verifies "
                       "Keras-JAX models", hint="set KERAS_BACKEND=jax before importing keras")


def _tpu_proof(target, model, graph, strict):
    proof = target.prove_tpu(model, graph)
    if strict and proof["verdict"] == "skipped":
        raise NotTpuLegal(f"the TPU lowering proof was skipped ({proof.get('why') or 'its tools are missing'}), so "
                          "--strict-tpu cannot vouch for this model", hint="install portx with its dependencies "
                          "(torchax for --to torch-xla) and convert again, or drop --strict-tpu")
    if strict and proof["verdict"] != "ok":
        raise NotTpuLegal(f"model does not lower cleanly for TPU: {'; '.join(proof['problems'])}",
                          hint="drop --strict-tpu to convert anyway, or replace the listed constructs")
    return proof


def _checked_options(to, atol, rtol, io_layout, export_tpu):
    """The target called ``to``, once every option is known to be valid (BadInput otherwise)."""
    check_tolerances(atol, rtol)
    if io_layout not in IO_LAYOUTS:
        raise BadInput(f"--io-layout {io_layout}: unknown layout", hint=f"choose one of {', '.join(IO_LAYOUTS)}")
    target = find_target(to)
    if export_tpu and not target.tpu_artifact:
        exporting = " or ".join(t.name for t in TARGETS.values() if t.tpu_artifact)
        raise BadInput(f"--export-tpu writes a deployable TPU artifact, which --to {target.name} does not have",
                       hint=f"drop --export-tpu, or convert with --to {exporting}")
    return target


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def convert(source, *, to="keras-jax", out=None, example_inputs=None, inputs=(), verify=True,
            atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, seed=0, trust_pickle=False, force=False,
            strict_tpu=False, export_tpu=False, fold_bn=False, inference=False, unsafe_keras=False,
            io_layout="source", grad=None, static_batch=None, dynamic=(), progress=None,
            explore=False, profile=False, trust_savedmodel=False, trust_remote_code=False, dtype="config",
            max_shard_size=None, debug=False, mesh=None) -> ConversionResult:
    """Convert ``source`` (a path or a live nn.Module) for target ``to`` into folder ``out``.

    The emitted model trains like the source: batch norms stay layers (with their momentum and
    statistics) and dropouts stay. ``fold_bn`` folds batch norms into the convolutions before them;
    ``inference`` also drops dropouts. ``report["training"]`` lists what was folded or dropped.
    ``grad`` compares the gradients of a loss with the source's (``verification/grads.py``); None: when verifying
    a model of at most 64 MB of weights (a difference is a warning in the report).

    The batch (axis 0 of every input) stays free: the emitted model runs at any batch size, and is verified
    at the example's, 1 and 8 (``report["dynamic"]``). ``static_batch=N`` pins it to N instead;
    ``dynamic=["x:1"]`` frees more axes (torch.export Dims and Keras None dims are free already). A dim the
    model fixes is pinned with a warning naming the op (Note [free dims] in ir/types.py).

    ``io_layout``: "source" (the source's input/output layout), "channels-last" or "channels-first" (image inputs/
    outputs in that layout, no transpose at the boundary; report["layout"] says which). ``explore`` also writes
    OUT/explorer/: Model Explorer graph JSON and overlays (explore.py).
    Trust: ``trust_pickle`` (full pickles), ``unsafe_keras`` (Lambda code), ``trust_savedmodel`` (a TensorFlow
    SavedModel's graph runs), ``trust_remote_code`` (a Hugging Face config's auto_map code runs); without them such
    sources are refused (BadInput). A Hugging Face folder keeps its config's dtype unless ``dtype`` ("float32",
    "bfloat16", "float16"). ``max_shard_size``: the weights files' largest shard ("2GB" by default, "500MB", or GB).
    ``mesh`` ("batch=2,model=4" or {"batch": 2, "model": 4}): also run the model split over that mesh on CPU
    devices, lower it for TPU with its shardings and compare it with one device (report["sharding"],
    targets/keras_jax/mesh_proof.py); None skips that proof.
    ``progress``: a ``progress.Reporter`` (stage start, steps with node counts, stage end) or a callable
    ``progress(name, seconds)``; ``profile`` adds report["profile"] (RSS per stage). OUT also gets report.html.
    Raises BadInput (2), UnsupportedOps (3), NotTpuLegal (4, with ``strict_tpu``) or
    VerificationFailed (1; the files are still written and ``exc.result`` holds the result).
    Example: ``convert("model.pt2", to="keras-jax", out="out/")``.
    """
    _require_jax_backend()
    target = _checked_options(to, atol, rtol, io_layout, export_tpu)
    emit_options = {} if max_shard_size is None else {"max_shard_size": shard_gb(max_shard_size)}
    mesh = mesh if mesh is None or isinstance(mesh, dict) else parse_mesh(mesh, proof_devices())
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="portx-")) / "out"
    sizes = {}  # what a full disk would need: the weights are the bulk of every output folder
    cleaned = []  # stale staging folders of killed conversions, removed beside OUT
    with LeanStages(progress, profile) as stages, \
            staged_output(out, force, protect=(source,), need=lambda: sizes.get("weights", 0), notes=cleaned) as tmp:
        src = stages.run("load", load, source, example_inputs=example_inputs, inputs=inputs, trust_pickle=trust_pickle,
                         unsafe_keras=unsafe_keras, trust_savedmodel=trust_savedmodel,
                         trust_remote_code=trust_remote_code, dtype=dtype,
                         batch=None if static_batch is not None or dynamic else ONE_TRACED_AT,  # Note [batch of one]
                         free=dynamic)  # Note [symbolic export] (frontends/torch_symbols.py)
        graph = stages.run("lower", src.lower, "model", strict_tpu)
        if static_batch is not None:
            src, graph = _pinned_batch(src, graph, static_batch, strict_tpu)
        source_counts = _source_counts(graph)
        stages.weigh(graph.weight_bytes())
        too_big = over_budget(graph)  # Note [weight budget]: no whole-model checks, abstract weights
        streaming = verify and bool(too_big)  # Note [streaming verification]: one block's weights at a time
        verify = verify and not too_big
        sizes["weights"] = 2 * graph.weight_bytes()  # the weights file, and jax.export's copy at most
        skip = inference_skip(fold_bn, inference)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PortxWarning)
            graph = stages.run("passes", prepared, graph, target, skip, io_layout)
        notes = (cleaned + [str(w.message) for w in caught if issubclass(w.category, PortxWarning)]
                 + nonfinite_params(graph) + list(getattr(src, "notes", [])))
        dims = plan_dims(src, graph, dynamic, static_batch)
        src, graph, record = stages.run("free-dims", find_free, src, graph,
                                        lambda s: prepared(s.lower("model", strict_tpu), target, skip, io_layout),
                                        dims, notes)
        src, graph, emitted, model, sized = _emit_free(stages, target, graph, record, tmp, src, seed, atol, rtol,
                                                       verify, notes, emit_options, bool(too_big))
        report = _report(src, graph, target, notes)
        report["warnings"] += unknown_layout_notes(report["layout"], io_layout)  # Note [one-channel images]
        report["training"] = _training(graph, source_counts, target.parameter_counts(model), fold_bn or inference)
        if report["training"]["problem"]:
            report["warnings"].append(report["training"]["problem"])
        grad_on = verify and (grad or (grad is None and graph.weight_bytes() <= _GRAD_AUTO_BYTES))
        started = stages.run("grad-start", start_gradients, src, graph, model, seed) if grad_on else None
        report["verification"] = (stages.run("verify", verify_example, src, graph, model, emitted, target, seed, atol,
                                             rtol) if verify else
                                  stages.run("verify", verify_streaming, src, graph, target, seed, atol, rtol)
                                  if streaming else {"passed": None, "skipped": too_big or True})
        report["dynamic"] = _dynamic_report(dims, graph, example_checked(sized, report["verification"]))
        settled(started)  # Note [gradient compile] (verification/grad_program.py): not under the trace's compile
        report["node_errors"] = (stages.run("trace", node_errors, target, graph, model, emitted["var_of"],
                                            make_inputs(graph, seed), atol, rtol, emitted["code"],
                                            report["verification"].get("passed") is True, sum(stages.times.values()))
                                 if verify else {"skipped": too_big or "verification was skipped (--no-verify)",
                                                 "rows": []})
        if grad_on:
            report["gradients"] = stages.run("grad", compare_gradients, src, graph, model, seed, started=started,
                                             origins=emitted.get("origins"))
            if report["gradients"]["passed"] is False:
                report["warnings"].append(gradient_problem(report["gradients"]))
        report["tpu"] = stages.run("tpu-lower", _tpu_proof, target, model, graph, strict_tpu)
        if mesh is not None:
            report["sharding"] = stages.run("shard-proof", sharding_report, target, tmp, graph, mesh, seed, report)
        if export_tpu:
            report["tpu"]["artifact"] = stages.run("tpu-export", target.export_tpu, model, graph,
                                                   tmp / target.tpu_artifact)
        if explore:  # OUT/explorer/: Model Explorer graph JSON and overlays (explore.py)
            stages.run("explore", write_conversion, tmp, src, graph, target, report["node_errors"])
        report["stages"] = stages.times
        if profile:
            report["profile"] = stages.memory()
        (tmp / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        write_report(tmp / "report.html", json.loads((tmp / "report.json").read_text(encoding="utf-8")))
    result = ConversionResult(model, report, _files(out, target, export_tpu), graph, out,
                              report["verification"].get("passed") is not False, stages.times)
    if not result.ok:
        raise _verification_failed(result)
    return result


def _pinned_batch(src, graph, n, strict_tpu):
    """(source, graph) at batch ``n`` for ``--static-batch`` (BadInput where the model cannot run there)."""
    from .errors import BadValue

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BadValue(f"--static-batch {n!r}: a batch size is a whole number >= 1", hint="e.g. --static-batch 8")
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


def _emit_free(stages, target, graph, record, tmp, src, seed, atol, rtol, verify, notes, emit_options, abstract):
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
                problem = bad["problem"] or "outputs differ"
                notes.append(f"{row['symbol']} pinned: at {row['symbol']}={bad['size']} " + (
                    problem if problem.startswith("the source") else f"the converted model differs ({problem})"))
        free -= wrong
        src, graph = repin(record, free, notes)


def _dynamic_report(dims, graph, sized) -> list:
    """report["dynamic"]: each candidate dim, whether it stayed free, and its checks per size."""
    free = graph.meta.get("free", {}).get("dims", {})
    checks = {row["symbol"]: row for row in sized}
    return [{"symbol": d["symbol"], "free": d["symbol"] in free,
             "sites": [[graph.inputs[i].name, axis] for i, axis in free.get(d["symbol"], d)["sites"]],
             "example_size": d.get("example", d["size"]) if d["symbol"] in free else d["size"],
             "min": d.get("min"), "max": d.get("max"),
             **{k: d[k] for k in ("torch_symbol", "found_by") if k in d},
             "verified": checks.get(d["symbol"], {}).get("sizes", [])} for d in dims]


def _report(src, graph, target, notes) -> dict:
    return {"source": str(src.label), "target": target.name, "portx_ir_nodes": len(graph.nodes),
            "weight_bytes": graph.weight_bytes(), "ops": {op: {**row, **{k: v for k, v in status_of(
                target.table, op).items() if k in ("status", "why")}} for op, row in inventory(graph).items()},
            "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
            "outputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs],
            "layout": io_layouts(graph), "warnings": notes}


#: ``convert`` compares gradients by default up to this many bytes of weights (one backward pass each side)
_GRAD_AUTO_BYTES = 64 << 20


def _source_counts(graph) -> dict:
    """Elements of the params the lowered graph reads: trainable in the source, and the rest."""
    trainable = sum(a.size for name, a in graph.params.items() if graph.is_trainable(name))
    return {"trainable": int(trainable), "non_trainable": int(sum(a.size for a in graph.params.values()) - trainable)}


def _training(graph, source, converted, folding) -> dict:
    """report["training"]: what was folded or dropped, and the trainable/non-trainable element counts of the
    source (the params the model reads) and of the converted model, whose trainable ones must agree."""
    folded = [{"scope": row["scope"], "op": row["op"]} for rows in graph.meta.get("folded", {}).values() for row in rows]
    dropped = [{"scope": row["scope"], "kind": row["kind"]} for row in graph.meta.get("dropped", ())]
    match = source["trainable"] == converted["trainable"]
    problem = "" if match or folding else (
        f"trainable elements differ: source {source['trainable']:,}, converted {converted['trainable']:,} "
        "(a parameter read only through a folded computation became a constant)")
    return {"mode": "inference" if folding else "training", "folded": folded, "dropped": dropped,
            "parameters": {"source": source, "converted": converted}, "trainable_match": match, "problem": problem}


def _files(out, target, export_tpu) -> dict:
    files = {"code": out / "model.py", "weights": target.weights_path(out), "report": out / "report.json",
             "report_html": out / "report.html"}
    if export_tpu:
        files.update(tpu_artifact=out / target.tpu_artifact, tpu_weights=out / f"{target.tpu_artifact}.weights.npz")
    return files


def _verification_failed(result) -> VerificationFailed:
    ver = result.report["verification"]
    rows = [r for r in ver["outputs"] if not r["passed"]]
    where = ver.get("first_divergence") or {}
    exc = VerificationFailed(
        f"{result.out}: output {rows[0]['name'] if rows else '?'} differs from the source "
        f"({rows[0]['problem'] if rows else ver.get('problem')}); first diverging node: "
        f"{where.get('scope') or '?'} ({where.get('op') or '?'})",
        hint="see report.html (the error along the graph) and report.json; rerun with --atol/--rtol if the "
             "tolerance is too tight")
    exc.result = result
    return exc


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def verify(source, out, *, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, inputs=(), trust_pickle=False,
           trace=False, grad=False, check=True, trust_savedmodel=False, progress=None, debug=False) -> dict:
    """Re-check a converted folder ``out`` against ``source`` on seeded batches (seeds seed..seed+samples-1).

    Only out/model.py and its weights are run; report.json is not read. Returns the report dict
    (``passed``, per-output ``outputs``, per-seed ``samples``, ``first_divergence``, ``trace`` rows).
    ``grad`` also compares gradients (``report["gradients"]``; a difference fails the check).
    ``progress``: as ``convert``'s (stages load, load-out, pair, samples with per-batch counts, trace, grad).
    Raises BadInput (2), or VerificationFailed (1) when ``check`` and the outputs differ.
    Example: ``verify("model.pt2", "out/", samples=3)["outputs"][0]["max_abs"]``.
    """
    check_tolerances(atol, rtol)
    return verify_converted(source, out, samples=samples, seed=seed, atol=atol, rtol=rtol, inputs=inputs,
                            trust_pickle=trust_pickle, trace=trace, grad=grad, check=check,
                            trust_savedmodel=trust_savedmodel, progress=progress)
