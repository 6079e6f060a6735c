"""Verification block by block, holding one block's weights at a time (Note [streaming verification]).

Note [streaming verification]: a model too large to hold twice (an 8B decoder is 16 GB in bfloat16) cannot be
verified by running the source and the emitted model whole. The IR graph is cut into *segments*: one per
repeated source block (the scopes ``model.layers.0``, ``model.layers.1``, ... : a path component that is a number
names a block of a ``ModuleList`` / ``nn.Sequential``), and the glue between them (embeddings, the final norm,
the head). The source runs once, node by node, recording only the values that cross a segment boundary, and
hands each weight to ``release`` after its last use (a memory-mapped weight's pages then leave the process).
Each segment is then emitted on its own (the same emit rules as the whole model), loaded, run on the *source's*
values at its inputs, and compared with the source's values at its outputs: an error is found in the block that
makes it, and is never the sum of the blocks before it. Only that segment's weights are materialised.

A Keras graph (``meta["layer_outputs"]``, Note [keras layer outputs] in frontends/keras/pairs.py) is cut at its
top-level layers instead (``layer_of``): a keras-hub decoder's blocks are ``transformer_layer_0``, ... , and the
Keras source gives each such layer's output.

Where the source does not compute a boundary value one-to-one (a pass rewrote it), the segment takes the value
the previous emitted segment produced instead, and its outputs are compared where the source has them.

Note [bfloat16 per block]: a bfloat16 block rounds every intermediate to 8 bits of mantissa, on both sides, in
different orders. Its outputs are first compared with the source's at the dtype's tolerance (Note
[low-precision tolerance] in compare.py). Where that fails, the segment runs again with its weights and inputs in
float32 (the "exact" run of the same block), and the bfloat16 output passes when its distance to the float32
run is within ``BF16_SLACK`` times the source's own distance to it (plus that tolerance): the converted block may
round differently from the source, but not worse. The row then carries both distances (``f32_max_abs``,
``f32_source``), so a report tells bfloat16 rounding from a wrong rule. The float32 run is skipped where the
first comparison passes: it would only confirm it, at twice the block's weight memory.

Example:
    >>> report = stream_verify(src, graph, target, make_inputs(graph, seed=0))
    >>> [(row.block, row.passed) for row in report["segments"]]
"""
from __future__ import annotations

import gc
import hashlib
from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ir.types import TensorType, Value
from ..passes.blocks import block_of, block_runs
from ..weights import release_pages
from .compare import DEFAULT_ATOL, DEFAULT_RTOL, compare_arrays, make_inputs
from ..session.report import BlockRow, OutputError, Verification, first_failed

__all__ = ["Segment", "segments", "repeated_segments", "subgraph", "block_of", "layer_of", "stream_verify",
           "verify_streaming", "compare_output", "block_row", "Boundaries", "source_boundaries", "BF16_SLACK",
           "drop_models"]

#: a bfloat16 block passes within this many times the source's own distance to the float32 run of the block
BF16_SLACK = 2.0


@dataclass(frozen=True)
class Segment:
    """Consecutive nodes of one block (``key``: its scope, e.g. ``model.layers.3``; "" for glue)."""

    key: str
    nodes: tuple
    inputs: tuple  # non-parameter values read here and made before (or graph inputs), first-use order
    outputs: tuple  # values made here and read after it (or graph outputs)
    params: tuple  # names of the parameters its nodes read


def layer_of(scope: str) -> str:
    """The top-level layer a Keras scope belongs to. Example: ``layer_of("transformer_layer_3.self_attention")``
    -> ``"transformer_layer_3"``."""
    return scope.split(".")[0]


def segments(graph) -> list:
    """``graph``'s nodes cut into Segments, one per block and one per stretch of glue between blocks (one per
    top-level layer of a Keras graph, whose source gives those layers' outputs: Note [keras layer outputs])."""
    key_of = layer_of if "layer_outputs" in graph.meta else block_of  # Note [repeated blocks] in passes/blocks.py
    runs = block_runs(graph, key_of)
    return [_segment(graph, key, nodes, after) for (key, nodes), after in zip(runs, _reads_after(graph, runs))]


def repeated_segments(graph) -> list:
    """(Segment, kind) for each block of ``graph.meta["blocks"]`` whose structure occurs more than once (Note
    [repeated blocks] in passes/blocks.py): the blocks a whole-model conversion gives rows for (block_rows.py)."""
    blocks = graph.meta.get("blocks") or []
    kinds = [b["kind"] for b in blocks]
    found = []
    for block in blocks:
        if kinds.count(block["kind"]) < 2:
            continue
        nodes = graph.nodes[block["start"]:block["stop"]]
        inside = set(nodes)
        after = set(graph.outputs) | {v for n in graph.nodes if n not in inside for v in n.inputs if v is not None}
        found.append((_segment(graph, block["key"], nodes, after), block["kind"]))
    return found


