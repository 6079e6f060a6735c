"""The report sections, typed: ``Verification`` (report["verification"]), ``NodeErrors`` (report["node_errors"]),
``Gradients`` (report["gradients"], and ``portx verify --grad``'s), ``TpuProof`` (report["tpu"]), ``Layout``
(report["layout"]), ``Sharding`` (report["sharding"]) and ``Profile``, with their rows (and report_rows.py's). A
leaf as report.py is (Note [the report is a leaf] in session/__init__.py): report.py types ``ConversionReport``'s
fields with these classes; what they share (``Section``) is report_base.py.

Note [typed sections]: verification's builders (verification/dynamic.py ``verify_example``, streaming.py,
trace.py ``node_errors``, grads.py, sharding.py) return these sections, typed where they are built: each grows
its dict key by key along its paths and ends in ``from_dict``, which refuses a key the class lacks (a TypeError:
a bug, caught by the tests' real reports, rather than a key silently left out of report.json); the targets' TPU
proofs are typed by ``Target.tpu_proof`` (targets/base.py), the profile by progress.py's ``Stages.profiled``. The
session stores them as they come. The JSON names
and shapes are the ones report.json always had (Note [report fields] in report.py): a field that a path leaves
out is in ``OMITTED`` (left out where None); ``KEPT_WITH`` names one that is written as null once another is set
(``NodeErrors.first_divergence``: null in a trace without a divergence, absent from a skipped trace). The field
order is the builders' key order where their paths agree; where two paths order keys differently, report.json's
keys follow the field order, the common path's (``Sharding``: a proof on abstract weights, past the weight budget,
writes ``passed`` before ``verdict``, and a model with nothing to split ``why`` before ``roles``, as the torch-xla
target's skipped proof does; until they were typed, those two wrote them the other way round). An output's row differs with the comparison that made it (Note [two output rows] in
report_rows.py).

Example:
    >>> grads = Gradients.from_dict({"passed": None, "skipped": "no floating output to differentiate"})
    >>> grads.passed is None and "inputs" not in json_ready(grads)
"""
from __future__ import annotations

from dataclasses import dataclass

from .report_base import Section, from_dict, json_ready, read_typed
from .report_rows import OutputError, OutputRow

__all__ = ["Section", "json_ready", "read_typed", "from_dict", "Divergence", "Verification", "NodeRow", "NodeErrors",
           "GradientRow", "Gradients", "TpuProof", "Profile", "ProfileRow", "LayoutRow", "InnerTranspose", "Layout",
           "Sharding", "TraceSampled", "TraceStopped"]


@dataclass
class Divergence(Section):
    """Where the emitted model first leaves the IR reference (verification/trace.py ``localize``; a streamed
    check's first failing block: its scope and first node): ``scope`` None when every intermediate matches."""

    OMITTED = ("value", "max_abs", "problem")
    scope: str | None = None
    op: str | None = None
    value: str | None = None
    max_abs: float | None = None
    problem: str | None = None


@dataclass
class Verification(Section):
    """report["verification"]: the source against the emitted model on the example's inputs
    (verification/dynamic.py ``verify_example``), streamed block by block past the weight budget (``mode``
    "streaming": verification/streaming.py), or ``skipped`` (True, or why) with ``passed`` None."""

    OMITTED = ("mode", "skipped", "outputs", "problem", "on", "batches", "notes", "seed", "inputs", "first_divergence")
    NESTED = {"first_divergence": Divergence, "outputs": [OutputRow]}
    mode: str | None = None
    passed: bool | None = None
    skipped: bool | str | None = None
    outputs: list[OutputRow | OutputError] | None = None  # one per output (Note [two output rows])
    problem: str | None = None
    on: str | None = None  # the batch the result is of ("example", "seeded", ...: verification/domain.py)
    batches: list[dict] | None = None  # {"on", "passed"} per batch compared
    notes: list[str] | None = None
    seed: int | None = None
    inputs: list[list] | None = None
    first_divergence: Divergence | None = None

    def failed_outputs(self) -> list:
        """The output rows that failed. Example: ``report.verification.failed_outputs()[0].name``."""
        return [row for row in self.outputs or [] if not row.passed]


