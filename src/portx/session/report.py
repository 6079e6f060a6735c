"""The typed reports: ``ConversionReport`` (report.json of ``portx convert``) and ``VerifyReport`` (what
``portx verify`` returns), with ``schema_version``; their JSON Schema is docs/report.schema.json, made from these
dataclasses by report_schema.py.

Note [report fields]: the JSON field names and shapes are the ones report.json always had, so users' scripts keep
working. The readers (report.html, the console, Model Explorer overlays) take the typed report and read its fields as
attributes; a report.json from disk (another portx version, a hand-edited one) becomes one with ``read``, which
gives every missing field None or its default (Note [optional fields] in reporting/text.py). The sections the
session builds are dataclasses here; those verification builds (``verification``, ``node_errors``, ``gradients``,
``tpu``, ``sharding``) and ``layout`` are dataclasses in report_sections.py, typed where they are built (Note [typed
sections]), and the comparison rows (an output's, a sample's, a trace row, a block's) are in report_rows.py. A field
that is None and named in ``OMITTED`` is left out of the JSON, as it was before the report was typed. Verification
may import these leaf modules (Note [the report is a leaf] in session/__init__.py); ``read_typed`` reads every class
by its ``NESTED``. What is still a JSON object: the TPU artifact, the sharding proof's maps (mesh, specs,
collectives).

Example:
    >>> report = ConversionReport(source="m.pt2", target="keras-jax", portx_ir_nodes=3, weight_bytes=48)
    >>> json.loads(report.to_json())["schema_version"]
    1
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

from .report_base import Section, from_dict, json_ready, read_typed
from .report_rows import (BlockRow, ElementCheck, OutputError, OutputRow, Sample, SampledOutput, SizeCheck, SourceCheck,
                          TraceRow, first_failed)
from .report_sections import (Divergence, GradientRow, Gradients, InnerTranspose, Layout, LayoutRow, NodeErrors,
                              NodeRow, Profile, ProfileRow, Sharding, TpuProof, TraceSampled, TraceStopped,
                              Verification)

__all__ = ["SCHEMA_VERSION", "OpRow", "DynamicDim", "Training", "Folded", "Dropped", "Elements", "BlockRow",
           "OutputError", "ConversionReport", "VerifyReport", "InspectReport", "first_failed", "json_ready",
           "read_typed", "Verification", "Divergence", "NodeErrors", "NodeRow", "Gradients", "GradientRow", "TpuProof",
           "Profile", "ProfileRow", "Layout", "LayoutRow", "InnerTranspose", "Sharding", "OutputRow", "ElementCheck",
           "SampledOutput", "Sample", "TraceRow", "SourceCheck", "SizeCheck", "TraceSampled", "TraceStopped"]

#: bumped when a field changes meaning or shape (adding an optional field does not)
SCHEMA_VERSION = 1


class _Typed(Section):
    """``to_json`` besides ``Section``'s ``read`` / ``to_dict`` (report_sections.py), for the whole reports."""

    def to_json(self) -> str:
        """report.json's text. Example: ``Path("out/report.json").write_text(report.to_json())``."""
        return json.dumps(self.to_dict(), indent=2, default=str) + "\n"


@dataclass
class OpRow(_Typed):
    """report["ops"][op]: how often the op occurs, its first scopes, and its status in the target's op table
    (``source``: the evidence's URL, in ``inspect``'s rows)."""

    OMITTED = ("status", "why", "source")
    count: int = 0
    scopes: list[str] = field(default_factory=list)
    status: str | None = None
    why: str | None = None
    source: str | None = None


@dataclass
class DynamicDim(_Typed):
    """report["dynamic"][i]: one candidate free dim, whether it stayed free, and its checks per size. ``step``: the
    free dim takes the example's size plus multiples of it only (1: any size; Note [divided dims] in
    session/dims/find.py); None for a dim that stayed pinned. ``flag``: the ``--dynamic`` axes (NAME:AXIS, the
    source's axes) that asked for it, which ``portx verify`` reads back (Note [what OUT records]); absent where
    none did."""

    OMITTED = ("torch_symbol", "found_by", "flag")
    NESTED = {"verified": [SizeCheck]}
    symbol: str
    free: bool
    sites: list[list]
    example_size: int | None
    min: int | None
    max: int | None
    verified: list[SizeCheck] = field(default_factory=list)
    torch_symbol: str | None = None
    found_by: str | None = None
    step: int | None = None
    flag: list[str] | None = None


@dataclass
class Folded(_Typed):
    """report["training"]["folded"][i]: an op folded away (a batch norm into the convolution before it)."""

    scope: str | None = None
    op: str | None = None


