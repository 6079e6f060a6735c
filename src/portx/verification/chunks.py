"""The reference for a free batch: the source run on row chunks of the example's batch (Note [rows independent]),
and which node mixes rows where that check fails (Note [which node mixes rows]).

Example:
    >>> expected = chunked_outputs(src, graph, arrays, chunk=2)   # arrays at batch 8: four runs at batch 2
    >>> arrays, expected = batch_reference(src, graph, 0, [(8, 3)], None, graph.meta["free"]["dims"]["batch"])
    >>> mixing_node(graph)        # graph: x - x.mean(0) with the batch free
    'node mean (mean) mixes rows: its output has no batch axis and changes with the first row alone'
"""
from __future__ import annotations

import numpy as np

from ..ir import SymDim
from .compare import make_inputs
from .domain import RowsMix, expected_outputs, sized_batch
from .trace import reference_steps

__all__ = ["batch_reference", "chunk_problem", "chunked_outputs", "mixing_node"]


def chunked_outputs(src, graph, arrays, chunk) -> list:
    """The source's outputs on ``arrays`` (the graph's batch sites at some size n), computed as the source on
    chunks of ``chunk`` rows (the last chunk's rows cycled to ``chunk``, its outputs cut), joined along each
    output's batch axis. RowsMix says why they cannot be joined."""
    sites = graph.meta["free"]["dims"]["batch"]["sites"]
    n = arrays[sites[0][0]].shape[sites[0][1]]
    if n == chunk:
        return expected_outputs(src, graph, arrays)
    pieces = []
    for start in range(0, n, chunk):
        rows = start + np.arange(chunk) % min(chunk, n - start)
        piece = list(arrays)
        for i, axis in sites:
            piece[i] = np.take(arrays[i], rows, axis=axis)
        pieces.append(expected_outputs(src, graph, piece))
    return [_joined(graph, value, [p[k] for p in pieces], n, chunk) for k, value in enumerate(graph.outputs)]


def batch_reference(src, graph, seed, shapes, allowed, batch=None) -> tuple:
    """``sized_batch``'s (arrays, expected) at ``shapes``; for the ``batch`` dim, the source on row chunks of the
    example's batch (Note [rows independent]), or why its rows are not independent."""
    if batch is None:
        return sized_batch(src, graph, seed, shapes, allowed)
    chunk = batch.get("example", batch["size"])
    try:
        return sized_batch(src, graph, seed, shapes, allowed,
                           run=lambda s, g, arrays: chunked_outputs(s, g, arrays, chunk))
    except RowsMix as exc:
        return None, f"the source's rows are not independent: {exc}"


def chunk_problem(check, batch, graph=None, seed=0):
    """A failed batch check says what its reference was (Note [rows independent]) and, given the ``graph``, which
    node mixes rows first (``mixing_node``)."""
    if check["passed"] is not False:
        return
    problem, chunk = check["problem"] or "outputs differ", batch.get("example", batch["size"])
    culprit = mixing_node(graph, seed) if graph is not None else ""
    if not problem.startswith("the source"):
        problem = (f"the source run on chunks of {chunk} rows differs from the converted model ({problem})"
                   + ("" if culprit else ": its rows are not independent, or the conversion is wrong there"))
    check["problem"] = f"{culprit}; {problem}" if culprit else problem


