"""The reference for a free batch: the source run on row chunks of the example's batch (Note [rows independent]).

Example:
    >>> expected = chunked_outputs(src, graph, arrays, chunk=2)   # arrays at batch 8: four runs at batch 2
    >>> arrays, expected = batch_reference(src, graph, 0, [(8, 3)], None, graph.meta["free"]["dims"]["batch"])
"""
from __future__ import annotations

import numpy as np

from ..ir import SymDim
from .domain import RowsMix, expected_outputs, sized_batch

__all__ = ["batch_reference", "chunk_problem", "chunked_outputs"]


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


def chunk_problem(check, batch):
    """A failed batch check says what its reference was (Note [rows independent])."""
    problem = check["problem"] or "outputs differ"
    if check["passed"] is False and not problem.startswith("the source"):
        chunk = batch.get("example", batch["size"])
        check["problem"] = (f"the source run on chunks of {chunk} rows differs from the converted model ({problem}): "
                            "its rows are not independent, or the conversion is wrong there")


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
