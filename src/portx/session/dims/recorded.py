"""What ``portx convert`` decided that changes the emitted model's signature, read back from OUT's report.json for
``portx verify`` and ``portx.testing``: the pinned batch (``--static-batch``), the image layout (``--io-layout``)
and the axes freed by ``--dynamic``.

Note [what OUT records]: ``verify`` runs only OUT's model.py and weights (Note [trust nothing in OUT] in
verification/recheck.py), but the source must be lowered at the shapes convert emitted, and a batch pinned by
``--static-batch 4`` cannot be found from a source whose batch is free: the model takes (4, ...), the source
(2, ...). Nor can an axis that only ``--dynamic x:1`` freed (a TorchScript file records no shapes; a Dim's
own sizes are checked only where asked): without the flag, verify lowered the source at the example's length and
never checked OUT at another. So the conversion's own decisions are read from report.json (``inputs``,
``dynamic``, ``layout``): a batch that no free dim carries and that is one size on every input is pinned there, the
io layout of its image inputs and outputs is tried first, and the ``--dynamic`` axes of the dims that stayed free
(each row's ``flag``) are freed and checked at convert's sizes. Nothing else of report.json is believed: a folder
whose report.json is missing or unreadable is searched as before, and a hand-edited one only makes the comparison
fail. ``--static-batch`` and ``--dynamic`` are taken as convert takes them; one that differs from OUT's is BadInput
(a ``--dynamic`` where OUT records none is checked as before: the source may declare that axis free).

Example:
    >>> shapes = with_recorded("out/", Shapes())
    >>> shapes.static_batch, shapes.io_layout, shapes.dynamic
    (4, 'channels-last', ('x:1',))
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import BadInput
from ..report import ConversionReport
from .plan import pinned_batch

__all__ = ["Recorded", "recorded", "with_recorded", "at_batch"]


@dataclass(frozen=True)
class Recorded:
    """What OUT's report.json says: ``static_batch`` (the pinned batch; None when free or not known), ``batch_free``
    (a free dim carries axis 0), ``io_layout`` ("source", "channels-last", "channels-first"; None: not known) and
    ``dynamic`` (the ``--dynamic`` specs, one axis each, of the dims that stayed free)."""

    static_batch: int | None = None
    batch_free: bool = False
    io_layout: str | None = None
    dynamic: tuple = ()


def recorded(out) -> Recorded | None:
    """The decisions OUT's report.json records (Note [what OUT records]); None without a readable report.json.
    Example: ``recorded("out/").static_batch`` -> ``4``."""
    path = Path(out)
    path = path / "report.json" if path.is_dir() else path.parent / "report.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("dynamic"), list) or not data.get("inputs"):
        return None
    report = ConversionReport.read(data)
    free = any(dim.free and any(isinstance(site, list) and site[1:] == [0] for site in dim.sites or [])
               for dim in report.dynamic)
    sizes = {row[1][0] for row in report.inputs if isinstance(row, list) and len(row) > 1 and row[1]}
    pinned = next(iter(sizes)) if not free and len(sizes) == 1 and isinstance(next(iter(sizes)), int) else None
    known = isinstance(data.get("layout"), dict)  # without it, the layouts are searched as before
    flagged = tuple(dict.fromkeys(str(spec) for dim in report.dynamic if dim.free for spec in dim.flag or []))
    return Recorded(static_batch=pinned, batch_free=free, io_layout=_io_layout(report.layout) if known else None,
                    dynamic=flagged)


def _io_layout(layout) -> str:
    """The ``--io-layout`` that made the typed ``Layout``'s rows: an image value whose layout is not its source's."""
    rows = [*(layout.inputs or []), *(layout.outputs or [])]
    moved = [row.layout for row in rows if row.layout and row.layout != row.source_layout]
    if not moved:
        return "source"
    return "channels-last" if str(moved[0]).endswith("C") else "channels-first"


def with_recorded(out, shapes):
    """``shapes`` (an ``options.Shapes``) with OUT's pinned batch, io layout and ``--dynamic`` axes (Note [what OUT
    records]); BadInput when ``shapes.static_batch`` or ``shapes.dynamic`` differs from OUT's.
    Example: ``with_recorded("out/", Shapes()).static_batch``."""
    rec = recorded(out) if out is not None else None
    if rec is None:
        return shapes
    given = shapes.static_batch
    if given is not None and (rec.batch_free or rec.static_batch not in (None, given)):
        kept = "the batch free" if rec.batch_free else f"--static-batch {rec.static_batch}"
        raise BadInput(f"--static-batch {given}: {out} was converted with {kept} (its report.json)",
                       hint="drop --static-batch: verify reads the batch OUT was converted at")
    asked = _axes(shapes.dynamic)
    if rec.dynamic and shapes.dynamic and asked is not None and asked != _axes(rec.dynamic):
        raise BadInput(f"--dynamic {', '.join(shapes.dynamic)}: {out} was converted with --dynamic "
                       f"{', '.join(rec.dynamic)} (its report.json)",
                       hint="drop --dynamic: verify reads the axes OUT was converted with")
    io_layout = rec.io_layout if shapes.io_layout == "source" and rec.io_layout else shapes.io_layout
    return replace(shapes, static_batch=given or rec.static_batch, io_layout=io_layout,
                   dynamic=shapes.dynamic or rec.dynamic)


def _axes(specs) -> set | None:
    """``("x:1,2", "y:1")`` -> {("x", 1), ("x", 2), ("y", 1)}; None for a malformed spec (plan.py ``parse_dynamic``
    names it once the source is read)."""
    axes = set()
    for spec in specs:
        name, _, text = str(spec).rpartition(":")
        numbers = text.split(",")
        if not name or not all(re.fullmatch(r"[0-9]+", n.strip()) for n in numbers):
            return None
        axes |= {(name, int(n)) for n in numbers}
    return axes


def at_batch(src, n):
    """The source at batch ``n`` (the batch OUT was converted at), as convert's ``--static-batch`` pins it.
    Example: ``at_batch(load("model.pt2"), 4).lower().inputs[0].type.shape[0]`` -> ``4``."""
    return pinned_batch(src, src.lower(), n, False)[0]
