"""The comparison rows of the typed reports: an output's row (``OutputRow``, with its per-element check
``ElementCheck``; a streamed check's ``OutputError``), ``portx verify``'s per-seed ``Sample`` and per-output
``SampledOutput``, a trace row (``TraceRow``, with ``SourceCheck``), a block's row (``BlockRow``) and a free dim's
check at one size (``SizeCheck``). A leaf as
report.py is (Note [the report is a leaf] in session/__init__.py): verification builds these rows.

Note [two output rows]: an output compared whole (verification/compare.py ``compare``: its shape, tolerances and
per-element rule) and an output of a streamed check (verification/streaming.py: whether the source computes it
one-to-one, ``paired``, and a bfloat16 block's float32 distances) are different rows with their own key order in
report.json, so they are two classes; ``OutputRow.pick`` names ``OutputError`` for a row with ``paired`` (``from_dict``
and ``read`` follow it).
Both have ``name``, ``passed``, ``max_abs``, ``max_rel``, ``atol``, ``rtol`` and ``problem``, which the readers use.

Example:
    >>> row = OutputRow.from_dict({"name": "y", "shape": [2], "atol": 1e-5, "rtol": 1e-4, "passed": True,
    ...                            "max_abs": 0.0, "max_rel": 0.0, "problem": ""})
    >>> row.to_dict()["name"]
    'y'
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .report_base import Section

__all__ = ["ElementCheck", "OutputRow", "OutputError", "SampledOutput", "Sample", "SourceCheck", "TraceRow",
           "BlockRow", "first_failed", "SizeCheck"]


@dataclass
class ElementCheck(Section):
    """An output's per-element rule (Note [per-element check] in verification/compare.py): how many elements break
    it, the worst one's index, ratio to its allowance and the two values, and the rule's floor and rtol."""

    violations: int | None = None
    worst_index: list[int] | None = None
    worst_ratio: float | None = None
    worst_got: float | None = None
    worst_ref: float | None = None
    floor: float | None = None
    rtol: float | None = None


@dataclass
class OutputError(Section):
    """One value a block hands on, the emitted block's against the source's (``paired``: the source computes it
    one-to-one; an unpaired value is not compared). ``f32_*``: a bfloat16 block's distances to the float32 run of
    the same block, the converted block's and the source's, and the bound (Note [bfloat16 per block])."""

    OMITTED = ("shape", "f32_source", "f32_max_abs", "f32_bound")
    name: str
    paired: bool
    passed: bool
    max_abs: float | None = None
    max_rel: float | None = None
    atol: float | None = None
    rtol: float | None = None
    problem: str = ""
    shape: list[int] | None = None
    f32_source: float | None = None
    f32_max_abs: float | None = None
    f32_bound: float | None = None

    @classmethod
    def of(cls, name, row) -> "OutputError":
        """From compare.py's ``compare_arrays`` row. Example: ``OutputError.of("y", compare_arrays(a, b))``."""
        return cls(name, True, row["passed"], row["max_abs"], row["max_rel"], row["atol"], row["rtol"],
                   row["problem"], row.get("shape"))

    def as_dict(self) -> dict:
        """The JSON row: fields in ``OMITTED`` left out where None. Example: ``row.as_dict()["max_abs"]``."""
        return self.to_dict()


@dataclass
class OutputRow(Section):
    """One output compared whole (verification/compare.py ``compare``), report["verification"]["outputs"] and a
    ``Sample``'s: its shape, tolerances, per-element check (``elements``), verdict, largest errors and problem;
    ``random``: an output drawn at random, checked for shape, dtype and support only (no tolerances)."""

    OMITTED = ("atol", "rtol", "elements", "random")
    NESTED = {"elements": ElementCheck}
    name: str | None = None
    shape: list[int] | None = None
    atol: float | None = None
    rtol: float | None = None
    elements: ElementCheck | None = None
    passed: bool | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    problem: str | None = None
    random: str | None = None

    @classmethod
    def pick(cls, data: dict) -> type:
        """The class of an output row: a streamed check's (with ``paired``) is an ``OutputError`` (Note [two output
        rows]). Example: ``OutputRow.pick({"name": "y", "paired": True, "passed": True})`` -> ``OutputError``."""
        return OutputError if "paired" in data else cls


@dataclass
class SampledOutput(OutputRow):
    """``portx verify``'s row per output: its worst over the samples (the failing ones first) and the seed it came
    from (None for the caller's own inputs), ``passed`` only if every sample passed."""

    seed: int | None = None


@dataclass
class Sample(Section):
    """``portx verify``'s row per seeded batch (``seed`` None: the caller's inputs): its outputs' rows, or the
    ``problem`` that left none (the model failed on the inputs, or gave other outputs)."""

    OMITTED = ("problem",)
    NESTED = {"outputs": [OutputRow]}
    seed: int | None = None
    passed: bool | None = None
    outputs: list[OutputRow] = field(default_factory=list)
    problem: str | None = None


@dataclass
class SourceCheck(Section):
    """A trace row's emitted value against the source's own intermediate (where the source computes it)."""

    max_abs: float | None = None
    max_rel: float | None = None
    passed: bool | None = None
    problem: str | None = None


@dataclass
class TraceRow(Section):
    """One row of ``portx verify --trace`` (verification/trace.py ``trace_layers``): an IR value's emitted
    intermediate (``var`` in model.py) against the IR reference, and against the source's (``source``, None where
    the source has no such value); ``first_divergence`` is the first row that did not pass."""

    NESTED = {"source": SourceCheck}
    scope: str | None = None
    op: str | None = None
    value: str | None = None
    var: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    passed: bool | None = None
    problem: str | None = None
    source: SourceCheck | None = None


@dataclass
class BlockRow(Section):
    """One block (``block``: its scope, "(glue)" for the code between blocks) run on the source's values at its
    inputs and compared with the source's at its outputs: an error shows in the block that makes it. ``kind``: the
    repeated block's structure (blocks of one kind share it); ``skipped``: why it was not run (``passed`` None)."""

    OMITTED = ("kind", "skipped")
    NESTED = {"outputs": [OutputError]}
    block: str
    nodes: int
    weight_bytes: int
    first_node: str
    outputs: list[OutputError] = field(default_factory=list)
    problem: str = ""
    passed: bool | None = True
    kind: int | None = None
    skipped: str | None = None

    def worst(self) -> float | None:
        """The largest error over the block's paired outputs (None when none was compared)."""
        errors = [o.max_abs for o in self.outputs if o.paired and o.max_abs is not None]
        return max(errors) if errors else None

    def failure(self) -> str:
        """What failed: the row's problem, else its first failing output's."""
        return self.problem or next((f"{o.name}: {o.problem}" for o in self.outputs if not o.passed), "")


def first_failed(rows) -> BlockRow | None:
    """The first row that failed (``passed`` False; a skipped row did not). Example: ``first_failed(rows).block``."""
    return next((row for row in rows if row.passed is False), None)


@dataclass
class SizeCheck(Section):
    """A free dim checked at one size (verification/dynamic.py ``verify_sizes``; ``DynamicDim.verified``): the
    verdict, why it failed, the largest errors over the outputs; ``by`` "verify": the example's size, whose check is
    convert's verify stage (``example_checked`` copies its result in)."""

    OMITTED = ("by",)
    size: int | None = None
    passed: bool | None = None
    problem: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    by: str | None = None
