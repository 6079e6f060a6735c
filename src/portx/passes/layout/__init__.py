"""Layout passes: channels-last graphs for Keras/XLA, channels-first ones for PyTorch, and their I/O.

Note [channels_last attribute]: conv, conv_transpose, the pools, batch_norm, group_norm and resize
carry ``channels_last`` (ops/_util.py). ``to_channels_last`` flips each of them to
channels_last=True with a permute before and after (NCHW -> NHWC -> NCHW), then ``sink_permutes``
(layout_sink.py) stores the values between them in NHWC so the pairs cancel; only permutes at the
model's inputs and outputs remain, one per image input or output. ``to_channels_first`` is the
same machinery the other way (a Keras graph's NHWC -> NCHW -> op -> NHWC pairs cancel for
torch-xla). ``set_io_layout`` then keeps the source's I/O layout ("source"), or drops those
boundary permutes and changes the graph's input and output types ("channels-last",
"channels-first"); ``io_layouts`` says which layout each input and output ended up with, and
lists the transposes left inside (``inner_transposes``: the source's own, kept in place or carried into
the stored order where a reader needs them (Note [carried permutes] in layout_sink.py), and any the
layout pass adds itself).

Example (before / after ``to_channels_last``)::

    graph model(%x: float32[1x3x8x8]) {        graph model(%x: float32[1x3x8x8]) {
      %c = conv(%x, %w) {...}                     %x_nhwc = permute(%x) {perm=(0, 2, 3, 1)}
      %r = relu(%c)                         ->    %c: float32[1x8x8x4] = conv(%x_nhwc, %w) {channels_last=True, ...}
      return %r                                   %r_p = relu(%c)
    }                                             %r = permute(%r_p) {perm=(0, 3, 1, 2)}
                                                  return %r
                                                }
"""
from __future__ import annotations

import numpy as np

from ...ir import REGISTRY, GraphBuilder, Node, Value
from ...ops._util import channels_first_perm, channels_last_perm
from ...ops.shape import PERMUTE, RESHAPE
from ..blocks import refresh_blocks
from ..fold import merge_reshapes_and_permutes, remove_dead_nodes
from .refine import refine_permutes
from .rows import unmerge_rows
from .one_channel import inner_layouts, one_channel_layout, to_one_channel_layout
from .rules import RULES
from .siblings import alike_siblings
from .sink import Sinker, count_permutes, inverse

__all__ = ["IO_LAYOUTS", "to_channels_last", "to_channels_first", "sink_permutes", "set_io_layout", "io_layouts",
           "inner_transposes", "transpose_reason", "is_spatial", "source_arrays", "graph_arrays", "graph_axis",
           "source_ends"]