def _segment(graph, key, nodes, after) -> Segment:
    """The Segment of ``nodes`` (consecutive); ``after``: the values read outside them (or returned)."""
    made = {v for n in nodes for v in n.outputs}
    inputs, params = [], []
    for node in nodes:
        for v in node.inputs:
            if v is None or v in made:
                continue
            if graph.is_param(v):
                if v.name not in params:
                    params.append(v.name)
            elif v not in inputs:
                inputs.append(v)
    outs = tuple(v for n in nodes for v in n.outputs if v in after)
    return Segment(key, tuple(nodes), tuple(inputs), outs, tuple(params))


def _reads_after(graph, runs) -> list:
    """For each run, the set of values read by later runs or returned by the graph."""
    needed, result = set(graph.outputs), []
    for _, nodes in reversed(runs):
        result.append(set(needed))
        needed |= {v for n in nodes for v in n.inputs if v is not None}
    return result[::-1]


def subgraph(graph, seg, float32=False) -> Graph:
    """``seg`` as a Graph of its own (its inputs and outputs as the graph's), at the example's sizes."""
    params = {name: graph.params[name] for name in seg.params}
    values = {name: graph.param_values[name] for name in seg.params}
    sub = Graph(seg.inputs, seg.outputs, seg.nodes, params, values, f"segment_{len(seg.nodes)}",
                {"trainable": [n for n in seg.params if graph.is_trainable(n)]})
    return _as_float32(sub) if float32 else sub


def _as_float32(graph) -> Graph:
    """``graph`` with bfloat16 (and float16) values and params widened to float32: the exact run of a block."""
    def wide(v):
        if v is None or v.type.dtype not in _NARROW:
            return v
        return memo.setdefault(v, Value(v.name, TensorType(v.type.shape, "float32")))

    memo = {}
    nodes = tuple(n.replace(inputs=tuple(wide(v) for v in n.inputs), outputs=tuple(wide(v) for v in n.outputs),
                            attrs=_wide_attrs(n.attrs)) for n in graph.nodes)
    params = {k: (np.asarray(a, np.float32) if a.dtype.name in _NARROW else a) for k, a in graph.params.items()}
    values = {k: wide(v) for k, v in graph.param_values.items()}
    return graph.replace(inputs=tuple(wide(v) for v in graph.inputs), outputs=tuple(wide(v) for v in graph.outputs),
                         nodes=nodes, params=params, param_values=values)


_NARROW = ("bfloat16", "float16")


def _wide_attrs(attrs) -> dict:
    """A cast's target dtype (and any dtype attribute) of bfloat16/float16 as float32."""
    return {k: ("float32" if isinstance(v, str) and v in _NARROW and "dtype" in k else v) for k, v in attrs.items()}


def source_boundaries(src, arrays, wanted, release=None, orders=None) -> dict:
    """{IR value name: the source's own value} for the ``wanted`` values ({name: Value}), from one node-by-node
    run of the source; ``release(key, tensor)`` follows each weight's last use (frontends that stream weights);
    ``orders``: {name: axis order} of values the IR stores in another order (Note [stored orders])."""
    found = src.intermediates(arrays, keep=set(wanted), release=release)
    pairs = ((name, _in_ir_order(a, (orders or {}).get(name))) for name, a in found.items() if name in wanted)
    return {name: a for name, a in pairs  # a value the IR holds in another layout is not a pair
            if tuple(np.shape(a)) == tuple(wanted[name].type.shape)}


def _in_ir_order(array, order):
    """The source's ``array`` in the axis ``order`` the IR stores its value in (None: as it is)."""
    return np.transpose(array, order) if order is not None and np.ndim(array) == len(order) else array


