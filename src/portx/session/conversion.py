"""One conversion: a ``Conversion`` holds what the stages share, with one method per stage, which ``api.convert``
calls in order: load, lower, passes, free_dims, emit, verify, trace, gradients, tpu_proof, write.

Every stage runs under ``LeanStages`` (timed, shown, memory released between stages) inside ``staged_output``
(the files are written to a staging folder that replaces OUT at the end, or never does).

Example:
    >>> conversion = Conversion("model.pt2", find_target("keras-jax"), output=Output(out="out/"))
    >>> with conversion.staged(progress=None):
    ...     conversion.load()
    ...     ...
    >>> conversion.result().typed.verification.passed
"""
from __future__ import annotations

import contextlib
import json
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotTpuLegal
from ..reporting.explorer import write_conversion
from ..frontends import Differentiable, load
from ..options import Checks, Output, Shapes, Trust
from ..outputs import staged_output
from ..passes.legalize import PortxWarning
from ..passes.pipeline import inference_skip
from ..passes.sharding import parse_mesh
from ..reporting.html import write_report
from ..verification.block_rows import block_problem, block_rows
from ..verification.budget import over_budget
from ..verification.compare import make_inputs, nonfinite_params
from ..verification.dynamic import example_checked, verify_example
from ..verification.grads import compare_gradients, gradient_problem, lower_gradients, settled, start_gradients
from ..verification.memory import LeanStages
from ..verification.recheck import prepared
from ..verification.segment_trace import segment_node_errors
from ..verification.sharding import proof_devices, sharding_report
from ..verification.streaming import verify_streaming
from ..verification.trace import node_errors
from ..weights import shard_gb
from .dims import ONE_TRACED_AT, dynamic_report, emit_free, find_free, pinned_batch, plan_dims
from .report import ConversionReport, NodeErrors, TpuProof, Verification
from .sections import (GRAD_AUTO_BYTES, base_report, source_counts, training, verification_failed,
                     written_files)

__all__ = ["Conversion", "ConversionResult"]


@dataclass
class ConversionResult:
    """What ``convert`` returns: the live emitted model, the report (as dict: report.json's content; ``typed``:
    the ``ConversionReport`` itself) and the written files."""

    model: object
    report: dict
    files: dict
    graph: object = None
    out: Path | None = None
    ok: bool = True
    stage_times: dict = field(default_factory=dict)
    typed: ConversionReport | None = None