def _joined(graph, value, parts, n, chunk):
    """One output's ``parts`` (one per chunk) joined along its batch axis and cut to ``n`` rows' worth."""
    axes = [axis for axis, d in enumerate(graph.free_shape(value)) if isinstance(d, SymDim) and "batch" in d.symbols]
    if not axes:
        first = np.asarray(parts[0])
        if any(not _same(first, np.asarray(p)) for p in parts[1:]):
            raise RowsMix(f"output {value.name} does not follow the batch and differs between chunks of {chunk} rows")
        return first
    axis, dim = axes[0], graph.free_shape(value)[axes[0]]
    per_chunk = np.asarray(parts[0]).shape[axis]
    if dim.offset or per_chunk % chunk:
        raise RowsMix(f"output {value.name}: its axis {axis} ({dim}) is not a whole number of rows per batch row")
    return np.take(np.concatenate(parts, axis=axis), np.arange(per_chunk // chunk * n), axis=axis)


def _same(a, b) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(a, b))

# Note [rows independent]: a free batch promises that the model at batch b is the model on each row (or on each
# chunk of the example's rows) stacked: what a Keras user means by ``keras.Input(shape=...)``. Diffing two
# lowerings (Note [free dims] in ir/types.py) finds where the batch goes, not whether rows mix: a QR of one 5x5
# matrix, ``block_diag`` or ``pdist`` lower the same way at 5 and 6 rows, yet row 6 changes rows 1-5's results.
# So the size checks of the batch (verification/dynamic.py ``verify_sizes``) compare the converted model at
# batch n with the source run on chunks of the example's batch (the user's own shapes, which the source is sure
# to take), the last chunk padded by cycling its rows and its outputs cut: a model whose rows mix fails there and
# the batch is pinned at the example's size with a warning that says why. An output without a batch axis must be
# the same for every chunk (a constant, a parameter); an axis of ``batch + k`` rows (a class token concatenated
# along axis 0) is not a batch of rows either. The check costs source runs at the example's batch instead of one
# at n: for an example batch of 1 and n = 8, eight runs of one row.


def mixing_node(graph, seed=0) -> str:
    """'node NAME (OP) mixes rows: why' for the first node of ``graph`` (its batch free) that mixes rows, run by
    the IR's NumPy reference at the graph's own shapes; '' when none is found (or the reference cannot run)."""
    sites = graph.meta.get("free", {}).get("dims", {}).get("batch", {}).get("sites", [])
    arrays = make_inputs(graph, seed)
    if not sites or any(arrays[i].shape[axis] < 2 for i, axis in sites):
        return ""
    moved = list(arrays)
    for i, axis in sites:  # the first row made the second's: in the inputs' domain by construction
        moved[i] = np.take(arrays[i], [1, *range(1, arrays[i].shape[axis])], axis=axis)
    try:
        for (node, before), (_, after) in zip(reference_steps(graph, arrays), reference_steps(graph, moved)):
            for value in node.outputs:
                why = _leak(graph, value, before.get(value), after.get(value), arrays[sites[0][0]].shape[sites[0][1]])
                if why:
                    return f"{node.where()} mixes rows: {why}"
    except Exception:  # noqa: BLE001 - only a better message is at stake; the check's own problem stands
        return ""
    return ""


def _leak(graph, value, before, after, n) -> str:
    """Why ``value`` (the batch at ``n``) shows rows mixed (its rows other than the first changed), or ''."""
    if before is None or after is None or before.shape != after.shape:
        return ""
    axes = [(axis, d) for axis, d in enumerate(graph.free_shape(value))
            if isinstance(d, SymDim) and "batch" in d.symbols]
    if not axes:
        return "" if _same(before, after) else "its output has no batch axis and changes with the first row alone"
    if len(axes) > 1:
        return f"its output pairs rows with rows (axes {', '.join(str(a) for a, _ in axes)} follow the batch)"
    axis, dim = axes[0]
    width = before.shape[axis] // n  # rows merged with inner axes (``4 * batch``, ``batch*seq``): row r is width
    if dim.offset or before.shape[axis] % n or width == before.shape[axis]:  # entries, the batch outside the rest
        return ""  # a batch plus some rows (a class token): where each row lies is not known here
    rest = np.arange(width, before.shape[axis])
    if _same(np.take(before, rest, axis=axis), np.take(after, rest, axis=axis)):
        return ""
    return f"its rows other than the first change when only the first row of the inputs does (along axis {axis})"


# Note [which node mixes rows]: the batch check (Note [rows independent] in chunks.py) finds that the converted
# model at batch n differs from the source on row chunks, but not where. The IR's NumPy reference says where: run
# twice at the graph's own shapes, once with the first row of every batch input replaced by the second, a node
# whose inputs kept rows apart and whose output's other rows change (or whose output has no batch axis and
# changes, batch statistics; or pairs rows with rows, ``x @ x.T``) is the first that mixes rows: a reshape across
# rows, a mean over axis 0, a sort or cumsum along it, a matmul of rows with rows. Its node and op go into the
# warning that pins the batch. It runs only after a batch check failed, at the traced size (two reference runs).
# An axis of ``scale * batch`` entries is taken as the batch outside another axis (``(b, 8) -> (8 b)``, as
# reshapes of rows merge them); an axis of ``batch + k`` (a class token concatenated along axis 0) is not judged,
# so a node found after one is the first that shows the mixing, not always the one that made it. A product axis
# (``batch*seq``: a mask flattened to index it, as transformers' masks are) is read the same way, a row being
# ``seq`` entries: its scale alone (1) made BART's flattened mask look like rows mixing.
