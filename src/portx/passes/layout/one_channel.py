"""One-channel images at the model's boundary, and the I/O whose layout portx cannot tell.

Note [one-channel images]: a 1-channel image's NCHW and NHWC hold the same bytes, so the layout pass turns
the permute between them into a reshape, and ``merge_reshapes_and_permutes`` then folds that reshape into
its neighbours (a nearest upsampling's split and merge): a segmentation mask ``(N, 1, H, W)`` reaches the
output with no boundary permute left for ``set_io_layout`` to drop. Its layout is known anyway from the
image op it is computed from (a conv, a pool, a resize: ``inner_layouts``), and changing it is free: one
reshape moves the size-1 channel axis (``to_one_channel_layout``). An output (or input) of rank 3 to 5 that
no image op reaches, or whose size-1 axis is not where either layout puts the channels, has no known layout:
``unknown_layout_notes`` says so on the console and in report.json instead of leaving it silently.

Example (``--io-layout channels-last`` on keras-jax)::

    %m: float32[2x1x16x24] = reshape(%r) {shape=(2, 1, 16, 24)}   ->   ... = reshape(%r) {shape=(2, 16, 24, 1)}
    return %m                                                          return %m_cl
"""
from __future__ import annotations

from ...ir import GraphBuilder, Node, Value
from ...ops._util import channels_first_perm, channels_last_perm
from ...ops.shape import RESHAPE

__all__ = ["inner_layouts", "one_channel_layout", "to_one_channel_layout", "unknown_layout_notes"]


def inner_layouts(graph) -> dict:
    """{value: channels_last of the nearest image op upstream (conv, pool, norm, resize)}; values no image op
    reaches (weights only, or plain tensors) are absent. Example: ``inner_layouts(g)[mask]`` is True on keras-jax."""
    found = {}
    for node in graph.nodes:
        if "channels_last" in node.op.attr_defaults:
            layout = bool(node.attrs.get("channels_last", False))
        else:
            layout = next((found[v] for v in node.inputs if v is not None and v in found), None)
        if layout is not None:
            found.update((v, layout) for v in node.outputs)
    return found


def one_channel_layout(shape, inner) -> bool | None:
    """True (channels-last) / False (channels-first) for a 1-channel image ``shape`` computed from an image op
    (``inner`` is not None), else None: ``one_channel_layout((2, 1, 16, 24), True) is False``."""
    if inner is None or not 3 <= len(shape) <= 5 or (shape[1] == 1) == (shape[-1] == 1):
        return None
    return shape[-1] == 1


def to_one_channel_layout(graph, channels_last: bool, out_perms: list):
    """Outputs that are 1-channel images in the other layout than ``channels_last``, computed by image ops that
    run in ``channels_last`` (the layout the model computes in), reshaped into it (Note [one-channel images]);
    ``out_perms`` (one per output, the permute applied to the source's) is updated in place."""
    inner = inner_layouts(graph)
    names = GraphBuilder(graph.name)
    names.taken |= {v.name for v in graph.inputs} | set(graph.params) | {v.name for n in graph.nodes for v in n.outputs}
    nodes, outputs = list(graph.nodes), list(graph.outputs)
    for k, v in enumerate(outputs):
        layout = one_channel_layout(v.type.shape, inner.get(v))
        if inner.get(v) is not channels_last or layout is None or layout == channels_last:
            continue  # computed in the other layout, already in this one, or not a 1-channel image
        q = (channels_last_perm if channels_last else channels_first_perm)(v.type.rank)
        moved = Value(names.fresh(f"{v.name}_{'cl' if channels_last else 'cf'}"),
                      v.type.with_shape(tuple(v.type.shape[p] for p in q)))
        nodes.append(Node(RESHAPE, (v,), (moved,), {"shape": moved.type.shape}, "io_layout"))
        outputs[k] = moved
        out_perms[k] = q if out_perms[k] is None else tuple(out_perms[k][p] for p in q)
    return graph.replace(nodes=tuple(nodes), outputs=tuple(outputs))


def unknown_layout_notes(layouts, mode: str) -> list:
    """Console/report lines for ``--io-layout mode`` (not "source"): each image-ranked input or output whose
    layout portx cannot tell, and each image kept in the other layout. ``layouts`` is ``io_layouts(graph)``;
    each such row also gets the line as its ``note`` (report.json).

    Example: ``["output y (1, 1, 64, 96): portx cannot tell its channel axis from the ops around it;
    --io-layout channels-last leaves it as the source has it"]``.
    """
    if mode == "source":
        return []
    want, notes = "channels-last" == mode, []
    for kind in ("inputs", "outputs"):
        for row in layouts.get(kind, []):
            where, note = f"{kind[:-1]} {row['name']} {tuple(row['shape'])}", None
            if row["layout"] is None and 3 <= len(row["shape"]) <= 5:
                note = (f"{where}: portx cannot tell its channel axis from the ops around it; --io-layout {mode} "
                        "leaves it as the source has it")
            elif row["layout"] is not None and len(row["layout"]) >= 3 and (row["layout"][-1] == "C") != want:
                note = (f"{where} stays {row['layout']}: the model computes its images in that layout "
                        f"(--io-layout {mode} drops transposes, it adds none)")
            if note:
                row["note"] = note
                notes.append(note)
    return notes
