"""torch-xla emit rules for the shape and indexing ops (__init__.py, index.py): tensor methods and indexing.

Data movement reads as PyTorch users write it: ``x.reshape(...)``, ``x.permute(...)``,
``torch.cat``, ``x[:, 1:4]``. Gathers keep static shapes: ``index_select`` with a stored table
(int32, negative entries wrapped once here), advanced indexing with a computed one, and
``torch.gather`` (which needs int64 indices in PyTorch) for take-along-axis.

Example generated code:
    flatten = pool.reshape(1, 512)
    a, b = torch.split(qkv, [64, 64], dim=-1)
"""
from __future__ import annotations

import numpy as np

from ..shape import CONCAT, EXPAND, PERMUTE, RESHAPE, SPLIT, STACK
from ..shape.index import FLIP, GATHER, INDEX_SELECT, ROLL, SCATTER, SELECT, SLICE, TILE

__all__ = ["subscript"]


def subscript(items) -> str:
    """``[:, 1:3]`` from per-axis item texts; trailing whole-axis ``:`` items are dropped."""
    items = list(items)
    while len(items) > 1 and items[-1] == ":":
        items.pop()
    return "[" + ", ".join(items) + "]"


def _dims(values, t) -> str:
    """Dims as tensor methods take them: ``2, 8, 16`` (``()`` for a 0-d shape); free ones read an input's
    size: ``x.shape[0], 16``."""
    return ", ".join(t.lit(v if not isinstance(v, (int, np.integer)) else int(v)) for v in values) if values \
        else "()"


@RESHAPE.emits("torch-xla")
def _reshape_to_torch(node, t):
    t.assign(node, f"{t.ref(node.inputs[0])}.reshape({_dims(node.attrs['shape'], t)})")


@PERMUTE.emits("torch-xla")
def _permute_to_torch(node, t):
    t.assign(node, f"{t.ref(node.inputs[0])}.permute({_dims(node.attrs['perm'], t)})")


@EXPAND.emits("torch-xla")
def _expand_to_torch(node, t):
    t.assign(node, f"{t.ref(node.inputs[0])}.expand({_dims(node.attrs['shape'], t)})")


@CONCAT.emits("torch-xla")
def _concat_to_torch(node, t):
    items = ", ".join(t.ref(v) for v in node.inputs)
    t.assign(node, f"torch.cat([{items}], dim={node.attrs['axis']})")


@STACK.emits("torch-xla")
def _stack_to_torch(node, t):
    items = ", ".join(t.ref(v) for v in node.inputs)
    t.assign(node, f"torch.stack([{items}], dim={node.attrs['axis']})")


@SPLIT.emits("torch-xla")
def _split_to_torch(node, t):
    x, sizes = t.ref(node.inputs[0]), [int(s) for s in node.attrs["sizes"]]
    if len(sizes) == 1:  # one piece is the input; a one-item tuple would not unpack
        t.assign(node, x)
        return
    t.assign(node, f"torch.split({x}, {t.lit(sizes)}, dim={node.attrs['axis']})")


@SLICE.emits("torch-xla")
def _slice_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    full = t.graph.free_shape(x)[a["axis"]]
    item = f"{t.lit(a['start']) if a['start'] else ''}:{t.lit(a['end']) if a['end'] != full else ''}"
    item += f":{a['step']}" if a["step"] != 1 else ""
    t.assign(node, t.ref(x) + subscript([":"] * a["axis"] + [item]))


@SCATTER.emits("torch-xla")
def _scatter_to_torch(node, t):
    """``x.index_put((column, ...), updates, accumulate)`` with int64 coordinate columns."""
    x, indices, updates = (t.ref(v) for v in node.inputs)
    acc = ", accumulate=True" if node.attrs["accumulate"] else ""
    t.assign(node, f"{x}.index_put(tuple({indices}.long().unbind(1)), {updates}{acc})")


@SELECT.emits("torch-xla")
def _select_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    t.assign(node, t.ref(x) + subscript([":"] * a["axis"] + [str(int(a["index"]))]))


@INDEX_SELECT.emits("torch-xla")
def _index_select_to_torch(node, t):
    """numpy.take: a stored 1-d table is ``index_select``; any other index is advanced indexing."""
    x, index = node.inputs
    axis = node.attrs["axis"]
    if t.is_param(index) and index.type.rank == 1:
        table = np.asarray(t.param(index)).astype(np.int64) % max(x.type.shape[axis], 1)
        source = index.name in (t.graph.meta.get("source_buffers") or ()) and np.array_equal(table, t.param(index))
        rows = t.ref(index) if source else t.const(node, table.astype(np.int32), "index")  # the source's buffer
        t.assign(node, f"{t.ref(x)}.index_select({axis}, {rows})")
        return
    t.assign(node, t.ref(x) + subscript([":"] * axis + [t.ref(index)]))


@GATHER.emits("torch-xla")
def _gather_to_torch(node, t):
    x, index = node.inputs
    idx = t.ref(index) if index.type.dtype == "int64" else f"{t.ref(index)}.long()"  # torch.gather wants int64
    t.assign(node, f"torch.gather({t.ref(x)}, {node.attrs['axis']}, {idx})")


@TILE.emits("torch-xla")
def _tile_to_torch(node, t):
    t.assign(node, f"torch.tile({t.ref(node.inputs[0])}, {t.lit(tuple(node.attrs['reps']))})")


@FLIP.emits("torch-xla")
def _flip_to_torch(node, t):
    t.assign(node, f"torch.flip({t.ref(node.inputs[0])}, dims={t.lit(tuple(node.attrs['axes']))})")


@ROLL.emits("torch-xla")
def _roll_to_torch(node, t):
    shifts, axes = tuple(node.attrs["shifts"]), node.attrs["axes"]
    if axes is None:
        t.assign(node, f"torch.roll({t.ref(node.inputs[0])}, {t.lit(shifts[0])})")
        return
    t.assign(node, f"torch.roll({t.ref(node.inputs[0])}, {t.lit(shifts)}, dims={t.lit(tuple(axes))})")