IO_LAYOUTS = ("source", "channels-last", "channels-first")
_NAMES = {3: ("NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}


def is_spatial(node) -> bool:
    """True for ops with an implicit channel axis (they declare ``channels_last``)."""
    return "channels_last" in node.op.attr_defaults


def _flippable(node) -> bool:
    """An (N, C, *spatial) data input whose rank matches the op's spatial attributes."""
    x, a = node.inputs[0], node.attrs
    spatial = a.get("kernel") or a.get("size") or a.get("stride") or ()
    return x.type.rank >= 2 and (not spatial or x.type.rank == len(spatial) + 2)


def _flip_spatial(graph, channels_last: bool):
    """Every spatial op to ``channels_last``, wrapped in a permute before and after (logic unchanged).

    The op's output keeps the source's name (Note [stored orders] in layout_sink.py records its
    order); the permute back gets a new one, except for a graph output, which keeps its name.
    """
    names = GraphBuilder(graph.name)  # fresh value names only
    names.taken |= {v.name for v in graph.inputs} | set(graph.params)
    names.taken |= {v.name for n in graph.nodes for v in n.outputs}
    orders = dict(graph.meta.get("stored_orders", {}))
    nodes, renamed, flips = [], {}, set(graph.meta.get("flip_permutes", ()))
    for node in graph.nodes:
        node = node.replace(inputs=tuple(renamed.get(v, v) for v in node.inputs))
        if not is_spatial(node) or node.attrs.get("channels_last", False) == channels_last or not _flippable(node):
            nodes.append(node)
            continue
        x, y = node.inputs[0], node.outputs[0]
        into = (channels_last_perm if channels_last else channels_first_perm)(x.type.rank)
        attrs = {**node.attrs, "channels_last": channels_last}
        if into == tuple(range(x.type.rank)):  # (N, C): the channel axis is last either way
            nodes.append(node.replace(attrs=attrs))
            continue
        suffix = "cl" if channels_last else "cf"
        inner_x = Value(names.fresh(f"{x.name}_{suffix}"), x.type.with_shape(tuple(x.type.shape[p] for p in into)))
        inner_type = y.type.with_shape(tuple(y.type.shape[p] for p in into))
        if y in graph.outputs:
            inner_y, back = Value(names.fresh(f"{y.name}_{suffix}"), inner_type), y
        else:
            inner_y, back = Value(y.name, inner_type), Value(names.fresh(f"{y.name}_{suffix}"), y.type)
            renamed[y] = back
            orders[y.name] = _compose(orders.get(y.name), into)
        nodes.append(Node(PERMUTE, (x,), (inner_x,), {"perm": into}, node.scope))
        nodes.append(node.replace(inputs=(inner_x,) + tuple(node.inputs[1:]), outputs=(inner_y,), attrs=attrs))
        nodes.append(Node(PERMUTE, (inner_y,), (back,), {"perm": inverse(into)}, node.scope))
        flips |= {inner_x.name, back.name}  # not the source's (Note [carried permutes] in layout_sink.py)
    meta = {**graph.meta, "stored_orders": orders, "flip_permutes": frozenset(flips)}
    return graph.replace(nodes=tuple(nodes), meta=meta)


_TRIAL_BUDGET = 40_000  # Note [kept permutes]: node visits spent looking for permutes better left in place


def _sunk(graph, keep):
    return merge_reshapes_and_permutes(remove_dead_nodes(Sinker(graph, RULES, keep).run()))


def sink_permutes(graph):
    """Push permutes through the ops that allow it and cancel them (Note [physical layouts]).

    Note [kept permutes]: sinking every permute is not always best: a permute that mixes axes
    (attention's head transposes) may only move the transpose to where it is needed several
    times. The source's own permutes (those not next to a spatial op) are tried one by one as
    kept in place, and kept where that leaves fewer permutes overall; on graphs too large for
    that (over ``_TRIAL_BUDGET`` node visits) all of them are tried kept at once instead.
    Returns whichever of the results and the input has fewer data-moving permutes.
    Example: ``sink_permutes(g)`` turns ``permute -> relu -> inverse permute`` into ``relu``.
    """
    # Note [refined permutes], Note [unmerged rows]; the reshapes refining leaves unread are dropped first
    graph = remove_dead_nodes(unmerge_rows(refine_permutes(graph)))
    before = merge_reshapes_and_permutes(graph)
    best, keep = _sunk(graph, frozenset()), frozenset()
    producers, users = graph.producers(), graph.users()
    candidates = [n for n in graph.nodes if n.op is PERMUTE and not _next_to_spatial(n, producers, users)]
    if len(candidates) * len(graph.nodes) > _TRIAL_BUDGET:
        candidates = [frozenset(candidates)]
    else:
        candidates = [frozenset([n]) for n in candidates]
    for trial_keep in candidates:
        if count_permutes(best) == 0:
            break
        trial = _sunk(graph, keep | trial_keep)
        if count_permutes(trial) < count_permutes(best):
            best, keep = trial, keep | trial_keep
    best, keep = alike_siblings(graph, best, keep, _sunk, count_permutes(before))  # Note [sibling blocks in one layout]
    if count_permutes(best) > count_permutes(before):
        return before
    kept = frozenset(n.outputs[0].name for n in keep) | frozenset(graph.meta.get("kept_permutes", ()))
    return best.replace(meta={**best.meta, "kept_permutes": kept})


def _next_to_spatial(node, producers, users) -> bool:
    made = producers.get(node.inputs[0])
    return (made is not None and is_spatial(made)) or any(is_spatial(u) for u in users.get(node.outputs[0], []))


def to_channels_last(graph):
    """Spatial ops channels-last and permutes sunk (the keras-jax layout); I/O as in the source."""
    return set_io_layout(sink_permutes(_flip_spatial(graph, True)), "source")


def to_channels_first(graph):
    """Spatial ops channels-first and permutes sunk (the torch-xla layout); I/O as in the source."""
    return set_io_layout(sink_permutes(_flip_spatial(graph, False)), "source")


def _compose(first, then):
    """One transpose doing ``first`` then ``then`` (``first`` None: just ``then``)."""
    return tuple(then) if first is None else tuple(first[t] for t in then)


def _acts_as(node, perm) -> bool:
    """True when ``node`` is the permute ``perm``, or a reshape that moves the same data (only size-1 axes move:
    a one-channel image's NHWC -> NCHW is a reshape once the layout pass canonicalized it)."""
    perm = tuple(perm)
    if node.op is PERMUTE:
        return tuple(node.attrs["perm"]) == perm
    if node.op is not RESHAPE:
        return False
    before, after = node.inputs[0].type.shape, node.outputs[0].type.shape
    if len(before) != len(perm) or tuple(before[p] for p in perm) != tuple(after):
        return False
    moved = [p for p in perm if before[p] != 1]
    return moved == sorted(moved)


def _perm_of(node, rank):
    """The permute ``node`` acts as (``_acts_as``: a permute, or a reshape moving only size-1 axes), or None."""
    if node.op is PERMUTE:
        return tuple(node.attrs["perm"])
    candidates = (channels_last_perm(rank), channels_first_perm(rank)) if rank >= 3 else ()
    return next((p for p in candidates if _acts_as(node, p)), None)


def _drop_boundary_permutes(graph, channels_last: bool):
    """Inputs read only through the permute into the inner layout take that layout; outputs made by
    the permute out of it are returned before it. Records each change in ``meta["io_perms"]``."""
    into = channels_last_perm if channels_last else channels_first_perm
    old = graph.meta.get("io_perms", {})
    names = old.get("output_names") or tuple(v.name for v in graph.outputs)  # the outputs' names in the source
    in_perms = list(old.get("inputs", (None,) * len(graph.inputs)))
    out_perms = list(old.get("outputs", (None,) * len(graph.outputs)))
    users, producers = graph.users(), graph.producers()
    alias, inputs = {}, []
    for i, x in enumerate(graph.inputs):
        q, readers = into(x.type.rank), users.get(x, [])
        if x.type.rank < 3 or not readers or x in graph.outputs or any(not _acts_as(u, q) for u in readers):
            inputs.append(x)
            continue
        inputs.append(Value(x.name, x.type.with_shape(tuple(x.type.shape[p] for p in q))))
        alias.update({u.outputs[0]: inputs[-1] for u in readers})
        in_perms[i] = _compose(in_perms[i], q)
    nodes = [n.replace(inputs=tuple(alias.get(v, v) for v in n.inputs)) for n in graph.nodes
             if n.outputs[0] not in alias]
    outputs = [alias.get(v, v) for v in graph.outputs]
    for k, v in enumerate(outputs):
        made = producers.get(v)
        q = into(v.type.rank)
        if v.type.rank < 3 or made is None or not _acts_as(made, inverse(q)):
            continue
        inner = alias.get(made.inputs[0], made.inputs[0])
        if inner in inputs or graph.is_param(inner):
            continue
        outputs[k], out_perms[k] = inner, _compose(out_perms[k], q)
    graph = remove_dead_nodes(graph.replace(inputs=tuple(inputs), outputs=tuple(outputs), nodes=tuple(nodes)))
    graph = merge_reshapes_and_permutes(to_one_channel_layout(graph, channels_last, out_perms))
    meta = {**graph.meta, "io_perms": {"inputs": tuple(in_perms), "outputs": tuple(out_perms), "output_names": names}}
    return graph.replace(meta=meta)


def set_io_layout(graph, mode: str = "source"):
    """Choose the emitted model's input/output layout and record it (``meta["io_layout"]``).

    "source" keeps the source's layout (an NCHW torch model's image inputs and outputs then carry
    one permute each); "channels-last" / "channels-first" drop those permutes and change the
    graph's input and output types. Example: ``set_io_layout(g, "channels-last")``.
    """
    if mode not in IO_LAYOUTS:
        raise ValueError(f"io layout {mode!r}: expected one of {IO_LAYOUTS}")
    if mode != "source":  # drops nodes: the blocks' positions move (Note [blocks after free dims])
        graph = refresh_blocks(_drop_boundary_permutes(graph, mode == "channels-last"))
    return graph.replace(meta={**graph.meta, "io_layout": io_layouts(graph)})


def _layout_of(value, boundary, spatial_nodes, recorded, inner=None):
    """(layout name in the graph, transposed inside) for an input or output, or (None, False).

    ``boundary`` holds the permutes from the value into the graph (inverted for an output); ``inner`` the
    layout of the image op the value is computed from (``inner_layouts``), for a 1-channel image.
    """
    names = _NAMES.get(value.type.rank)
    if names is None:
        return None, False
    rank = value.type.rank
    if boundary and all(p == channels_last_perm(rank) for p in boundary):
        return names[0], True
    if boundary and all(p == channels_first_perm(rank) for p in boundary):
        return names[1], True
    if spatial_nodes:
        return names[int(bool(spatial_nodes[0].attrs.get("channels_last", False)))], False
    if recorded is not None and recorded in (channels_last_perm(rank), channels_first_perm(rank)):
        return names[int(recorded == channels_last_perm(rank))], False
    one = one_channel_layout(value.type.shape, inner)  # Note [one-channel images]
    return (None, False) if one is None else (names[int(one)], False)


def _row(value, layout, transposed, recorded) -> dict:
    source = layout
    if layout is not None and recorded is not None:
        letters = [""] * len(layout)
        for i, p in enumerate(recorded):
            letters[p] = layout[i]
        source = "".join(letters)
    return {"name": value.name, "shape": list(value.type.shape), "layout": layout, "source_layout": source,
            "transposed_inside": transposed}


def io_layouts(graph) -> dict:
    """{"inputs": [...], "outputs": [...]}: per value its layout (NCHW, NHWC, ...; None when it has
    no channel axis), the source's layout, and whether the model transposes it inside.

    Example: ``io_layouts(g)["inputs"][0]["layout"] == "NCHW"``.
    """
    users, producers, inner = graph.users(), graph.producers(), inner_layouts(graph)
    perms = graph.meta.get("io_perms", {})
    rows = {"inputs": [], "outputs": []}
    for kind, values in (("inputs", graph.inputs), ("outputs", graph.outputs)):
        recorded = perms.get(kind, (None,) * len(values))
        for value, rec in zip(values, recorded):
            near = users.get(value, []) if kind == "inputs" else [producers[value]] if value in producers else []
            boundary = [p for p in (_perm_of(n, value.type.rank) for n in near) if p is not None]
            boundary = boundary if kind == "inputs" else [inverse(p) for p in boundary]
            if len(boundary) != len(near):
                boundary = []
            layout, transposed = _layout_of(value, boundary, [n for n in near if is_spatial(n)], rec, inner.get(value))
            rows[kind].append(_row(value, layout, transposed, rec))
    rows["inner_transposes"] = inner_transposes(graph)
    return rows


def inner_transposes(graph) -> list:
    """The permutes left inside the graph (not on an input or output): each with its scope, the ops it
    feeds, its origin: "source" (the model permutes there itself, e.g. splitting attention heads, or a
    source permute carried into the stored order: ``carries`` names it, Note [carried permutes]) or
    "layout" (one the layout pass added, the source has none there), ``data_path`` (False when it only
    transposes weights, e.g. a relative position bias) and the ``reason`` it is left (``transpose_reason``).

    Example: for ShuffleNet's channel shuffle ``inner_transposes(g)`` is
    ``[{"value": "s_t", "scope": "stage2.0", "perm": [0, 1, 2, 4, 3], "origin": "source", "carries": "t",
    "feeds": ["reshape"], "data_path": True, "reason": "the source's own transpose (%t), carried into ..."}]``.
    """
    ends, users = set(graph.inputs) | set(graph.outputs), graph.users()
    added, kept = graph.meta.get("layout_transposes", ()), graph.meta.get("kept_permutes", ())
    carried = graph.meta.get("carried_permutes", {})
    rows, data = [], set(graph.inputs)
    for n in graph.nodes:
        if any(v in data for v in n.inputs if v is not None):
            data.update(n.outputs)
        if n.op is not PERMUTE or n.inputs[0] in ends or n.outputs[0] in ends:
            continue
        name = n.outputs[0].name
        carries, scope = carried.get(name, (None, n.scope))
        origin = "layout" if name in added and carries is None else "source"
        feeds = sorted({u.op.name for u in users.get(n.outputs[0], [])})
        row = {"value": name, "scope": scope, "perm": list(n.attrs["perm"]), "origin": origin,
               "data_path": n.inputs[0] in data, "feeds": feeds, "carries": carries}
        if not row["data_path"]:
            row["reason"] = "computed from weights only (e.g. a position bias): not in the data path"
        else:
            row["reason"] = transpose_reason(origin, name in kept, feeds, carries)
        rows.append(row)
    return rows


def _why(name) -> str:
    """Why a transpose stays before an op named ``name`` (its ``OpDef.layout_why``, or what its traits imply)."""
    op = REGISTRY.get(name)
    if op is not None and op.layout_why:
        return op.layout_why
    if op is not None and op.has("broadcasting"):
        return f"{name}, whose other operand is stored in another order"
    return f"{name}, which runs in one fixed axis order here"


def transpose_reason(origin, kept, feeds, carries=None) -> str:
    """Why the layout pass left a transpose: ``transpose_reason("layout", False, ["reshape"])``;
    ``carries`` names the source permute it runs in stored order (Note [carried permutes])."""
    if kept:
        return ("the source's own transpose, kept in place: sinking it left more transposes elsewhere "
                "(Note [kept permutes])")
    whys = [_why(op) for op in feeds]
    whys = whys or ["it is a graph output"]
    if carries is not None:
        return (f"the source's own transpose (%{carries}), carried into the stored order: it runs where "
                f"its reader needs it, before " + "; ".join(dict.fromkeys(whys)))
    start = "the source's own transpose that cannot sink: " if origin == "source" else "added before "
    return start + "; ".join(dict.fromkeys(whys))


def source_arrays(graph, arrays) -> list:
    """The graph's input arrays in the source's layout (undoing ``set_io_layout``)."""
    perms = graph.meta.get("io_perms", {}).get("inputs", (None,) * len(arrays))
    return [a if p is None else np.ascontiguousarray(np.transpose(a, inverse(p))) for a, p in zip(arrays, perms)]


def graph_arrays(graph, arrays) -> list:
    """The source's output arrays in the graph's layout (as ``set_io_layout`` changed them)."""
    perms = graph.meta.get("io_perms", {}).get("outputs", (None,) * len(arrays))
    return [a if p is None else np.ascontiguousarray(np.transpose(a, p)) for a, p in zip(arrays, perms)]


# Note [free dims in the emitted layout]: a free dim is named by the source's axes (a torch.export Dim, ``--dynamic
# x:2`` on an NCHW input: its height), which is what the source is resized and its symbols read at; the graph after
# ``set_io_layout`` has that axis elsewhere (NHWC: axis 1). ``graph_axis`` maps one to the other, and ``source_ends``
# says what torch's (or JAX's) shapes of each input and output are in the graph's layout, so the one symbolic
# export's shapes check a channels-last graph as they check one in the source's layout (session/dims/find.py).
def graph_axis(graph, index, axis) -> int:
    """The axis of ``graph``'s input ``index`` that the source's ``axis`` became (``set_io_layout`` permutes image
    inputs): ``graph_axis(g, 0, 1) == 3`` for an NCHW input made NHWC. ``axis`` must be below the input's rank."""
    perms = graph.meta.get("io_perms", {}).get("inputs", ())
    perm = perms[index] if index < len(perms) else None
    return axis if perm is None else tuple(perm).index(axis)


def source_ends(graph) -> list:
    """(value, its name in the source, perm or None) for each input and output of ``graph``: the value's shape is
    the source's shape of that name permuted by ``perm`` (Note [free dims in the emitted layout]).

    Example: ``[(v, "x", (0, 2, 3, 1)), (out, "conv2d_2", (0, 2, 3, 1))]`` after ``set_io_layout(g, "channels-last")``.
    """
    perms = graph.meta.get("io_perms", {})
    ins = perms.get("inputs", (None,) * len(graph.inputs))
    outs = perms.get("outputs", (None,) * len(graph.outputs))
    names = perms.get("output_names") or tuple(v.name for v in graph.outputs)
    return [(v, v.name, p) for v, p in zip(graph.inputs, ins)] + list(zip(graph.outputs, names, outs))