class Boundaries:
    """The source's values at the segments' boundaries, made as far as the segments need them (Note [one read per
    block]): from a source's ``stream_intermediates`` where it has one, else all at once (``source_boundaries``).
    ``orders``: as ``source_boundaries``'; a value no later segment reads is dropped (``drop``)."""

    def __init__(self, src, arrays, wanted, release, orders=None):
        self.wanted, self.values, self.coming, self.rest = wanted, {}, set(), iter(())
        self.orders = orders or {}
        streamed = src.stream_intermediates(arrays, keep=set(wanted), release=release)  # frontends/base.py
        if streamed is not None:
            self.coming, self.rest = streamed
        else:
            self.values = source_boundaries(src, arrays, wanted, release, self.orders)

    def until(self, names=None) -> None:
        """Run the source on until it has made each of ``names`` that it makes (None: to its end)."""
        need = set(self.coming if names is None else names) & self.coming - set(self.values)
        for name, array in self.rest if need or names is None else ():
            array = _in_ir_order(array, self.orders.get(name))
            if tuple(np.shape(array)) == tuple(self.wanted[name].type.shape):  # another layout is not a pair
                self.values.setdefault(name, array)
            need.discard(name)
            if not need and names is not None:
                return

    def get(self, name, default=None):
        return self.values.get(name, default)

    def drop(self, names) -> None:
        """Forget the values ``names`` (no later segment reads them)."""
        for name in names:
            self.values.pop(name, None)


# Note [one read per block]: the source's node-by-node run reads each block's weights from the mapped files, and so
# does the block's emitted model. Run one after the other over the whole model, the two read the 16 GB of an 8B
# checkpoint twice from the disk (the page cache holds less). The source now runs only as far as the next segment
# needs (its inputs and outputs, ``Boundaries.until``), then the segment runs: its weights were read a moment
# before, and their pages (released from the process after the source's last read) are still in the page cache.


def stream_verify(src, graph, target, arrays, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, release=None,
                  release_params=None) -> dict:
    """Verify ``graph`` as ``target`` emits it against ``src``, segment by segment (Note [streaming verification]).

    ``arrays``: the inputs (the IR's). ``release`` (the source's weight key and tensor) and ``release_params`` (IR
    param names) free a weight's memory once no later stage needs it. Returns {"mode": "streaming", "passed",
    "segments": [BlockRow], "outputs"}: a row per segment with its block, node count, weight bytes, and per-output
    errors (``f32_max_abs`` on bfloat16); the conversion moves the rows to report.json's ``blocks``.
    """
    segs = segments(graph)
    wanted = {v.name: v for s in segs for v in (*s.inputs, *s.outputs)}
    found = Boundaries(src, arrays, wanted, release, graph.meta.get("stored_orders"))  # Note [stored orders]
    known = {v.name: np.asarray(a) for v, a in zip(graph.inputs, arrays)}
    rows, built = [], {}  # structure -> (model, the graph it was emitted from)
    for seg in segs:
        found.until([v.name for v in (*seg.inputs, *seg.outputs)])  # Note [one read per block]
        feed = [found.get(v.name, known.get(v.name)) for v in seg.inputs]
        if any(a is None for a in feed):
            missing = [v.name for v, a in zip(seg.inputs, feed) if a is None]
            rows.append(block_row(seg, graph, [], f"no value for input(s) {', '.join(missing)}"))
            continue
        feed = [np.asarray(a).astype(v.type.dtype, copy=False) for v, a in zip(seg.inputs, feed)]
        got = _run_segment(target, subgraph(graph, seg), feed, built)
        known.update({v.name: g for v, g in zip(seg.outputs, got)})
        outs = [compare_output(v.name, found.get(v.name), g, None, atol, rtol) for v, g in zip(seg.outputs, got)]
        if not all(o.passed for o in outs) and _is_narrow(graph, seg):  # Note [bfloat16 per block]
            wide = {}
            exact = _run_segment(target, subgraph(graph, seg, True), [_wide(a) for a in feed], wide)
            drop_models(wide)  # the float32 copy of the block's weights: Note [dropped segment models]
            outs = [compare_output(v.name, found.get(v.name), g, e, atol, rtol)
                    for v, g, e in zip(seg.outputs, got, exact)]
        rows.append(block_row(seg, graph, outs, ""))
        if release_params is not None:
            release_params(seg.params)
    found.until()  # the rest of the source's run: every weight released
    final = [known.get(v.name) for v in graph.outputs]
    return {"mode": "streaming", "passed": all(r.passed for r in rows), "segments": rows,
            "outputs": [compare_output(v.name, found.get(v.name), g, None, atol, rtol).as_dict()
                        for v, g in zip(graph.outputs, final) if g is not None]}


