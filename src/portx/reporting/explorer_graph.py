"""The portx IR as Model Explorer graph JSON, and its node-data overlays (per-node error, TPU status, layout).

Model Explorer (``ai-edge-model-explorer``) reads a graph collection ``{"label", "graphs": [graph]}`` whose
nodes carry an id, a label, a ``namespace`` (the layer path it folds nodes into), attributes, incoming
edges and output metadata; node data files map a graph id to ``{"name", "results": {node id: {"value"}}}``.
The dicts here use exactly those field names (``model_explorer.graph_builder`` / ``node_data_builder``), so
writing them needs no Model Explorer install. One IR node is one graph node (id: its index); a node's
``namespace`` is its source scope with ``/`` separators (``layer1.0.conv1`` -> ``layer1/0/conv1``), so a
ResNet folds into its stages and blocks. Graph inputs and parameters are no nodes: they appear in each
node's input metadata, so the page's "op node count" equals the IR's node count.

Example:
    >>> collection = graph_collection(result.graph, "tiny_cnn.pt2 (portx IR for keras-jax)")
    >>> collection["graphs"][0]["nodes"][1]["namespace"], tpu_overlay(result.graph, "keras-jax")[GRAPH_ID]["name"]
    ('stem/0', 'TPU status (keras-jax)')
"""
from __future__ import annotations

import math

from ..ops._util import channels_first_perm, channels_last_perm
from ..ops.shape import PERMUTE
from ..passes.layout import is_spatial
from ..passes.legalize import load_table

__all__ = ["GRAPH_ID", "namespace_of", "graph_collection", "error_overlay", "tpu_overlay", "layout_overlay",
           "layout_of"]