@dataclass
class NodeRow(Section):
    """One node's row of report["node_errors"]: the emitted value's error against the IR reference."""

    node: str | None = None  # the node's scope
    op: str | None = None
    value: str | None = None
    max_rel: float | None = None
    passed: bool | None = None


@dataclass
class TraceSampled(Section):
    """A passing model's trace, sampled (verification/trace.py ``node_errors``): 1 in ``every`` of ``of``
    intermediates."""

    every: int | None = None
    of: int | None = None


@dataclass
class TraceStopped(Section):
    """A passing model's trace, stopped after ``rows`` of ``of`` nodes when it had taken ``seconds`` (``why``)."""

    rows: int | None = None
    of: int | None = None
    seconds: float | None = None
    why: str | None = None


@dataclass
class NodeErrors(Section):
    """report["node_errors"]: each node's error along the graph (verification/trace.py ``node_errors``; per
    segment past the weight budget: segment_trace.py, ``segments``), or ``skipped`` (why) and no rows.
    ``first_divergence``: the index of the first failing row; ``sampled``/``stopped``: a trace cut short."""

    OMITTED = ("skipped", "atol", "rtol", "segments", "first_divergence", "sampled", "stopped")
    KEPT_WITH = {"first_divergence": "atol"}
    NESTED = {"rows": [NodeRow], "sampled": TraceSampled, "stopped": TraceStopped}
    skipped: str | None = None
    atol: float | None = None
    rtol: float | None = None
    segments: list[str] | None = None
    first_divergence: int | None = None
    sampled: TraceSampled | None = None
    stopped: TraceStopped | None = None
    rows: list[NodeRow] | None = None


@dataclass
class GradientRow(Section):
    """One input's or trainable parameter's gradient, the converted model's against the source's (``converted``:
    the converted weights a source parameter became; a row whose sizes differ has no numbers)."""

    OMITTED = ("converted", "shape", "atol", "rtol")
    name: str | None = None
    converted: str | None = None
    shape: list[int] | None = None
    atol: float | None = None
    rtol: float | None = None
    passed: bool | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    problem: str | None = None


@dataclass
class Gradients(Section):
    """report["gradients"] (verification/grads.py): ``passed`` None with ``skipped`` (why) when nothing was
    compared; ``abstract``: the gradient program lowered on abstract weights past the weight budget."""

    OMITTED = ("atol", "rtol", "inputs", "parameters", "matched", "unmatched_source", "unmatched_converted",
               "abstract", "skipped")
    NESTED = {"inputs": [GradientRow], "parameters": [GradientRow]}
    passed: bool | None = None
    atol: float | None = None
    rtol: float | None = None
    inputs: list[GradientRow] | None = None
    parameters: list[GradientRow] | None = None
    matched: int | None = None
    unmatched_source: list[str] | None = None
    unmatched_converted: list[str] | None = None
    abstract: dict | None = None
    skipped: str | None = None

    def failed(self) -> list:
        """The input and parameter rows that differ. Example: ``grads.failed()[0].name``."""
        return [row for row in (self.inputs or []) + (self.parameters or []) if not row.passed]


@dataclass
class TpuProof(Section):
    """report["tpu"]: the TPU lowering proof (each target's ``prove_tpu``): ``verdict`` "ok", "problems",
    "failed" or "skipped" (``why``), the StableHLO's ``ops`` and ``custom_calls``; ``artifact``: --export-tpu's."""

    OMITTED = ("via", "platform", "matmul_precision", "symbolic", "abstract_weights", "note", "problems", "why",
               "ops", "custom_calls", "artifact")
    verdict: str | None = None
    via: str | None = None
    platform: str | None = None
    matmul_precision: str | None = None
    symbolic: list[str] | None = None
    abstract_weights: bool | None = None
    note: str | None = None
    problems: list[str] | None = None
    why: str | None = None
    ops: dict[str, int] | None = None
    custom_calls: dict[str, int] | None = None
    artifact: dict | None = None  # {"path", "weights", "bytes", "platforms"}


