"""Re-checking a converted model against its source, after the fact: ``portx verify`` and ``portx.testing``.

Note [trust nothing in OUT]: a converted folder may come from another portx version, or may have been
edited since. Only ``model.py`` and ``model.weights.h5`` are run (imported as a user would; a
``model.safetensors`` folder from ``--to torch-xla`` is checked by recheck_torch.py);
``report.json`` is never read. Input shapes and the expected numbers come from the source, lowered
again. The IR is re-emitted in memory to name each IR value's variable in ``model.py``; when that text
differs from the file, per-layer comparisons would pair the wrong tensors, so only outputs are compared.

Example:
    >>> report = verify_converted("model.pt2", "out/", samples=3)
    >>> report["passed"], report["outputs"][0]["max_abs"]
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .errors import BadInput, VerificationFailed
from .emitters.codegen import flatten_outputs
from .equivalence import DEFAULT_ATOL, DEFAULT_RTOL, compare, compare_arrays, make_inputs, run_reference

__all__ = ["Converted", "open_converted", "lower_source", "expected_outputs", "check_converted", "verify_converted",
           "localize", "observe", "trace_layers", "source_intermediates", "failure_message"]

TARGET = "keras-jax"
# Intermediate values carry more rounding than outputs (same loosening as verify.first_divergence).
_LAYER_SLACK = 10
# Pass sets 'portx convert' may have run (its flags are not read back: Note [trust nothing in OUT]).
_PASS_VARIANTS = ((), ("fold_batch_norm",))  # default; --no-fold-bn


@dataclass
class Converted:
    """A converted model to check: the live Keras model, and its ``model.py`` when it came from files."""

    model: object
    code: Path | None = None
    module: object = None
    label: str = "keras model"


def open_converted(converted) -> Converted:
    """An OUT folder, a ``model.py`` path or a live ``keras.Model``, ready to run (BadInput when unusable).

    Example: ``open_converted("out/").model.predict(x)``.
    """
    if not isinstance(converted, (str, Path)):
        import keras

        if not isinstance(converted, keras.Model):
            raise BadInput(f"{type(converted).__name__} is not a converted model",
                           hint="pass an OUT folder from 'portx convert', its model.py, or a keras.Model")
        return Converted(converted, label=f"keras model {converted.name}")
    path = Path(converted)
    code = path / "model.py" if path.is_dir() else path
    if not path.exists():
        raise BadInput(f"{path}: no such folder", hint="pass the OUT folder written by 'portx convert'")
    from .emitters.keras_jax import WEIGHTS_FILE, import_emitted

    for needed in (code, code.parent / WEIGHTS_FILE):
        if not needed.is_file():
            raise BadInput(f"{needed}: missing", hint="pass the OUT folder written by 'portx convert' "
                                                      "(model.py and model.weights.h5)")
    try:
        module = import_emitted(code)
        model = module.load_model()
    except Exception as exc:  # any failure here means the files do not make a model
        raise BadInput(f"{code}: load_model() failed ({type(exc).__name__}: {_first_line(exc)})",
                       hint="the files may be damaged, or the weights may not fit model.py; "
                            "convert again with 'portx convert --force'") from None
    return Converted(model, code, module, str(code.parent if path.is_dir() else code))


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""


def lower_source(src, skip=(), raw=None, io_layout="source"):
    """The source's IR after the keras-jax passes (minus ``skip``) and ``--io-layout``: the graph
    ``convert`` emitted from.

    ``raw`` reuses an already lowered, not yet rewritten graph (passes are pure functions).
    Example: ``make_inputs(lower_source(api.load("model.pt2")), seed=0)``.
    """
    from .api import _lower
    from .passes.layout import set_io_layout
    from .passes.pipeline import run_passes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convert already reported these warnings
        graph = run_passes(_lower(src) if raw is None else raw, TARGET, skip=skip)
    return set_io_layout(graph, io_layout) if io_layout != "source" else graph


def _matching_layout(src, raw, model) -> tuple:
    """(graph, io_layout): the first ``--io-layout`` whose input shapes the converted model takes
    (its flags are not read back: Note [trust nothing in OUT]); the default graph when none does."""
    from .passes.layout import IO_LAYOUTS

    default = lower_source(src, raw=raw)
    for io_layout in IO_LAYOUTS:
        graph = default if io_layout == "source" else lower_source(src, raw=raw, io_layout=io_layout)
        if not _signature_problem(graph, model):
            return graph, io_layout
    return default, "source"


def expected_outputs(src, graph, arrays) -> list:
    """The source's outputs on ``arrays`` (given in the graph's I/O layout), in the graph's layout."""
    from .api import _source_outputs
    from .passes.layout import graph_arrays, source_arrays

    # --io-layout may have transposed inputs/outputs: the source sees and gives its own layout
    return graph_arrays(graph, _source_outputs(src, source_arrays(graph, arrays)))


