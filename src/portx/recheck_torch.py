"""Re-checking a ``torch-xla`` conversion (``model.py`` + ``model.safetensors``) against its source.

The PyTorch side of ``portx verify`` and of convert's first-divergence search. Note [trust nothing in
OUT] (recheck.py) holds here too: only ``model.py`` and ``model.safetensors`` are run (imported as a
user would), ``report.json`` is never read, and the IR is emitted again in memory to learn which local
of ``forward`` holds each IR value. ``run_torch_with_locals`` captures every local of ``forward``;
the emitted module and the IR's NumPy reference both follow the IR graph, so they are compared value
by value. When the re-emitted text differs from the file (another portx version, or an edit) only
outputs are compared.

Example:
    >>> report = verify_torch("model.keras", "out/", samples=3)
    >>> report["passed"], report.get("first_divergence", {}).get("scope")
"""
from __future__ import annotations

import warnings
from pathlib import Path

from .errors import BadInput, VerificationFailed
from .equivalence import DEFAULT_ATOL, DEFAULT_RTOL, compare, make_inputs, run_reference
from .recheck import (_explicit_batch, _summary, expected_outputs, failure_message, source_intermediates,
                      trace_layers)

__all__ = ["TARGET", "is_torch_folder", "open_torch", "observe_torch", "localize_torch", "lower_for_torch",
           "check_torch", "verify_torch"]

TARGET = "torch-xla"
# Pass sets 'portx convert' may have run, each tried with every --io-layout (its flags are not read back).
_SKIPS = ((), ("fold_batch_norm",))


def is_torch_folder(out) -> bool:
    """True when ``out`` (a folder or a model.py path) was written by ``--to torch-xla``.

    The weights file decides (model.safetensors, and no model.weights.h5); with neither, a model.py
    that imports torch (so a missing-weights error names model.safetensors).
    """
    from .emitters.keras_jax import WEIGHTS_FILE as KERAS_WEIGHTS
    from .emitters.torch_xla import WEIGHTS_FILE

    if not isinstance(out, (str, Path)):
        return False
    path = Path(out)
    folder = path if path.is_dir() else path.parent
    if (folder / KERAS_WEIGHTS).is_file():
        return False
    if (folder / WEIGHTS_FILE).is_file():
        return True
    code = path / "model.py" if path.is_dir() else path
    try:
        return code.is_file() and "\nimport torch\n" in code.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def open_torch(out):
    """(model in eval mode, model.py path, label) for a torch-xla OUT folder or its model.py.

    Raises BadInput when a file is missing or the files do not make a model.
    """
    from .emitters.torch_xla import WEIGHTS_FILE, import_emitted_torch

    path = Path(out)
    if not path.exists():
        raise BadInput(f"{path}: no such folder", hint="pass the OUT folder written by 'portx convert'")
    code = path / "model.py" if path.is_dir() else path
    for needed in (code, code.parent / WEIGHTS_FILE):
        if not needed.is_file():
            raise BadInput(f"{needed}: missing", hint="pass the OUT folder written by 'portx convert --to torch-xla' "
                                                      "(model.py and model.safetensors)")
    try:
        model = import_emitted_torch(code).load_model()
    except Exception as exc:  # any failure here means the files do not make a model
        text = str(exc).strip()
        first = text.splitlines()[0][:200] if text else ""
        raise BadInput(f"{code}: load_model() failed ({type(exc).__name__}: {first})",
                       hint="the files may be damaged, or the weights may not fit model.py; "
                            "convert again with 'portx convert --to torch-xla --force'") from None
    return model, code, str(code.parent if path.is_dir() else code)


def observe_torch(graph, model, var_of, arrays):
    """Run ``model`` once: (outputs, {IR Value: array}) for every intermediate ``var_of`` names.

    Example: ``observe_torch(graph, model, emitted["var_of"], make_inputs(graph, 0))[1][value]``.
    """
    from .emitters.torch_xla import run_torch_with_locals

    outputs, local = run_torch_with_locals(model, arrays)
    skip = set(graph.inputs)
    observed = {v: local[var] for v, var in var_of.items()
                if var in local and v not in skip and not graph.is_param(v)
                and tuple(local[var].shape) == tuple(v.type.shape)}
    return outputs, observed