@dataclass
class Dropped(_Typed):
    """report["training"]["dropped"][i]: a training-only layer dropped (``kind``: dropout, ...)."""

    scope: str | None = None
    kind: str | None = None


@dataclass
class Elements(_Typed):
    """report["training"]["parameters"]["source" | "converted"]: trainable and non-trainable element counts."""

    trainable: int | None = None
    non_trainable: int | None = None


@dataclass
class Training(_Typed):
    """report["training"]: what was folded or dropped, and the trainable/non-trainable element counts of the source
    and of the converted model (``parameters``: "source" and "converted")."""

    NESTED = {"folded": [Folded], "dropped": [Dropped], "parameters": {Elements}}
    mode: str
    folded: list[Folded]
    dropped: list[Dropped]
    parameters: dict[str, Elements]
    trainable_match: bool
    problem: str


@dataclass
class ConversionReport(_Typed):
    """report.json of one conversion (session/conversion.py fills it stage by stage)."""

    OMITTED = ("training", "gradients", "sharding", "profile")
    NESTED = {"ops": {OpRow}, "dynamic": [DynamicDim], "training": Training, "blocks": [BlockRow],
              "verification": Verification, "node_errors": NodeErrors, "gradients": Gradients, "tpu": TpuProof,
              "profile": Profile, "layout": Layout, "sharding": Sharding}
    source: str
    target: str
    portx_ir_nodes: int
    weight_bytes: int
    ops: dict[str, OpRow] = field(default_factory=dict)
    inputs: list[list] = field(default_factory=list)
    outputs: list[list] = field(default_factory=list)
    layout: Layout = field(default_factory=Layout)
    warnings: list[str] = field(default_factory=list)
    training: Training | None = None
    verification: Verification = field(default_factory=Verification)
    dynamic: list[DynamicDim] = field(default_factory=list)
    node_errors: NodeErrors = field(default_factory=NodeErrors)
    blocks: list[BlockRow] = field(default_factory=list)  # Note [block rows] (verification/block_rows.py)
    gradients: Gradients | None = None
    tpu: TpuProof = field(default_factory=TpuProof)
    sharding: Sharding | None = None
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    profile: Profile | None = None
    schema_version: int = SCHEMA_VERSION


@dataclass
class VerifyReport(_Typed):
    """What ``portx verify`` (``api.verify``) returns: per-output and per-seed comparisons, and when traced or
    failing, each layer's error and the first diverging one (verification/recheck.py builds it). ``dynamic``: with
    ``--dynamic``, the free dims it names, checked at the sizes convert checks them at."""

    OMITTED = ("problem", "code_matches", "note", "trace", "trace_seed", "first_divergence", "gradients", "dynamic")
    NESTED = {"dynamic": [DynamicDim], "gradients": Gradients, "outputs": [SampledOutput], "samples": [Sample],
              "trace": [TraceRow], "first_divergence": TraceRow}
    source: str
    out: str
    target: str
    atol: float
    rtol: float
    io_layout: str
    inputs: list[list]
    passed: bool
    outputs: list[SampledOutput]
    samples: list[Sample]
    problem: str | None = None
    code_matches: bool | None = None
    note: str | None = None
    trace: list[TraceRow] | None = None
    trace_seed: int | None = None
    first_divergence: TraceRow | None = None
    gradients: Gradients | None = None
    dynamic: list[DynamicDim] | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, report: dict) -> "VerifyReport":
        """The typed form of recheck's report dict (a TypeError names a field the dataclass lacks: a bug).
        Example: ``VerifyReport.from_dict(verify_converted(...)).passed``."""
        return from_dict(cls, {k: v for k, v in report.items() if k != "schema_version"})


@dataclass
class InspectReport(_Typed):
    """What ``portx inspect`` (``api.inspect``) returns: the source's op inventory as portx IR (``ops``: op ->
    ``OpRow``, with its status, reason and evidence when a target was named), its size and its inputs and outputs
    (``[name, shape, dtype]``). ``to_dict()`` is ``portx inspect --json``'s object.
    Example: ``inspect("model.pt2").ops["conv"].count``."""

    NESTED = {"ops": {OpRow}}
    ops: dict[str, OpRow]
    nodes: int
    weight_bytes: int
    inputs: list[list]
    outputs: list[list]

    def __getitem__(self, key):
        """``inspect(...)["ops"]`` as before ``InspectReport``: the dict's item, with a DeprecationWarning."""
        warnings.warn(f'inspect(...)["{key}"] is deprecated: read the attribute, inspect(...).{key} '
                      "(or inspect(...).to_dict() for the dict)", DeprecationWarning, stacklevel=2)
        return self.to_dict()[key]