def _reemit(src, raw, converted, io_layout="source"):
    """(graph, emitter) whose text is ``model.py`` (trying each pass set of ``_PASS_VARIANTS``), or a note.

    A live model has no text to compare: its layers are matched by name to the default pass set.
    """
    from .api import missing_emit_rules
    from .emitters.keras_jax import KerasEmitter

    code = None if converted.code is None else converted.code.read_text(encoding="utf-8")
    for skip in _PASS_VARIANTS:
        graph = lower_source(src, skip, raw, io_layout)
        if missing_emit_rules(graph, TARGET):
            return None, None, "this portx version cannot emit the source again; comparing outputs only"
        emitter = KerasEmitter(graph)
        text = emitter.emit_graph()
        if code is None:
            return graph, emitter, "live model: layers matched by name"
        if text == code:
            return graph, emitter, ""
    return None, None, (f"{converted.code} differs from what this portx version writes for the source "
                        "(made by another portx version, or edited); comparing outputs only")


def _watch(graph, converted, emitter) -> dict:
    """IR Value -> the KerasTensor that computes it in the converted model (Note [trust nothing in OUT])."""
    import keras

    if converted.code is not None:
        from .emitters.keras_jax import WEIGHTS_FILE, build_with_locals

        model, tensors = build_with_locals(converted.module)
        model.load_weights(converted.code.parent / WEIGHTS_FILE)
        found = {v: tensors.get(var) for v, var in emitter.names.items()}
    else:
        model = converted.model
        layers = {layer.name: layer for layer in model.layers}
        found = {v: _layer_output(layers.get(name)) for v, name in emitter.layer_of.items()}
    watch = {v: t for v, t in found.items() if isinstance(t, keras.KerasTensor) and v not in graph.inputs
             and not graph.is_param(v) and tuple(t.shape) == tuple(v.type.shape)}
    return {"model": model, "tensors": watch}


def _layer_output(layer):
    try:
        return layer.output  # raises for a layer called more than once (not written by portx)
    except (AttributeError, ValueError):
        return None


def observe(watched, arrays) -> dict:
    """Run the converted model once and return {IR Value: array} for every watched intermediate.

    Example: ``observe(_watch(graph, converted, emitter), make_inputs(graph, 0))[value]``.
    """
    import keras

    model, pairs = watched["model"], list(watched["tensors"].items())
    if not pairs:
        return {}
    probe = keras.Model(model.inputs if len(model.inputs) > 1 else model.inputs[0], [t for _, t in pairs])
    values = probe(arrays if len(arrays) > 1 else arrays[0])
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return {v: np.asarray(a) for (v, _), a in zip(pairs, values)}