def localize_torch(graph, model, var_of, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> dict:
    """The first IR node whose value in ``model.forward`` differs from the IR's NumPy reference.

    Used by convert (``var_of`` from ``emit_torch``). Example: ``localize_torch(...)["scope"]`` -> ``"conv_b"``.
    """
    _, observed = observe_torch(graph, model, var_of, arrays)
    rows = trace_layers(graph, observed, run_reference(graph, arrays), {}, atol, rtol)
    bad = next((r for r in rows if not r["passed"]), None)
    if bad is None:
        return {"scope": None, "op": None, "problem": "every intermediate matches the IR reference: "
                "the IR itself differs from the source (a frontend import rule)"}
    return {k: bad[k] for k in ("scope", "op", "value", "max_abs", "problem")}


def lower_for_torch(src, raw, skip=(), io_layout="source"):
    """The source's IR after the torch-xla passes (minus ``skip``) and ``--io-layout``: what convert emitted."""
    from .passes.layout import set_io_layout
    from .passes.pipeline import run_passes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convert already reported these warnings
        graph = run_passes(raw, TARGET, skip=skip)
    return set_io_layout(graph, io_layout) if io_layout != "source" else graph


def _reemit(src, raw, code):
    """(graph, var_of, note): the variant whose emitted text is ``code``, else the default graph and a note."""
    from .api import missing_emit_rules
    from .emitters.torch_xla import TorchEmitter
    from .passes.layout import IO_LAYOUTS

    text = code.read_text(encoding="utf-8")
    default = None
    for skip in _SKIPS:
        for io_layout in IO_LAYOUTS:
            graph = lower_for_torch(src, raw, skip, io_layout)
            default = default or graph
            if missing_emit_rules(graph, TARGET):
                return default, None, "this portx version cannot emit the source again; comparing outputs only"
            emitter = TorchEmitter(graph)
            if emitter.emit_graph() == text:
                return graph, dict(emitter.names), ""
    return default, None, (f"{code} differs from what this portx version writes for the source "
                           "(made by another portx version, or edited); comparing outputs only")


def _run_samples(src, graph, model, batches, atol, rtol) -> list:
    from .emitters.torch_xla import run_torch

    names = [v.name for v in graph.outputs]
    rows = []
    for seed, arrays in batches:
        try:
            got = run_torch(model, arrays)
        except Exception as exc:  # the module cannot take the source's inputs (edited, or another model)
            text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            rows.append({"seed": seed, "passed": False, "outputs": [],
                         "problem": f"the converted model fails on the source's inputs ({type(exc).__name__}: "
                                    f"{text})"})
            continue
        rows.append({"seed": seed, **compare(expected_outputs(src, graph, arrays), got, names, atol, rtol)})
    return rows


def _batches(graph, batch, samples, seed) -> list:
    if batch is None:
        return [(s, make_inputs(graph, s)) for s in range(seed, seed + samples)]
    return [(None, _explicit_batch(graph, batch))]


def check_torch(src, out, *, batch=None, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL,
                trace=False) -> dict:
    """Compare a loaded source with the torch-xla folder ``out``; the report of ``recheck.check_converted``.

    Example: ``check_torch(api.load("model.keras"), "out/", samples=3)["passed"]``.
    """
    if samples < 1:
        raise BadInput(f"--samples {samples}: must be at least 1", hint="pass --samples 1 or more")
    from .api import _lower

    model, code, label = open_torch(out)
    raw = _lower(src)
    graph, var_of, note = _reemit(src, raw, code)
    report = {"source": str(src.label), "out": label, "target": TARGET, "atol": atol, "rtol": rtol,
              "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs]}
    batches = _batches(graph, batch, samples, seed)
    runs = _run_samples(src, graph, model, batches, atol, rtol)
    if not all(r["outputs"] for r in runs):
        failed = next(r for r in runs if not r["outputs"])
        return {**report, "passed": False, "samples": runs, "outputs": [], "problem": f"{label}: {failed['problem']}"}
    report.update(passed=all(r["passed"] for r in runs), samples=runs, outputs=_summary(runs))
    if trace or not report["passed"]:
        chosen = next((i for i, r in enumerate(runs) if not r["passed"]), 0)
        report.update(code_matches=var_of is not None, note=note)
        if var_of is not None:
            report.update(_layer_report(src, graph, model, var_of, batches[chosen], atol, rtol, trace))
    if not report["passed"]:
        report["problem"] = failure_message(report)
    return report


def _layer_report(src, graph, model, var_of, batch, atol, rtol, trace) -> dict:
    """Trace rows (``trace``) and the first diverging layer, each also against a torch source's own values."""
    from .api import _is_keras
    from .passes.layout import source_arrays

    seed, arrays = batch
    _, observed = observe_torch(graph, model, var_of, arrays)
    found, source = {"trace_seed": seed}, {}
    if not _is_keras(src):  # a Keras source's intermediates are not matched to IR values
        try:
            source = source_intermediates(src, source_arrays(graph, arrays))
        except Exception as exc:  # private torch APIs; the reference comparison still stands
            found["note"] = f"source intermediates unavailable ({type(exc).__name__})"
    rows = trace_layers(graph, observed, run_reference(graph, arrays), source, atol, rtol, var_of)
    if trace:
        found["trace"] = rows
    bad = next((r for r in rows if not r["passed"]), None)
    if bad is not None:
        found["first_divergence"] = bad
    return found


def verify_torch(source, out, *, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, inputs=(),
                 trust_pickle=False, trace=False, check=True) -> dict:
    """Re-check the torch-xla folder OUT against SOURCE on seeds seed..seed+samples-1.

    Returns the report; raises BadInput (2), or VerificationFailed (1) when ``check`` and it differs.
    Example: ``verify_torch("model.keras", "out/", samples=3)["passed"]``.
    """
    from .api import load

    src = load(source, inputs=inputs, trust_pickle=trust_pickle)
    report = check_torch(src, out, samples=samples, seed=seed, atol=atol, rtol=rtol, trace=trace)
    if check and not report["passed"]:
        raise VerificationFailed(report["problem"], hint="rerun with --trace for every layer's error")
    return report