@dataclass
class ProfileRow(Section):
    """One stage of report["profile"] (``--profile``; progress.py's ``Stages``): its wall and CPU seconds and the
    process's RSS after it and at its peak, in MB (``rss_mb`` None where the platform cannot say)."""

    stage: str | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    peak_rss_mb: float | None = None
    rss_mb: float | None = None


@dataclass
class Profile(Section):
    """report["profile"] (``--profile``): a row per stage, and the run's peak and final RSS in MB."""

    NESTED = {"stages": [ProfileRow]}
    stages: list[ProfileRow] | None = None
    peak_rss_mb: float | None = None
    rss_mb: float | None = None


@dataclass
class LayoutRow(Section):
    """One input's or output's row of report["layout"] (passes/layout ``io_layouts``): its layout (NCHW, NHWC, ...;
    None without a channel axis), the source's, and whether the model transposes it inside; ``note``: why
    ``--io-layout`` left it as it is (passes/layout/one_channel.py ``unknown_layout_notes``)."""

    OMITTED = ("note",)
    name: str | None = None
    shape: list[int] | None = None
    layout: str | None = None
    source_layout: str | None = None
    transposed_inside: bool | None = None
    note: str | None = None


@dataclass
class InnerTranspose(Section):
    """A transpose left inside the model (passes/layout ``inner_transposes``): its value, scope, permutation, origin
    ("source" or "layout"), whether it is on the data path, the ops it feeds, the source permute it ``carries`` and
    the ``reason`` it stays."""

    value: str | None = None
    scope: str | None = None
    perm: list[int] | None = None
    origin: str | None = None
    data_path: bool | None = None
    feeds: list[str] | None = None
    carries: str | None = None
    reason: str | None = None


@dataclass
class Layout(Section):
    """report["layout"]: each input's and output's layout, and the transposes left inside."""

    OMITTED = ("inputs", "outputs", "inner_transposes")
    NESTED = {"inputs": [LayoutRow], "outputs": [LayoutRow], "inner_transposes": [InnerTranspose]}
    inputs: list[LayoutRow] | None = None
    outputs: list[LayoutRow] | None = None
    inner_transposes: list[InnerTranspose] | None = None


@dataclass
class Sharding(Section):
    """report["sharding"] (verification/sharding.py; ``Target.prove_sharded``): the model split over ``mesh`` and
    run against one device (``passed``, ``max_abs_diff``), or lowered on abstract weights (``abstract``), or
    ``verdict`` "skipped" (``why``) / "failed" (``problems``); the weights' specs and bytes per device, the
    program's collectives and TPU export, the sharding pass's ``roles`` (a count per role)."""

    OMITTED = ("mesh", "specs", "weight_bytes", "per_device_max", "per_device_min", "per_device_ratio",
               "collectives", "tpu_export", "max_abs_diff", "atol", "rtol", "abstract", "passed", "problems",
               "notes", "why", "roles")
    KEPT_WITH = {"passed": "abstract"}
    mesh: dict[str, int] | None = None
    specs: dict | None = None  # weight path -> its PartitionSpec as a list
    weight_bytes: int | None = None
    per_device_max: int | None = None
    per_device_min: int | None = None
    per_device_ratio: float | None = None
    collectives: dict[str, int] | None = None
    tpu_export: dict | None = None  # {"platform", "devices", "sharded_inputs"}
    max_abs_diff: float | None = None
    atol: float | None = None
    rtol: float | None = None
    abstract: bool | None = None
    passed: bool | None = None
    verdict: str | None = None
    problems: list[str] | None = None
    notes: list[str] | None = None
    why: str | None = None
    roles: dict[str, int] | None = None
