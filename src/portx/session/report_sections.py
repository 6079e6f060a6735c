"""The report sections verification builds, typed: ``Verification`` (report["verification"]), ``NodeErrors``
(report["node_errors"]), ``Gradients`` (report["gradients"], and ``portx verify --grad``'s) and ``TpuProof``
(report["tpu"]), with their rows, and what every report dataclass shares (``Section``: ``read``, ``to_dict``,
``from_dict``; ``json_ready``, ``read_typed``). A leaf as report.py is (Note [the report is a leaf] in
session/__init__.py): report.py types ``ConversionReport``'s fields with these classes.

Note [typed sections]: verification's builders (verification/dynamic.py, streaming.py, trace.py, grads.py, the
targets' TPU proofs) make these sections as dicts, grown key by key along their paths; ``from_dict`` types one
where it is handed on (the session's stage, recheck.py), and refuses a key the class lacks (a TypeError: a bug,
caught by the tests' real reports, rather than a key silently left out of report.json). The JSON names and
shapes are the ones report.json always had (Note [report fields] in report.py): a field that a path leaves out
is in ``OMITTED`` (left out where None); ``KEPT_WITH`` names one that is written as null once another is set
(``NodeErrors.first_divergence``: null in a trace without a divergence, absent from a skipped trace). The field
order is the builders' key order where their paths agree; where two paths order keys differently, report.json's
keys follow the field order. Rows whose keys vary with the comparison that made them (an output compared with
its per-element rule, a random output's row) stay JSON objects.

Example:
    >>> grads = Gradients.from_dict({"passed": None, "skipped": "no floating output to differentiate"})
    >>> grads.passed is None and "inputs" not in json_ready(grads)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["Section", "json_ready", "read_typed", "from_dict", "Divergence", "Verification", "NodeRow", "NodeErrors",
           "GradientRow", "Gradients", "TpuProof", "Profile", "ProfileRow"]


def from_dict(cls, data: dict):
    """``data`` (a builder's dict, each key a field of ``cls``) as ``cls``, its ``NESTED`` fields typed too; a key
    ``cls`` lacks is a TypeError (Note [typed sections]). Example: ``from_dict(Gradients, compare_gradients(...))``."""
    values = dict(data)
    for name, kind in getattr(cls, "NESTED", {}).items():
        value = values.get(name)
        if isinstance(kind, list) and isinstance(value, list):
            values[name] = [from_dict(kind[0], row) if isinstance(row, dict) else row for row in value]
        elif isinstance(kind, type) and isinstance(value, dict):
            values[name] = from_dict(kind, value)
    return cls(**values)


class Section:
    """``from_dict`` / ``read`` / ``to_dict`` for the report dataclasses (these sections, and report.py's)."""

    #: fields left out of the JSON where None (``json_ready``)
    OMITTED: tuple = ()
    #: field -> the field whose value keeps it in the JSON as null (Note [typed sections])
    KEPT_WITH: dict = {}
    #: field -> how ``read`` types its JSON: a report dataclass for an object, ``[cls]`` a list, ``{cls}`` a dict
    NESTED: dict = {}

    @classmethod
    def from_dict(cls, data: dict):
        """This section from its builder's dict (``from_dict``). Example: ``TpuProof.from_dict(proof).verdict``."""
        return from_dict(cls, data)

    @classmethod
    def read(cls, data):
        """The typed form of a JSON report (report.json's dict) that may lack any field or hold more: a missing field
        is None or its default, an unknown one is dropped, a malformed section reads as missing.
        Example: ``ConversionReport.read(json.loads(Path("out/report.json").read_text())).verification``."""
        return read_typed(cls, data)

    def to_dict(self) -> dict:
        """The JSON form (plain dicts and lists). Example: ``report.to_dict()["verification"]["passed"]``."""
        return json_ready(self)


def json_ready(value):
    """``value`` with every report dataclass replaced by its dict, omitting ``OMITTED`` fields that are None (but
    for those ``KEPT_WITH`` another field that is not: Note [typed sections] in report_sections.py)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        omitted, kept = getattr(value, "OMITTED", ()), getattr(value, "KEPT_WITH", {})
        return {f.name: json_ready(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.name in omitted and getattr(value, f.name) is None
                        and (f.name not in kept or getattr(value, kept[f.name]) is None))}
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def read_typed(cls, data):
    """``data`` (JSON) as the dataclass ``cls`` (``Section.read``; also the block rows, whose
    ``NESTED`` says the same). Example: ``read_typed(BlockRow, row).worst()``."""
    data = data if isinstance(data, dict) else {}
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            values[f.name] = _read_nested(getattr(cls, "NESTED", {}).get(f.name), data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = None
    return cls(**values)


def _read_nested(kind, value):
    """``value`` (JSON) read as ``kind`` says (``Section.NESTED``); None when its shape does not fit."""
    if kind is None:
        return value
    if isinstance(kind, list):
        return [read_typed(kind[0], v) for v in value if isinstance(v, dict)] if isinstance(value, list) else None
    if isinstance(kind, set):
        [row] = kind
        return {k: read_typed(row, v) for k, v in value.items() if isinstance(v, dict)} \
            if isinstance(value, dict) else None
    return read_typed(kind, value) if isinstance(value, dict) else None


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
    NESTED = {"first_divergence": Divergence}
    mode: str | None = None
    passed: bool | None = None
    skipped: bool | str | None = None
    outputs: list[dict] | None = None  # compare.py's rows, one per output
    problem: str | None = None
    on: str | None = None  # the batch the result is of ("example", "seeded", ...: verification/domain.py)
    batches: list[dict] | None = None  # {"on", "passed"} per batch compared
    notes: list[str] | None = None
    seed: int | None = None
    inputs: list[list] | None = None
    first_divergence: Divergence | None = None

    def failed_outputs(self) -> list:
        """The output rows that failed. Example: ``report.verification.failed_outputs()[0]["name"]``."""
        return [row for row in self.outputs or [] if isinstance(row, dict) and not row.get("passed")]


@dataclass
class NodeRow(Section):
    """One node's row of report["node_errors"]: the emitted value's error against the IR reference."""

    node: str | None = None  # the node's scope
    op: str | None = None
    value: str | None = None
    max_rel: float | None = None
    passed: bool | None = None


@dataclass
class NodeErrors(Section):
    """report["node_errors"]: each node's error along the graph (verification/trace.py ``node_errors``; per
    segment past the weight budget: segment_trace.py, ``segments``), or ``skipped`` (why) and no rows.
    ``first_divergence``: the index of the first failing row; ``sampled``/``stopped``: a trace cut short."""

    OMITTED = ("skipped", "atol", "rtol", "segments", "first_divergence", "sampled", "stopped")
    KEPT_WITH = {"first_divergence": "atol"}
    NESTED = {"rows": [NodeRow]}
    skipped: str | None = None
    atol: float | None = None
    rtol: float | None = None
    segments: list[str] | None = None
    first_divergence: int | None = None
    sampled: dict | None = None  # {"every", "of"}
    stopped: dict | None = None  # {"rows", "of", "seconds", "why"}
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
