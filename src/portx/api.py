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
from .errors import BadInput, NotTpuLegal, UnsupportedOps, VerificationFailed  # noqa: E402
from .outputs import staged_output  # noqa: E402
from .passes.legalize import PortxWarning  # noqa: E402
from .passes.layout import IO_LAYOUTS, graph_arrays, io_layouts, set_io_layout, source_arrays  # noqa: E402
from .passes.pipeline import run_passes  # noqa: E402
from .equivalence import DEFAULT_ATOL, DEFAULT_RTOL, compare, make_inputs  # noqa: E402

__all__ = ["convert", "load", "inspect", "op_table", "ConversionResult", "TARGETS", "missing_emit_rules", "verify"]

#: target name -> the emitter module (portx.emitters.<module>) that writes it
TARGETS = {"keras-jax": "keras_jax", "torch-xla": "torch_xla"}
#: source file suffixes read by the Keras frontend (everything else goes to the torch frontend)
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


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


class _Stages:
    """Times named stages and reports each through ``progress(name, seconds)``."""

    def __init__(self, progress):
        self.times, self.progress = {}, progress

    def run(self, name, fn, *args, **kwargs):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        self.times[name] = round(time.perf_counter() - start, 4)
        if self.progress:
            self.progress(name, self.times[name])
        return result


def _is_keras_source(source) -> bool:
    if isinstance(source, (str, os.PathLike)):
        return Path(source).suffix.lower() in KERAS_SUFFIXES
    from .frontends.keras_files import is_keras_model

    return is_keras_model(source)


def _is_keras(src) -> bool:
    from .frontends.keras_files import KerasSource
    from .frontends.keras_subclassed import SubclassedKerasSource

    return isinstance(src, (KerasSource, SubclassedKerasSource))


def load(source, *, example_inputs=None, inputs=(), trust_pickle=False, unsafe_keras=False):
    """Open a source (path or live model) as a frontend object with ``run`` and ``label``.

    Torch sources (``.pt2``, ``.pt``, ``nn.Module``) carry an ExportedProgram; Keras sources
    (``.keras``, ``.h5``, ``keras.Model``) carry the model and lower themselves.
    """
    if _is_keras_source(source):
        from .frontends.keras_files import from_keras_model, load_keras_source

        from .frontends.keras_subclassed import SubclassedKerasSource, needs_tracing

        if isinstance(source, (str, os.PathLike)):
            return load_keras_source(source, input_specs=inputs, unsafe=unsafe_keras)
        if needs_tracing(source):
            if not example_inputs:
                raise BadInput(f"subclassed Keras model {source.name} has no functional graph to read input "
                               "shapes from", hint="pass example_inputs=(array, ...) to portx.convert")
            return SubclassedKerasSource(source, [np.asarray(a) for a in example_inputs])
        return from_keras_model(source, input_specs=inputs, example_inputs=example_inputs)
    from .frontends.torch_files import from_module, load_torch_source

    if isinstance(source, (str, os.PathLike)):
        return load_torch_source(source, inputs, trust_pickle)
    return from_module(source, example_inputs)


def _lower(src, strict_tpu=False):
    if _is_keras(src):
        return src.lower("model")
    from .frontends.torch import lower_exported

    return lower_exported(src.program, name="model", strict_tpu=strict_tpu)


