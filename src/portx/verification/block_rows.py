"""A row per repeated block for a model verified whole, each block cut from the loaded models (Note [block rows]).

Note [block rows]: streaming verification (streaming.py) gives a large model one row per block: the emitted block
run on the source's values at its inputs, so an error shows in the block that makes it. A model verified whole
gets the same rows for its repeated blocks (``graph.meta["blocks"]`` of a structure that occurs more than once:
a ViT's encoder layers, a ResNet's bottlenecks, a decoder's layers), without a second build: the source runs once
more (``Source.intermediates``) keeping only the values at those blocks' boundaries, and each emitted block is cut
out of the model already loaded (``Target.cutter``: a Keras sub-model between its KerasTensors, or a torch block
module or slice of ``forward``; Note [cut blocks] in targets/keras_jax/cuts.py), sharing its weights. A value
stored in another axis order (Note [stored orders] in passes/layout/sink.py) is compared in the IR's. Glue and
one-off blocks get no row (the end-to-end comparison and the trace cover them); a block that cannot be cut gets a
row that says why (``skipped``), and so does a failure of the rows themselves: they locate an error, the verdict
stays the end-to-end comparison's, and a failed row adds a warning. The source's boundary values are made as the
blocks need them and dropped after their last block (streaming.py's ``Boundaries``), so the stage holds one
block's worth: resnet50's peak stayed at 289-290 MB (its trace's), the blocks stage 273 MB
(``benchmarks/memory_stages.py --models resnet50 --stages --before``, 2026-12-06). Its cost, CPU seconds of
the stage (``--profile``, keras-jax, this shared 2-core machine): torchvision resnet50 2.4 s (16 rows, 8 XLA compiles
of ~0.14 s, one per block structure and size; the rest the blocks' and the source's runs at the traced batch of
2) of a 20-25 s conversion, vit_b_16 3.4 s (48 rows: its numbered MLP layers are the repeated blocks) of ~32 s;
the tests' tiny zoo models 0.14-0.6 s. Not done: running the rows at the example's batch (1) instead of the
traced one (2), which would halve the runs but not the compiles.

Example:
    >>> rows = block_rows(src, graph, model, emitted, target, seed=0)
    >>> [(row.block, row.worst()) for row in rows]
    [('encoder.layers.0', 2.4e-07), ('encoder.layers.1', 3.1e-07)]
"""
from __future__ import annotations

import numpy as np

from ..errors import first_line
from .compare import DEFAULT_ATOL, DEFAULT_RTOL, make_inputs
from ..session.report import first_failed
from .streaming import Boundaries, block_row, compare_output, repeated_segments

__all__ = ["block_rows", "block_problem"]


def block_rows(src, graph, model, emitted, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> list:
    """report.json's ``blocks`` for a model verified whole: one BlockRow per repeated block (Note [block rows])."""
    found = repeated_segments(graph)
    if not found:
        return []
    try:
        cut = target.cutter(model, graph, emitted)
        cuts = [cut(seg) for seg, _ in found]
    except Exception as exc:  # noqa: BLE001 - a report extra: say why the rows are missing
        return [block_row(seg, graph, [], "", kind, _why("cutting the blocks", exc)) for seg, kind in found]
    reads = [[] if isinstance(c, str) else [v.name for v in (*c[0], *seg.outputs)] for (seg, _), c in zip(found, cuts)]
    rows = []
    try:
        arrays = make_inputs(graph, seed)
        wanted = {v.name: v for (seg, _), c in zip(found, cuts) if not isinstance(c, str)
                  for v in (*c[0], *seg.outputs)}
        values = Boundaries(src, arrays, wanted, None, graph.meta.get("stored_orders"))
        values.values.update({v.name: np.asarray(a) for v, a in zip(graph.inputs, arrays)})
        for i, (seg, kind) in enumerate(found):
            values.until(reads[i])  # the source only as far as this block needs (Note [one read per block])
            rows.append(_row(seg, kind, cuts[i], values, graph, atol, rtol))
            cuts[i] = None  # a structure's compiled block is freed with the last block that runs it
            later = {name for names in reads[i + 1:] for name in names} | {v.name for v in graph.inputs}
            values.drop(set(reads[i]) - later)  # one block's boundary values held at a time
    except Exception as exc:  # noqa: BLE001 - the source's run on its own: a report extra, say why rows are missing
        rows += [block_row(seg, graph, [], "", kind, _why("the source's run", exc)) for seg, kind in found[len(rows):]]
    return rows


def _row(seg, kind, cut, values, graph, atol, rtol):
    if isinstance(cut, str):
        return block_row(seg, graph, [], "", kind, f"not cut from the emitted model: {cut}")
    needed, run = cut
    missing = [v.name for v in needed if values.get(v.name) is None]
    if missing:
        return block_row(seg, graph, [], "", kind, f"the source does not compute its input {missing[0]} one-to-one")
    try:
        got = run([np.asarray(values.get(v.name)).astype(v.type.dtype, copy=False) for v in needed])
    except Exception as exc:  # noqa: BLE001 - a block that runs whole but not cut out: a limit of the cut
        return block_row(seg, graph, [], "", kind, _why("running the cut block", exc))
    outs = [compare_output(v.name, values.get(v.name), g, None, atol, rtol) for v, g in zip(seg.outputs, got)]
    return block_row(seg, graph, outs, "", kind)


def _why(doing, exc) -> str:
    return f"{doing} failed ({type(exc).__name__}: {first_line(exc)})"


def block_problem(rows) -> str:
    """The warning for the first block whose row failed, or ''. Example: ``block_problem(rows)``."""
    bad = first_failed(rows)
    if bad is None:
        return ""
    return (f"block {bad.block} ({bad.first_node}) differs from the source on the source's own inputs: "
            f"{bad.failure()}")
