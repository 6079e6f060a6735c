"""The typed rows of per-block verification: one ``BlockRow`` per block (streamed segment, or repeated block cut
from the loaded models), each with an ``OutputError`` per value the block hands on.

streaming.py and block_rows.py build them; report.json holds them as ``blocks`` (session/report.py types the
field with these classes, docs/report.schema.json lists their fields) and report.html and the console read them.

Example:
    >>> row = BlockRow("layer1.0", 7, 4096, "node conv (conv)", [OutputError("relu_2", True, True, 1e-7)])
    >>> row.worst()
    1e-07
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["OutputError", "BlockRow", "first_failed"]


@dataclass
class OutputError:
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
        """The JSON row (verification's ``outputs`` hold these): fields in ``OMITTED`` left out where None."""
        return {k: v for k, v in vars(self).items() if v is not None or k not in self.OMITTED}


@dataclass
class BlockRow:
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
