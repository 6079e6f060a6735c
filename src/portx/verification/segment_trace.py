"""The per-node trace of a model above the weight budget, one segment at a time (Note [trace per segment]).

Note [trace per segment]: the trace (trace.py) runs the whole emitted model once, reading every intermediate, and
the IR's NumPy reference beside it: above the weight budget that holds the model's weights (twice, the reference's
float64 copies included), so it was skipped there. Cut at the segments of streaming verification (Note [streaming
verification] in streaming.py), it needs one segment's weights at a time: each segment's reference runs on the
reference's own values at its inputs, and a traced segment's emitted model (``Target.build``, as verification
builds it) is run once more reading its intermediates. The reference costs about what the segment's run does (the
1B Llama preset's first block: 0.9 s of CPU for the reference, 0.7 s to build the block and read its locals), so
not every block is traced: the segments up to the first of the largest (the embeddings, then the first block: the
blocks after it repeat its code), and, where verification failed, the first segment that failed, the reference
running through the blocks before it. ``node_errors`` then has the rows of those segments in graph order and
``segments`` (which were traced); each segment's mapped weight pages are released once it ran (Note [mapped keras
weights]), and each traced segment's model is collected once read, not left to the cyclic collector (Note [dropped
segment models] in streaming.py: the glue's model holds the embedding table). A bfloat16 block's rows compare its bfloat16 intermediates with the float64 reference rounded to
bfloat16, so a row can miss the layer tolerance by one rounding step where the block's outputs pass (Note
[bfloat16 per block]): the rows locate an error, the verdict stays verification's.

Example:
    >>> node_errors = segment_node_errors(target, graph, make_inputs(graph, seed=0), report.blocks)
    >>> node_errors.segments
    ['token_embedding', 'transformer_layer_0']
"""
from __future__ import annotations

from ..session.report_sections import NodeErrors
from ..weights import release_pages
from .compare import DEFAULT_ATOL, DEFAULT_RTOL, run_reference
from .streaming import drop_models, segments, subgraph
from .trace import LAYER_SLACK, node_rows, observe_values, trace_layers

__all__ = ["segment_node_errors"]


def segment_node_errors(target, graph, arrays, rows, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> NodeErrors:
    """report.json's ``node_errors`` above the weight budget (Note [trace per segment]): the traced segments'
    rows against the IR's NumPy reference, their tolerances and the index of the first row that diverges. ``rows``:
    streaming verification's BlockRows (session/report.py), one per segment."""
    segs = segments(graph)
    traced = _chosen(segs, rows)
    if not traced:
        return NodeErrors(skipped="no segment to trace", rows=[])
    known = {v.name: a for v, a in zip(graph.inputs, arrays)}
    rows, names = [], []
    try:
        for i, seg in enumerate(segs[:max(traced) + 1]):
            sub = subgraph(graph, seg)
            feed = [known[v.name] for v in seg.inputs]
            reference = run_reference(sub, feed)
            if i in traced:
                rows += _segment_rows(target, sub, feed, reference, atol, rtol)
                names.append(seg.key or "(glue)")
            known.update({v.name: reference[v] for v in seg.outputs})
            for name in seg.params:
                release_pages(graph.params[name])
    except Exception as exc:  # noqa: BLE001 - a report extra: say why it is missing
        return NodeErrors(skipped=f"the per-segment trace failed ({type(exc).__name__}: {str(exc)[:200]})", rows=[])
    return NodeErrors(atol=atol * LAYER_SLACK, rtol=rtol * LAYER_SLACK, segments=names,
                      first_divergence=next((i for i, r in enumerate(rows) if not r.passed), None),
                      rows=node_rows(rows))


def _chosen(segs, rows) -> set:
    """Indexes of the segments traced: those up to the first of the largest (a decoder's first block), and the
    first that failed."""
    first = max(range(len(segs)), key=lambda i: (len(segs[i].nodes), -i), default=-1)
    chosen = set(range(first + 1))
    failed = next((i for i, row in enumerate(rows or []) if row.passed is False), None)
    if failed is not None and failed < len(segs):
        chosen.add(failed)
    return chosen


def _segment_rows(target, sub, feed, reference, atol, rtol) -> list:
    """Every intermediate of ``sub``'s emitted model on ``feed`` against the reference (trace.py's rows)."""
    emitter = target.emitter(sub)
    emitter.emit_graph()
    names = emitter.var_of()
    built = {"model": target.build(sub)}
    try:
        observed = observe_values(target, built["model"], sub, names, feed)
    finally:
        drop_models(built)  # Note [dropped segment models] (streaming.py)
    return trace_layers(sub, observed, reference, {}, atol, rtol, names, stop=False)