def check_tolerances(atol, rtol):
    """BadValue (exit 2; a ValueError) unless both tolerances are finite and >= 0: NaN would pass anything."""
    import math

    from .errors import BadValue

    for name, value in (("atol", atol), ("rtol", rtol)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise BadValue(f"--{name} {value!r}: a tolerance must be a finite number >= 0",
                           hint=f"e.g. --{name} {DEFAULT_ATOL if name == 'atol' else DEFAULT_RTOL:g} (the default)")


def _keep_output_structure(src, graph):
    """Record a torch program's nested outputs so the emitted model returns the same nesting."""
    if _is_keras(src):
        return graph
    from .frontends.torch_files import output_structure

    structure = output_structure(src.program)
    return graph if structure is None else graph.replace(meta={**graph.meta, "output_structure": structure})


def missing_emit_rules(graph, target) -> list:
    """(op, scopes, reason) for every op that has no emit rule for ``target``."""
    found = {}
    for node in graph.nodes:
        if target not in node.op.emit_rules:
            found.setdefault(node.op.name, []).append(node.scope)
    return [(op, scopes, f"no {target} emitter") for op, scopes in found.items()]


def inventory(graph) -> dict:
    """op -> {"count": n, "scopes": [first scopes]} in first-seen order."""
    table = {}
    for node in graph.nodes:
        row = table.setdefault(node.op.name, {"count": 0, "scopes": []})
        row["count"] += 1
        if len(row["scopes"]) < 5 and node.scope not in row["scopes"]:
            row["scopes"].append(node.scope)
    return table


def op_table(target=None) -> list:
    """One row per IR op: name, family, torch names, keras-jax support, and the table's TPU status."""
    from .ir import REGISTRY
    from .optables import load_table

    table = load_table(target) if target else {}
    rows = [{"op": op.name, "family": op.family, "torch": sorted(op.import_names.get("torch", [])),
             "emits": sorted(op.emit_rules), **table.get("op", {}).get(op.name, {})}
            for op in sorted(REGISTRY.values(), key=lambda o: (o.family, o.name))]
    rows += [{"op": f"{kind} {k}", "family": kind, "torch": [], "emits": [], **v}
             for kind in ("dtype", "pattern") for k, v in table.get(kind, {}).items()]
    return rows


def inspect(source, *, example_inputs=None, inputs=(), trust_pickle=False, target=None) -> dict:
    """Op inventory of a source without converting: {"ops": {...}, "inputs": [...], "outputs": [...]}.

    With ``target="tpu"`` each op row also carries its status, reason and source from the op table.
    """
    graph = _lower(load(source, example_inputs=example_inputs, inputs=inputs, trust_pickle=trust_pickle))
    ops_rows = inventory(graph)
    if target:
        from .optables import status_of

        for op, row in ops_rows.items():
            row.update(status_of(target, op))
    return {"ops": ops_rows, "nodes": len(graph.nodes), "weight_bytes": graph.weight_bytes(),
            "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
            "outputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs]}


def _source_outputs(src, arrays) -> list:
    if _is_keras(src):
        return [np.asarray(a) for a in src.run(*arrays)]
    import torch

    # the source gets its own input dtypes back (e.g. int64 ids the IR narrowed to int32)
    # np.ascontiguousarray would turn a 0-d input into shape (1,); np.require keeps the rank
    tensors = [torch.from_numpy(np.require(a, requirements="C")).to(ex.dtype) if isinstance(ex, torch.Tensor)
               else torch.from_numpy(np.require(a, requirements="C")) for a, ex in zip(arrays, src.example_inputs)]
    with torch.no_grad():
        out = src.run(*tensors)
    flat = torch.utils._pytree.tree_leaves(out)  # nested dicts/tuples/lists, in torch.export's output order
    return [t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy() for t in flat]


def _verify(src, graph, model, emitted, target, seed, atol, rtol) -> dict:
    arrays = make_inputs(graph, seed)
    # --io-layout may have transposed inputs/outputs: the source sees and gives its own layout
    expected = graph_arrays(graph, _source_outputs(src, source_arrays(graph, arrays)))
    got = _emitter(target).run_model(model, arrays)
    result = compare(expected, got, [v.name for v in graph.outputs], atol, rtol)
    result.update({"seed": seed, "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs]})
    if not result["passed"]:
        result["first_divergence"] = _localize(graph, emitted, arrays, atol, rtol, target, model)
    return result


def _localize(graph, emitted, arrays, atol, rtol, target="keras-jax", model=None):
    """Compare every intermediate value of the emitted model with the IR's NumPy reference."""
    if target == "torch-xla":  # the loaded module's forward locals, as var_of names them
        from .recheck_torch import localize_torch

        return localize_torch(graph, model, emitted["var_of"], arrays, atol, rtol)
    from .recheck import localize

    return localize(graph, emitted["code"], emitted["var_of"], arrays, atol, rtol)


def _emitter(target):
    """The emitter module for ``target``: ``emit(graph, folder)``, ``load_folder(folder)``, ``run_model``."""
    import importlib

    return importlib.import_module(f".emitters.{TARGETS[target]}", __package__)


def _emit(graph, folder, target):
    return _emitter(target).emit(graph, folder)


def _load_emitted(folder, target):
    return _emitter(target).load_folder(folder)


def _nonfinite_params(graph) -> list:
    """A warning per parameter holding NaN or Inf (verification then checks they propagate alike)."""
    notes = []
    for name, array in graph.params.items():
        if array.dtype.kind == "f":
            nan, inf = int(np.isnan(array).sum()), int(np.isinf(array).sum())
            if nan or inf:
                notes.append(f"parameter {name}: {nan} NaN and {inf} Inf values")
    return notes


def _require_jax_backend():
    import keras

    if keras.config.backend() != "jax":
        raise BadInput(f"Keras was imported with backend {keras.config.backend()!r}; portx writes and verifies "
                       "Keras-JAX models", hint="set KERAS_BACKEND=jax before importing keras")


def _tpu_proof(model, graph, strict, target="keras-jax"):
    if target == "torch-xla":
        from .tpu_torch import prove_torch_tpu_lowering as prove_tpu_lowering
    else:
        from .tpu import prove_tpu_lowering

    proof = prove_tpu_lowering(model, graph)
    if strict and proof["verdict"] == "skipped":
        raise NotTpuLegal(f"the TPU lowering proof was skipped ({proof.get('why') or 'its tools are missing'}), so "
                          "--strict-tpu cannot vouch for this model", hint="install portx with its dependencies "
                          "(torchax for --to torch-xla) and convert again, or drop --strict-tpu")
    if strict and proof["verdict"] != "ok":
        raise NotTpuLegal(f"model does not lower cleanly for TPU: {'; '.join(proof['problems'])}",
                          hint="drop --strict-tpu to convert anyway, or replace the listed constructs")
    return proof


def convert(source, *, to="keras-jax", out=None, example_inputs=None, inputs=(), verify=True,
            atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, seed=0, trust_pickle=False, force=False,
            strict_tpu=False, export_tpu=False, fold_bn=True, unsafe_keras=False, io_layout="source",
            progress=None) -> ConversionResult:
    """Convert ``source`` (a path or a live nn.Module) for target ``to`` into folder ``out``.

    ``io_layout``: "source" (the source's input/output layout), "channels-last" or "channels-first"
    (image inputs/outputs in that layout, with no transpose at the boundary; report["layout"] says which).
    Raises BadInput (2), UnsupportedOps (3), NotTpuLegal (4, with ``strict_tpu``) or
    VerificationFailed (1; the files are still written and ``exc.result`` holds the result).
    Example: ``convert("model.pt2", to="keras-jax", out="out/")``.
    """
    _require_jax_backend()
    check_tolerances(atol, rtol)
    if io_layout not in IO_LAYOUTS:
        raise BadInput(f"--io-layout {io_layout}: unknown layout", hint=f"choose one of {', '.join(IO_LAYOUTS)}")
    if to not in TARGETS:
        raise BadInput(f"--to {to}: unknown target", hint=f"choose one of {', '.join(TARGETS)}")
    if export_tpu and to != "keras-jax":
        raise BadInput(f"--export-tpu writes a jax.export artifact of a Keras-JAX model, not of --to {to}",
                       hint="drop --export-tpu, or convert with --to keras-jax")
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="portx-")) / "out"
    stages = _Stages(progress)
    sizes = {}  # what a full disk would need: the weights are the bulk of every output folder
    with staged_output(out, force, protect=(source,), need=lambda: sizes.get("weights", 0)) as tmp:
        src = stages.run("load", load, source, example_inputs=example_inputs, inputs=inputs,
                         trust_pickle=trust_pickle, unsafe_keras=unsafe_keras)
        graph = stages.run("lower", _lower, src, strict_tpu)
        sizes["weights"] = 2 * graph.weight_bytes()  # the weights file, and jax.export's copy at most
        graph = _keep_output_structure(src, graph)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PortxWarning)
            graph = stages.run("passes", run_passes, graph, to, skip=() if fold_bn else ("fold_batch_norm",))
            graph = set_io_layout(graph, io_layout) if io_layout != "source" else graph
        notes = ([str(w.message) for w in caught if issubclass(w.category, PortxWarning)] + _nonfinite_params(graph)
                 + list(getattr(src, "notes", [])))
        missing = missing_emit_rules(graph, to)
        if missing:
            raise UnsupportedOps(missing)
        emitted = stages.run("emit", _emit, graph, tmp, to)
        emitted.pop("model", None)  # the writer's copy; free it before loading the user's view of the files
        model = stages.run("load-emitted", _load_emitted, tmp, to)
        report = _report(src, graph, to, notes)
        report["verification"] = (stages.run("verify", _verify, src, graph, model, emitted, to, seed, atol, rtol)
                                  if verify else {"passed": None, "skipped": True})
        report["tpu"] = stages.run("tpu-lower", _tpu_proof, model, graph, strict_tpu, to)
        if export_tpu:
            from .tpu import export_artifact

            report["tpu"]["artifact"] = stages.run("tpu-export", export_artifact, model, graph,
                                                   tmp / "model.tpu.jaxexport")
        report["stages"] = stages.times
        (tmp / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    result = ConversionResult(model, report, _files(out, export_tpu, to), graph, out,
                              report["verification"].get("passed") is not False, stages.times)
    if not result.ok:
        raise _verification_failed(result)
    return result


def _report(src, graph, target, notes) -> dict:
    return {"source": str(src.label), "target": target, "portx_ir_nodes": len(graph.nodes),
            "weight_bytes": graph.weight_bytes(), "ops": inventory(graph),
            "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
            "outputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs],
            "layout": io_layouts(graph), "warnings": notes}


def _files(out, export_tpu, target="keras-jax") -> dict:
    files = {"code": out / "model.py", "weights": out / _emitter(target).WEIGHTS_FILE, "report": out / "report.json"}
    if export_tpu:
        files["tpu_artifact"] = out / "model.tpu.jaxexport"
        files["tpu_weights"] = out / "model.tpu.jaxexport.weights.npz"
    return files


def _verification_failed(result) -> VerificationFailed:
    ver = result.report["verification"]
    rows = [r for r in ver["outputs"] if not r["passed"]]
    where = ver.get("first_divergence") or {}
    exc = VerificationFailed(
        f"{result.out}: output {rows[0]['name'] if rows else '?'} differs from the source "
        f"({rows[0]['problem'] if rows else ver.get('problem')}); first diverging node: "
        f"{where.get('scope') or '?'} ({where.get('op') or '?'})",
        hint="see report.json; rerun with --atol/--rtol if the tolerance is too tight")
    exc.result = result
    return exc


def verify(source, out, *, samples=1, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, inputs=(), trust_pickle=False,
           trace=False, check=True) -> dict:
    """Re-check a converted folder ``out`` against ``source`` on seeded batches (seeds seed..seed+samples-1).

    Only out/model.py and its weights are run; report.json is not read. Returns the report dict
    (``passed``, per-output ``outputs``, per-seed ``samples``, ``first_divergence``, ``trace`` rows).
    Raises BadInput (2), or VerificationFailed (1) when ``check`` and the outputs differ.
    Example: ``verify("model.pt2", "out/", samples=3)["outputs"][0]["max_abs"]``.
    """
    from .recheck import verify_converted

    check_tolerances(atol, rtol)
    return verify_converted(source, out, samples=samples, seed=seed, atol=atol, rtol=rtol, inputs=inputs,
                            trust_pickle=trust_pickle, trace=trace, check=check)