def _attr_key(value):
    """``value`` (an attribute) as a hashable key; an array by its bytes (its repr elides the middle)."""
    if isinstance(value, dict):
        return tuple((k, _attr_key(v)) for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *(_attr_key(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest())
    return repr(value)


def verify_streaming(src, graph, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> tuple:
    """(``report["verification"]``, its ``blocks``) of a model above the weight budget (Note [weight budget] in
    budget.py): the blocks verified one at a time on seeded inputs, each weight's mapped pages released after its
    last use; a ``Verification`` and a ``BlockRow`` per segment."""
    report = stream_verify(src, graph, target, make_inputs(graph, seed=seed), atol, rtol,
                           release=lambda key, tensor: release_pages(tensor),
                           release_params=lambda names: [release_pages(graph.params[n]) for n in names])
    bad = first_failed(report["segments"])
    if bad is not None:
        report["problem"] = bad.failure()  # before first_divergence: report.json's order (report_sections.py)
        report["first_divergence"] = {"scope": bad.block, "op": bad.first_node}
    rows = report.pop("segments")
    return Verification.from_dict(report), rows  # Note [typed sections] (session/report_sections.py)


def _is_narrow(graph, seg) -> bool:
    return any(graph.params[p].dtype.name in _NARROW for p in seg.params) or \
        any(v.type.dtype in _NARROW for v in (*seg.inputs, *seg.outputs))


def _wide(array):
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype.name in _NARROW else array


def _run_segment(target, sub, feed, built) -> list:
    """``sub``'s model (``target.build``: the emitted model.py with its weights) run on ``feed``; a segment of
    the same structure as one run before reuses that model and its compile with ``sub``'s weights (``built``)."""
    key = structure(sub)
    model, like = built.get(key, (None, None))
    if model is None or not target.rebind(model, sub, like):
        drop_models(built)  # one block's model at a time
        model = target.build(sub)
        built[key] = (model, sub)
    return [np.asarray(o) for o in target.run(model, feed)]


def drop_models(built) -> None:
    """Forget the models in ``built`` and free them now, not at some later cycle collection (Note [dropped segment
    models])."""
    if built:
        built.clear()
        gc.collect()


# Note [dropped segment models]: an emitted Keras model is a web of reference cycles (layers, their nodes and
# KerasTensors point at each other), so forgetting one frees nothing until the cyclic GC collects the oldest
# generation, and CPython runs such a collection only once the objects that survived the younger ones reach a
# quarter of those the last full collection kept: when depends on everything the process allocated before (imports
# included). The 8B Llama's first glue segment holds the 1 GB embedding table; forgotten when the first block ran,
# it stayed alive through all 32 blocks (no full collection came) and the final glue's 1 GB head was built beside
# it: +1.0 GB of peak in the streaming verify stage, in or out with unrelated changes (moving portx imports to module
# level showed it). A model is forgotten a few times per stage (the glue, a change of structure, each float32 run):
# one collection each, of the objects made since the freeze (Note in memory.py).


def structure(graph) -> tuple:
    """What two segments share when one emitted model runs both: ops, attributes, types, weight shapes."""
    def typed(v):
        return None if v is None else (v.type.shape, v.type.dtype, graph.is_param(v))

    return (tuple(typed(v) for v in graph.inputs), tuple(typed(v) for v in graph.outputs),
            tuple((n.op.name, _attr_key(n.attrs), tuple(typed(v) for v in n.inputs),
                   tuple(typed(v) for v in n.outputs)) for n in graph.nodes))


def compare_output(name, expected, got, exact, atol, rtol) -> OutputError:
    """One output of a segment against the source's value (None: the source does not compute it one-to-one)."""
    if expected is None:
        return OutputError(name, False, True)
    expected = np.asarray(expected)
    row = OutputError.of(name, compare_arrays(expected, got, atol, rtol))
    if exact is not None and np.issubdtype(np.asarray(exact).dtype, np.floating):
        own = float(np.max(np.abs(expected.astype(np.float64) - exact))) if exact.size else 0.0
        ours = float(np.max(np.abs(np.asarray(got).astype(np.float64) - exact))) if exact.size else 0.0
        row.f32_source, row.f32_max_abs, row.f32_bound = own, ours, BF16_SLACK * own + row.atol
        if not row.passed and expected.shape == np.shape(got):  # bfloat16 rounding, not a wrong rule
            row.passed = ours <= row.f32_bound
            row.problem = "" if row.passed else (
                f"{row.problem}; {ours:.3g} from the float32 run of the block, the source {own:.3g}")
    return row


def block_row(seg, graph, outs, problem, kind=None, skipped=None) -> BlockRow:
    """``seg``'s row: its outputs' errors (``outs``), or why it failed (``problem``) or was not run (``skipped``)."""
    weight = sum(int(graph.params[p].nbytes) for p in seg.params)
    return BlockRow(seg.key or "(glue)", len(seg.nodes), weight, seg.nodes[0].where(), outs, problem,
                    None if skipped else not problem and all(o.passed for o in outs), kind, skipped)