#: the id of the one graph in graph.json; node data files are keyed by it
GRAPH_ID = "portx IR"
#: attribute values longer than this are cut (a constant table's repr can be megabytes)
_ATTR_CHARS = 500
#: channel-first / channel-last layout names by rank
_LAYOUT_NAMES = {3: ("NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}
_STATUS_COLORS = {"native": "#c8e6c9", "rewrite": "#fff59d", "unsupported": "#ef9a9a"}
_LAYOUT_COLORS = {0: "#ffe0b2", 1: "#bbdefb"}


def namespace_of(scope: str) -> str:
    """``scope``'s layer path with ``/`` separators; a ``/`` inside a name becomes ``∕`` so it adds no level.

    Example: ``namespace_of("stage.0.conv") == "stage/0/conv"``.
    """
    return "/".join(part.replace("/", "\u2215") for part in (scope or "").split(".") if part)


def _text(value) -> str:
    text = str(value)
    return text if len(text) <= _ATTR_CHARS else f"{text[:_ATTR_CHARS]}... ({len(text)} characters)"


def _kv(key, value) -> dict:
    return {"key": str(key), "value": _text(value)}


def _tensor(graph, value) -> str:
    """``float32[batch,3,224,224]``: dtype and shape, free dims by name."""
    return f"{value.type.dtype}[{','.join(str(d) for d in graph.free_shape(value))}]"


def layout_of(graph, node, value) -> str:
    """The layout ``value`` (an output of ``node``) is stored in: ``NHWC``/``NCHW`` for a spatial op's output
    or a value the layout pass stores transposed (``meta["stored_orders"]``), ``perm (...)`` for another
    stored order (a permute's output: its perm), else ``source order``."""
    rank, names = value.type.rank, _LAYOUT_NAMES.get(value.type.rank)
    if names and is_spatial(node) and value is node.outputs[0]:
        return names[int(bool(node.attrs.get("channels_last", False)))]
    order = graph.meta.get("stored_orders", {}).get(value.name)
    if order is None and node.op is PERMUTE:  # the layout pass's boundary permutes (and the source's own)
        order = node.attrs["perm"]
    if order is None:
        return "source order"
    if names and tuple(order) == channels_last_perm(rank):
        return names[1]
    if names and tuple(order) == channels_first_perm(rank):
        return names[0]
    return f"perm {tuple(order)}"


def _inputs_metadata(graph, node, producers) -> list:
    rows = []
    for j, value in enumerate(node.inputs):
        if value is None:
            continue
        kind = ("graph input" if value in graph.inputs else "parameter" if graph.is_param(value)
                else "" if value in producers else "value")
        names = node.op.input_names
        tag = names[j].rstrip("?") if j < len(names) else f"input {j}"
        attrs = [_kv("__tensor_tag", tag), _kv("tensor_name", value.name), _kv("tensor_shape", _tensor(graph, value))]
        rows.append({"id": str(j), "attrs": attrs + ([_kv("from", kind)] if kind else [])})
    return rows


def _node(graph, node, producers, ids, outputs) -> dict:
    edges = []
    for j, value in enumerate(node.inputs):
        if value is not None and value in producers:
            source = producers[value]
            edges.append({"sourceNodeId": ids[source], "sourceNodeOutputId": str(source.outputs.index(value)),
                          "targetNodeInputId": str(j)})
    outs = []
    for k, value in enumerate(node.outputs):
        attrs = [_kv("tensor_name", value.name), _kv("tensor_shape", _tensor(graph, value)),
                 _kv("layout", layout_of(graph, node, value))]
        if value in outputs:
            attrs.append(_kv("model output", outputs[value]))
        outs.append({"id": str(k), "attrs": attrs})
    attrs = [_kv("scope", node.scope or "<top>")] + [_kv(k, v) for k, v in graph.free_attrs(node).items()]
    return {"id": ids[node], "label": node.op.name, "namespace": namespace_of(node.scope), "subgraphIds": [],
            "attrs": attrs, "incomingEdges": edges, "outputsMetadata": outs,
            "inputsMetadata": _inputs_metadata(graph, node, producers)}


def graph_collection(graph, label: str, info=None) -> dict:
    """The Model Explorer graph collection (graph.json) of ``graph``: one graph, one node per IR node.

    ``info`` (str -> str) is shown in the side panel when nothing is selected.
    Example: ``len(graph_collection(g, "m")["graphs"][0]["nodes"]) == len(g.nodes)``.
    """
    producers = graph.producers()
    ids = {node: str(i) for i, node in enumerate(graph.nodes)}
    outputs = {v: f"output {i}" for i, v in enumerate(graph.outputs)}
    panel = {"inputs": ", ".join(f"{v.name}: {_tensor(graph, v)}" for v in graph.inputs),
             "outputs": ", ".join(f"{v.name}: {_tensor(graph, v)}" for v in graph.outputs),
             "parameters": f"{len(graph.params)} arrays, {graph.weight_bytes() / 1e6:.2f} MB", **(info or {})}
    nodes = [_node(graph, node, producers, ids, outputs) for node in graph.nodes]
    return {"label": label, "graphs": [{"id": GRAPH_ID, "nodes": nodes,
                                        "groupNodeAttributes": {"": {k: _text(v) for k, v in panel.items()}}}]}


def _overlay(name, results, **extra) -> dict:
    """A Model Explorer ModelNodeData: ``{graph id: {"name", "results", ...}}``."""
    return {GRAPH_ID: {"name": name, "results": results, **extra}}


def _finite(x) -> float:
    """JSON has no NaN or Infinity (the page's JSON.parse refuses them): the largest float stands in."""
    x = float(x)
    return x if math.isfinite(x) else 1.7976931348623157e308


def error_overlay(graph, rows) -> dict:
    """Per-node max relative error against the IR reference (``rows``: value name -> a ``NodeRow`` of the typed
    report's ``node_errors``); green within tolerance, red beyond. Nodes without a row (their value is not a
    variable of the emitted model, e.g. folded into the next layer) have no value."""
    results = {}
    for i, node in enumerate(graph.nodes):
        row = rows.get(node.outputs[0].name) if node.outputs else None
        if row is None:
            continue
        error, passed = row.max_rel, row.passed  # Note [optional fields] (reporting/text.py): unknown shows red
        results[str(i)] = {"value": _finite(error if error is not None else (0.0 if passed else math.inf)),
                           "bgColor": "#c8e6c9" if passed else "#ef9a9a"}
    return _overlay("max relative error vs the IR reference", results)


def tpu_overlay(graph, target: str) -> dict:
    """Each node's status in ``target``'s op table (native, rewrite:<rule>, unsupported), coloured."""
    table = load_table(target).get("op", {})
    results = {}
    for i, node in enumerate(graph.nodes):
        status = table.get(node.op.name, {}).get("status", "unsupported")
        results[str(i)] = {"value": status, "bgColor": _STATUS_COLORS.get(status.split(":")[0], "#ef9a9a")}
    return _overlay(f"TPU status ({target})", results, showExpandedSummaryOnGroupNode=True)


def layout_overlay(graph) -> dict:
    """Each node's first output layout (``layout_of``): channel-first names orange, channel-last blue."""
    results = {}
    for i, node in enumerate(graph.nodes):
        layout = layout_of(graph, node, node.outputs[0]) if node.outputs else "source order"
        names = _LAYOUT_NAMES.get(node.outputs[0].type.rank, ()) if node.outputs else ()
        color = _LAYOUT_COLORS.get(names.index(layout)) if layout in names else None
        results[str(i)] = {"value": layout, **({"bgColor": color} if color else {})}
    return _overlay("layout", results, showExpandedSummaryOnGroupNode=True)