class Conversion:
    """One conversion of ``source`` for ``target`` (a ``targets.Target``), stage by stage (module docstring)."""

    def __init__(self, source, target, *, example_inputs=None, trust=Trust(), shapes=Shapes(), checks=Checks(),
                 output=Output()):
        self.source, self.target, self.example_inputs = source, target, example_inputs
        self.trust, self.shapes, self.checks, self.output = trust, shapes, checks, output
        self.mesh = checks.mesh if checks.mesh is None or isinstance(checks.mesh, dict) else \
            parse_mesh(checks.mesh, proof_devices())  # BadInput before any folder is made
        self.out = Path(output.out) if output.out is not None else Path(tempfile.mkdtemp(prefix="portx-")) / "out"
        self.sizes = {}  # what a full disk would need: the weights are the bulk of every output folder
        self.notes = []  # stale staging folders of killed conversions (removed beside OUT), then the warnings
        self.report, self.started = None, None  # a ConversionReport from the emit stage on
        self.stages = self.tmp = self.src = self.graph = self.model = None

    @contextlib.contextmanager
    def staged(self, progress=None):
        """The block the stages run in: timed and shown through ``progress``, writing into a staging folder."""
        need = lambda: self.sizes.get("weights", 0)  # noqa: E731
        with LeanStages(progress, self.output.profile) as self.stages, \
                staged_output(self.out, self.output.force, protect=(self.source,), need=need, notes=self.notes) as tmp:
            self.tmp = tmp
            yield self

    def load(self):
        """The source, opened with the trust flags (a live module's batch of 1 traced at 2: Note [batch of one])."""
        shapes = self.shapes
        self.src = self.stages.run("load", load, self.source, example_inputs=self.example_inputs,
                                   inputs=shapes.inputs, dtype=self.output.dtype, **self.trust.load_kwargs(),
                                   batch=None if shapes.static_batch is not None or _frees_axis_0(shapes.dynamic)
                                   else ONE_TRACED_AT,
                                   free=shapes.dynamic)  # Note [symbolic export] (frontends/torch/symbols.py)

    def lower(self):
        """The source's IR (at ``--static-batch`` when given), and what its size allows to check."""
        self.graph = self.stages.run("lower", self.src.lower, "model", self.checks.strict_tpu)
        if self.shapes.static_batch is not None:
            self.src, self.graph = pinned_batch(self.src, self.graph, self.shapes.static_batch, self.checks.strict_tpu)
        self.source_counts = source_counts(self.graph)
        self.stages.weigh(self.graph.weight_bytes())
        self.too_big = over_budget(self.graph)  # Note [weight budget]: no whole-model checks, abstract weights
        self.streaming = self.checks.verify and bool(self.too_big)  # Note [streaming verification]
        self.verifying = self.checks.verify and not self.too_big
        self.sizes["weights"] = 2 * self.graph.weight_bytes()  # the weights file, and jax.export's copy at most

    def passes(self):
        """The target's passes and ``--io-layout``; their warnings become report notes."""
        self.skip = inference_skip(self.output.fold_bn, self.output.inference)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PortxWarning)
            self.graph = self.stages.run("passes", prepared, self.graph, self.target, self.skip, self.shapes.io_layout)
        self.notes += ([str(w.message) for w in caught if issubclass(w.category, PortxWarning)]
                       + nonfinite_params(self.graph) + list(self.src.notes))

    def _prepare(self, src):
        return prepared(src.lower("model", self.checks.strict_tpu), self.target, self.skip, self.shapes.io_layout)

    def free_dims(self):
        """Which dims stay free (session/dims/)."""
        self.dims = plan_dims(self.src, self.graph, self.shapes.dynamic, self.shapes.static_batch)
        self.src, self.graph, self.record = self.stages.run("free-dims", find_free, self.src, self.graph,
                                                            self._prepare, self.dims, self.notes)

    def emit(self):
        """model.py and its weights, loaded back; report.json's first sections and ``training``."""
        checks, emit_options = self.checks, {}
        if self.output.max_shard_size is not None:
            emit_options["max_shard_size"] = shard_gb(self.output.max_shard_size)
        self.src, self.graph, self.emitted, self.model, self.sized = emit_free(
            self.stages, self.target, self.graph, self.record, self.tmp, self.src, checks.seed, checks.atol,
            checks.rtol, self.verifying, self.notes, emit_options, bool(self.too_big))
        report = self.report = base_report(self.src, self.graph, self.target, self.notes, self.shapes.io_layout)
        report.training = training(self.graph, self.source_counts, self.target.parameter_counts(self.model),
                                   self.output.fold_bn or self.output.inference)
        if report.training.problem:
            report.warnings.append(report.training.problem)

    def verify(self):
        """The source against the emitted model (streamed, block by block, past the weight budget), and the free
        dims' sizes; starts the gradient comparison first when it runs (Note [gradient compile])."""
        checks, stages, src, graph, model = self.checks, self.stages, self.src, self.graph, self.model
        grad = checks.grad
        self.grad_on = self.verifying and (grad or (grad is None and graph.weight_bytes() <= GRAD_AUTO_BYTES))
        self.started = stages.run("grad-start", start_gradients, src, graph, self._differentiable(),
                                  checks.seed) if self.grad_on else None
        blocks = []  # streamed: a row per segment
        if self.verifying:  # typed where built: Note [typed sections] (session/report_sections.py)
            verification = stages.run("verify", verify_example, src, graph, model, self.emitted, self.target,
                                      checks.seed, checks.atol, checks.rtol)
        elif self.streaming:
            verification, blocks = stages.run("verify", verify_streaming, src, graph, self.target, checks.seed,
                                              checks.atol, checks.rtol)
        else:
            verification = Verification(passed=None, skipped=self.too_big or True)
        self.report.blocks, self.report.verification = blocks, verification
        self.report.dynamic = dynamic_report(self.dims, graph, example_checked(self.sized, verification))
        settled(self.started)  # Note [gradient compile] (verification/grad_program.py): not under the trace's compile
        if self.verifying:  # Note [block rows]: each repeated block, cut from the loaded models
            self.report.blocks = stages.run("blocks", block_rows, src, graph, model, self.emitted, self.target,
                                            checks.seed, checks.atol, checks.rtol)
        self.report.warnings += [w for w in [block_problem(self.report.blocks)] if w]

    def trace(self):
        """report["node_errors"]: each node's error against the IR reference."""
        checks, report = self.checks, self.report
        if self.streaming:  # Note [trace per segment]
            report.node_errors = self.stages.run("trace", segment_node_errors, self.target, self.graph,
                                                 make_inputs(self.graph, checks.seed), report.blocks, checks.atol,
                                                 checks.rtol)
            return
        if not self.verifying:
            report.node_errors = NodeErrors(skipped=self.too_big or "verification was skipped (--no-verify)", rows=[])
            return
        report.node_errors = self.stages.run(
            "trace", node_errors, self.target, self.graph, self.model, self.emitted["var_of"],
            make_inputs(self.graph, checks.seed), checks.atol, checks.rtol, self.emitted["code"],
            report.verification.passed is True, sum(self.stages.times.values()))

    def gradients(self):
        """report["gradients"] when compared (verification/grads.py); a difference is a warning."""
        if not self.grad_on:
            if self.streaming and self.checks.grad:  # Note [abstract gradients] (verification/grad_program.py)
                self.report.gradients = self.stages.run("grad-lower", lower_gradients, self.src, self.graph,
                                                        self._differentiable(), self.checks.seed)  # not compared
            return
        self.report.gradients = self.stages.run("grad", compare_gradients, self.src, self.graph, self._differentiable(),
                                                self.checks.seed, started=self.started,
                                                origins=self.emitted.get("origins"))
        if self.report.gradients.passed is False:
            self.report.warnings.append(gradient_problem(self.report.gradients))

    def _differentiable(self) -> Differentiable:
        """The converted model, as the gradient check differentiates it (frontends/base.py)."""
        return Differentiable(self.model, self.target.framework)

    def tpu_proof(self):
        """report["tpu"]: the TPU lowering proof; the sharded proof on a mesh; the TPU artifact (--export-tpu)."""
        report, stages, target = self.report, self.stages, self.target
        report.tpu = stages.run("tpu-lower", _tpu_proof, target, self.model, self.graph, self.checks.strict_tpu)
        if self.mesh is not None:  # sharding_report adds its notes to the report's warnings
            report.sharding = stages.run("shard-proof", sharding_report, target, self.tmp, self.graph, self.mesh,
                                         self.checks.seed, report.warnings)
        if self.output.export_tpu:  # written in the staging folder, named where it will lie (OUT)
            artifact = stages.run("tpu-export", target.export_tpu, self.model, self.graph,
                                  self.tmp / target.tpu_artifact)
            report.tpu.artifact = {**artifact, "path": str(Path(self.out) / target.tpu_artifact),
                                   "weights": str(Path(self.out) / Path(artifact["weights"]).name)}

    def write(self):
        """OUT/explorer/ (--explore), report.json and report.html."""
        report, tmp = self.report, self.tmp
        if self.output.explore:  # OUT/explorer/: Model Explorer graph JSON and overlays (reporting/explorer.py)
            self.stages.run("explore", write_conversion, tmp, self.src, self.graph, self.target, report)
        report.stages = self.stages.times
        if self.output.profile:
            report.profile = self.stages.profiled()  # typed where built
        text = report.to_json()  # Note [report fields] (report.py): report.html is a function of report.json
        (tmp / "report.json").write_text(text, encoding="utf-8")
        write_report(tmp / "report.html", ConversionReport.read(json.loads(text)))

    def result(self) -> ConversionResult:
        """The finished conversion; VerificationFailed (``exc.result`` holds it) when its check failed."""
        result = ConversionResult(self.model, self.report.to_dict(), written_files(self.out, self.target,
                                                                                   self.output.export_tpu),
                                  self.graph, self.out, self.report.verification.passed is not False,
                                  self.stages.times, self.report)
        if not result.ok:
            raise verification_failed(result)
        return result


def _tpu_proof(target, model, graph, strict) -> TpuProof:
    proof = target.tpu_proof(model, graph)  # typed where built: Note [typed sections] (report_sections.py)
    if strict and proof.verdict == "skipped":
        raise NotTpuLegal(f"the TPU lowering proof was skipped ({proof.why or 'its tools are missing'}), so "
                          "--strict-tpu cannot vouch for this model", hint="install portx with its dependencies "
                          "(torchax for --to torch-xla) and convert again, or drop --strict-tpu")
    if strict and proof.verdict != "ok":
        raise NotTpuLegal(f"model does not lower cleanly for TPU: {'; '.join(proof.problems or [])}",
                          hint="drop --strict-tpu to convert anyway, or replace the listed constructs")
    return proof


def _frees_axis_0(dynamic) -> bool:
    """True when a ``--dynamic NAME:AXES`` spec names axis 0: the batch of 1 is then traced as given, since a
    declared axis 0 is not the rows ``load`` would repeat (Note [batch of one] in frontends/torch/live.py)."""
    return any(set(axis.strip()) == {"0"} for spec in dynamic or () for axis in str(spec).rpartition(":")[2].split(","))
