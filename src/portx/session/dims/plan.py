"""Which dims a conversion tries to keep free (Note [free dims] in ir/types.py), before any is checked.

``plan_dims`` lists the candidates: the batch (axis 0 of every input) unless ``--static-batch``, the dims the
source declares (torch.export Dims, Keras None dims, ONNX dim_params) and ``--dynamic NAME:AXIS`` ones;
``pinned_batch`` is the source at ``--static-batch n``. find.py decides which of them stay free.

Example:
    >>> dims = plan_dims(src, graph, dynamic=["x:1"])
"""
from __future__ import annotations

import re

from ...errors import BadInput
from ...ir import batch_inputs
from ...passes.layout import graph_axis

__all__ = ["plan_dims", "parse_dynamic", "check_static_batch", "pinned_batch"]


def parse_dynamic(specs, names) -> list:
    """``["x:1", "ids:0,1"]`` -> declared dims (one per input axis), each ``flag``: the sites its spec names (what
    report.json records: Note [what OUT records] in recorded.py); BadInput names a bad spec."""
    rows = []
    for spec in specs or ():
        name, _, axes = str(spec).rpartition(":")
        shown = str(spec) if str(spec).isprintable() else repr(str(spec))  # a newline would split the message's line
        if not name or not axes:
            raise BadInput(f"--dynamic {shown}: expected NAME:AXIS[,AXIS]", hint="e.g. --dynamic x:0,1")
        if name not in names:
            raise BadInput(f"--dynamic {shown}: the model has no input {name if name.isprintable() else repr(name)}",
                           hint=f"its inputs are {', '.join(names)}")
        for axis in axes.split(","):
            if not re.fullmatch(r"[0-9]+", axis.strip()):  # str.isdigit() takes '²', which int() refuses
                raise BadInput(f"--dynamic {shown}: axis {axis!r} is not a number", hint="e.g. --dynamic x:0,1")
            rows.append({"symbol": f"{name}_{int(axis)}", "sites": [[names.index(name), int(axis)]],
                         "min": 1, "max": None, "declared": True, "flag": [[names.index(name), int(axis)]]})
    return rows


def plan_dims(src, graph, dynamic=(), static_batch=None) -> list:
    """Candidate free dims: [{"symbol", "sites", "size", "min", "max", "declared"}]; the batch comes first."""
    names = [v.name for v in graph.inputs]
    flagged = parse_dynamic(dynamic, names)
    declared = _with_flags([dict(row) for row in src.dynamic_dims()], flagged)
    for row in declared:
        for index, axis in row["sites"]:
            rank = graph.inputs[index].type.rank
            if axis >= rank:
                raise BadInput(f"--dynamic {names[index]}:{axis}: input {names[index]} has {rank} axes",
                               hint=f"give an axis below {rank}")
            row["size"] = graph.inputs[index].type.shape[graph_axis(graph, index, axis)]  # sites: the source's axes
    batch = [[i, 0] for i in batch_inputs([v.type.shape for v in graph.inputs])]
    declared, asked = _batch_asked(_grouped(declared), flagged, batch)
    claimed = {tuple(site) for row in declared for site in row["sites"]}
    ranked = [i for i, v in enumerate(graph.inputs) if v.type.rank]
    batch = [site for site in batch if tuple(site) not in claimed]
    size = graph.inputs[batch[0][0]].type.shape[0] if batch else None
    rows = [] if static_batch or not batch else [
        {"symbol": "batch", "sites": batch, "size": size, "example": src.given_batch() or size,
         "min": 1, "max": None, "declared": False, **({"flag": asked} if asked else {})}]
    for row in declared:
        if sorted(map(tuple, row["sites"])) == [(i, 0) for i in ranked]:
            row["symbol"] = "batch"  # a Dim on axis 0 of every input is the batch, whatever torch called it
        if static_batch and any(axis == 0 for _, axis in row["sites"]):
            check_static_batch(row, static_batch, names)
            continue
        rows.append(row)
    return rows


def _with_flags(own, flagged) -> list:
    """The source's declared dims and the ``--dynamic`` ones; a ``--dynamic`` axis the source declares free already
    (a torch.export Dim, an ONNX dim_param) is that one dim, flagged (two rows of one axis were two report rows)."""
    by_site = {tuple(site): row for row in own for site in row["sites"]}
    for row in flagged:
        site = tuple(row["sites"][0])
        if site in by_site:
            by_site[site]["flag"] = [*by_site[site].get("flag", []), *row["flag"]]
        else:
            own.append(row)
    return own


def _batch_asked(declared, flagged, batch) -> tuple:
    """(``declared`` without a ``--dynamic`` row that names axis 0 of exactly the batch's inputs, the sites it named):
    that row asks for the batch, which is then freed as without the flag (a static program by its ops' shape rules:
    Note [static batch] in passes/static_batch.py), only flagged, so that a batch the model fixes is BadInput."""
    sites = sorted(map(tuple, batch))
    asked = [row for row in declared if any(row is f for f in flagged) and sorted(map(tuple, row["sites"])) == sites]
    kept = [row for row in declared if not any(row is a for a in asked)]
    return kept, [site for row in asked for site in row["flag"]]


def _grouped(rows) -> list:
    """``--dynamic`` axes of one example size on different inputs are one symbol (ids and their mask share a sequence
    length); two axes of one input stay two (an image's height and width, both 32 in the example)."""
    out, by_size = [], {}
    for row in rows:
        group = by_size.get(row["size"]) if row.get("flag") else None
        if group is not None and not {i for i, _ in row["sites"]} & {i for i, _ in group["sites"]}:
            group["sites"], group["flag"] = group["sites"] + row["sites"], group["flag"] + row["flag"]
            continue
        if row.get("flag"):
            by_size[row["size"]] = row
        out.append(row)
    return out


def check_static_batch(row, n, names):
    """BadInput when ``--static-batch n`` lies outside the range a declared dim on axis 0 allows."""
    low, high = row.get("min") or 1, row.get("max")
    if n < low or (high is not None and n > high):
        index = row["sites"][0][0]
        raise BadInput(f"--static-batch {n}: input {names[index]} declares axis 0 free in [{low}, {high}]",
                       hint=f"pick a batch size inside [{low}, {high}]")


def pinned_batch(src, graph, n, strict_tpu):
    """(source, graph) at batch ``n`` for ``--static-batch`` (BadInput where the model cannot run there)."""
    for row in src.dynamic_dims():
        if any(axis == 0 for _, axis in row["sites"]):
            check_static_batch(row, n, [v.name for v in graph.inputs])
    sites = {(i, 0): n for i, v in enumerate(graph.inputs) if v.type.rank}
    if all(graph.inputs[i].type.shape[0] == n for i, _ in sites):
        return src, graph
    try:
        src = src.resized(sites)
    except BadInput as exc:
        raise BadInput(f"--static-batch {n}: {exc}", hint="convert at the batch the model was saved with, or "
                       "re-export it with a free batch (torch.export.Dim)") from None
    return src, src.lower("model", strict_tpu)