def localize(graph, code, var_of, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> dict:
    """The first IR node whose emitted intermediate differs from the IR's NumPy reference (used by convert).

    Example: ``localize(graph, "out/model.py", emitted["var_of"], arrays)["scope"]`` -> ``"block.3"``.
    """
    from .emitters.keras_jax import import_emitted

    module = import_emitted(code)
    emitter = SimpleNamespace(names=var_of)  # a KerasEmitter's variable names, from convert
    observed = observe(_watch(graph, Converted(None, Path(code), module), emitter), arrays)
    rows = trace_layers(graph, observed, run_reference(graph, arrays), {}, atol, rtol)
    bad = next((r for r in rows if not r["passed"]), None)
    if bad is None:
        return {"scope": None, "op": None, "problem": "every intermediate matches the IR reference: "
                "the IR itself differs from the source (a frontend import rule)"}
    return {k: bad[k] for k in ("scope", "op", "value", "max_abs", "problem")}


def _row(node, value, var, observed, reference, source, atol, rtol, order=None) -> dict:
    """One trace row: the emitted intermediate against the IR reference, and against torch when known.

    ``order``: the axis order the layout pass stores ``value`` in (Note [stored orders] in passes/layout_sink.py).
    """
    ref = compare_arrays(reference[value], observed[value], atol * _LAYER_SLACK, rtol * _LAYER_SLACK)
    row = {"scope": node.scope, "op": node.op.name, "value": value.name, "var": var,
           "max_abs": ref["max_abs"], "max_rel": ref["max_rel"], "passed": ref["passed"], "problem": ref["problem"],
           "source": None}
    theirs = source.get(value.name)
    if theirs is not None and order is not None and np.ndim(theirs) == len(order):
        theirs = np.transpose(theirs, order)
    if theirs is not None and tuple(theirs.shape) == tuple(value.type.shape):
        src = compare_arrays(theirs, observed[value], atol * _LAYER_SLACK, rtol * _LAYER_SLACK)
        row["source"] = {k: src[k] for k in ("max_abs", "max_rel", "passed", "problem")}
        if ref["passed"] and not src["passed"]:
            row.update(passed=False, problem=f"differs from the source's intermediate: {src['problem']}")
    return row


def trace_layers(graph, observed, reference, source, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, names=None) -> list:
    """Rows per observed IR value in graph order, up to and including the first that diverges.

    ``source`` maps IR value names to the torch intermediates (may be empty).
    Example: ``trace_layers(graph, observed, run_reference(graph, arrays), {})[-1]["scope"]``.
    """
    rows, orders = [], graph.meta.get("stored_orders", {})
    added = graph.meta.get("layout_transposes", ())  # the layout pass's own transposes: no source layer
    for node in graph.nodes:
        for value in node.outputs:
            if value in observed and value in reference and value.name not in added:
                rows.append(_row(node, value, (names or {}).get(value), observed, reference, source, atol, rtol,
                                 orders.get(value.name)))
                if not rows[-1]["passed"]:
                    return rows
    return rows


def _torch_inputs(src, arrays) -> list:
    import torch

    # the source gets its own input dtypes back (e.g. int64 ids the IR narrowed to int32)
    return [torch.from_numpy(np.require(a, requirements="C")).to(ex.dtype) if isinstance(ex, torch.Tensor)
            else torch.from_numpy(np.require(a, requirements="C")) for a, ex in zip(arrays, src.example_inputs)]


def source_intermediates(src, arrays) -> dict:
    """IR value name -> the source's own intermediate (torch), for the values torch computes one-to-one.

    Lowers the program again to learn which IR value each fx node became, then runs the same fx
    graph with torch.fx.Interpreter, recording every node's output.
    Example: ``source_intermediates(api.load("model.pt2"), arrays)["conv2d"].shape``.
    """
    import torch

    from .frontends.torch import _state_of, walk_program

    ep, low = walk_program(src.program)
    state, users = _state_of(ep), set(ep.graph_signature.user_inputs)
    feed = iter(_torch_inputs(src, arrays))
    args = [next(feed) if node.name in users else state[node.name][1]
            for node in ep.graph.nodes if node.op == "placeholder"]
    seen = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            seen[n.name] = result = super().run_node(n)
            return result

    with torch.no_grad():
        Recorder(ep.graph_module).run(*args)
    found = {}
    for fx, value in low.env.items():
        out = seen.get(fx.name)
        if hasattr(value, "type") and isinstance(out, torch.Tensor):
            found.setdefault(value.name, (out.float() if out.dtype == torch.bfloat16 else out).detach().numpy())
    return found


def _run_samples(src, graph, model, batches, atol, rtol) -> list:
    """Per batch: the source and the converted model on the same inputs, compared output by output."""
    import jax

    def forward(trainable, non_trainable, *inputs):  # one compile for all batches
        out, _ = model.stateless_call(trainable, non_trainable, list(inputs) if len(inputs) > 1 else inputs[0])
        return flatten_outputs(out)  # inside jit: JAX would hand a dict back with its keys sorted

    run = jax.jit(forward)
    weights = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
    names = [v.name for v in graph.outputs]
    rows = []
    for seed, arrays in batches:
        got = run(*weights, *arrays)
        got = [np.asarray(o) for o in got]
        rows.append({"seed": seed, **compare(expected_outputs(src, graph, arrays), got, names, atol, rtol)})
    return rows


def _summary(samples) -> list:
    """Per output, the worst error over all samples, with the seed it came from."""
    merged = []
    for i, row in enumerate(samples[0]["outputs"]):
        rows = [(s["seed"], s["outputs"][i]) for s in samples if i < len(s["outputs"])]
        failing = [(seed, r) for seed, r in rows if not r["passed"]] or rows
        seed, worst = max(failing, key=lambda sr: -1.0 if sr[1]["max_abs"] is None else sr[1]["max_abs"])
        merged.append({**worst, "name": row["name"], "seed": seed, "passed": all(r["passed"] for _, r in rows),
                       "max_abs": max((r["max_abs"] or 0.0) for _, r in rows),
                       "max_rel": max((r["max_rel"] or 0.0) for _, r in rows)})
    return merged


def _signature_problem(graph, model) -> str:
    """Why the converted model cannot take the source's inputs, or ''."""
    want = [tuple(v.type.shape) for v in graph.inputs]
    got = [tuple(t.shape) for t in model.inputs]
    if want != got:
        return f"the converted model takes inputs of shapes {got}, the source {want}"
    return ""


def _explicit_batch(graph, inputs) -> list:
    arrays = [np.asarray(a) for a in inputs]
    want = [tuple(v.type.shape) for v in graph.inputs]
    if [a.shape for a in arrays] != want:
        raise BadInput(f"inputs: shapes {[a.shape for a in arrays]}, the source was converted for {want}",
                       hint="pass arrays of the converted shapes, or inputs=None for seeded ones")
    return [a.astype(v.type.dtype) for a, v in zip(arrays, graph.inputs)]


def check_converted(src, converted, *, batch=None, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL,
                    trace=False) -> dict:
    """Compare a loaded source with a converted model; returns the report (see ``verify_converted``).

    Example: ``check_converted(api.load("model.pt2"), open_converted("out/"), samples=3)["passed"]``.
    """
    if samples < 1:
        raise BadInput(f"--samples {samples}: must be at least 1", hint="pass --samples 1 or more")
    from .api import _lower

    raw = _lower(src)
    graph, io_layout = _matching_layout(src, raw, converted.model)
    report = {"source": str(src.label), "out": converted.label, "atol": atol, "rtol": rtol, "io_layout": io_layout,
              "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs]}
    problem = _signature_problem(graph, converted.model)
    if problem:
        return {**report, "passed": False, "outputs": [], "samples": [], "problem": problem}
    batches = [(None, _explicit_batch(graph, batch))] if batch is not None else \
        [(s, make_inputs(graph, s)) for s in range(seed, seed + samples)]
    runs = _run_samples(src, graph, converted.model, batches, atol, rtol)
    report.update(passed=all(r["passed"] for r in runs), samples=runs, outputs=_summary(runs))
    if trace or not report["passed"]:
        chosen = next((i for i, r in enumerate(runs) if not r["passed"]), 0)
        report.update(_layer_report(src, raw, converted, batches[chosen], atol, rtol, trace, io_layout))
    if not report["passed"]:
        report["problem"] = failure_message(report)
    return report


def _layer_report(src, raw, converted, batch, atol, rtol, trace, io_layout="source") -> dict:
    """Trace rows (``trace``) and the first diverging layer, or a note saying why there are none."""
    from .passes.layout import source_arrays

    graph, emitter, note = _reemit(src, raw, converted, io_layout)
    found = {"code_matches": emitter is not None and converted.code is not None, "note": note}
    if emitter is None:
        return found
    arrays = batch[1]
    observed = observe(_watch(graph, converted, emitter), arrays)
    try:
        source = source_intermediates(src, source_arrays(graph, arrays))
    except Exception as exc:  # private torch APIs; the reference comparison still stands
        source, found["note"] = {}, f"source intermediates unavailable ({type(exc).__name__})"
    rows = trace_layers(graph, observed, run_reference(graph, arrays), source, atol, rtol, emitter.names)
    found["trace_seed"] = batch[0]
    if trace:
        found["trace"] = rows
    bad = next((r for r in rows if not r["passed"]), None)
    if bad is not None:
        found["first_divergence"] = bad
    return found


def failure_message(report) -> str:
    """One line: which output differs, on which seed, and the first diverging layer when known.

    Example: ``out/: output y differs from the source on seed 0 (...); first diverging layer: fc (linear) %y``.
    """
    if not report.get("outputs"):
        return f"{report['out']}: {report.get('problem', 'no outputs to compare')}"
    bad = next((s for s in report["samples"] if not s["passed"]), report["samples"][0])
    row = next((r for r in bad["outputs"] if not r["passed"]), None)
    seed = "" if bad["seed"] is None else f" on seed {bad['seed']}"
    what = f"output {row['name']} differs from the source{seed} ({row['problem']})" if row else \
        bad.get("problem", "outputs differ")
    where = report.get("first_divergence")
    place = f"; first diverging layer: {where['scope'] or '<top>'} ({where['op']}) %{where['value']}" if where else ""
    return f"{report['out']}: {what}{place}"


def verify_converted(source, out, *, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, inputs=(),
                     trust_pickle=False, trace=False, check=True) -> dict:
    """Re-check OUT (folder written by ``portx convert``) against SOURCE on seeds seed..seed+samples-1.

    Returns the report; raises BadInput (2), or VerificationFailed (1) when ``check`` and it differs.
    Example: ``verify_converted("model.pt2", "out/", samples=3)["passed"]``.
    """
    from .api import load
    from .recheck_torch import is_torch_folder, verify_torch

    if is_torch_folder(out):  # model.safetensors beside model.py: written by --to torch-xla
        report = verify_torch(source, out, samples=samples, seed=seed, atol=atol, rtol=rtol, inputs=inputs,
                              trust_pickle=trust_pickle, trace=trace, check=False)
    else:
        src = load(source, inputs=inputs, trust_pickle=trust_pickle)
        converted = open_converted(out)
        if converted.code is None:
            raise BadInput(f"{type(out).__name__}: OUT must be a folder or a model.py path", hint="pass the OUT folder")
        report = check_converted(src, converted, samples=samples, seed=seed, atol=atol, rtol=rtol, trace=trace)
    if not report["passed"] and not report["outputs"]:  # nothing compared: OUT takes or gives other tensors
        first = next((s.get("problem") for s in report["samples"] if s.get("problem")), None)
        raise BadInput(f"{report['out']}: was converted from another model or for other input shapes: "
                       f"{first or report['problem']}", hint="pass the model OUT was made from, or convert SRC anew")
    if check and not report["passed"]:
        raise VerificationFailed(report["problem"], hint="rerun with --trace for every layer's error")
    return report
