"""torch-xla emit rule for resize, plus the per-axis matrix helper adaptive pooling shares.

Note [XLA resize]: PyTorch/XLA lowers only ``upsample_nearest2d`` and ``upsample_bilinear2d``;
bicubic, 1-d, nearest-exact and 3-d upsampling run on the CPU. So the rule writes
``nn.Upsample`` only for 2-d nearest integer factors and 2-d bilinear whose torch coordinate
maps equal the IR's (the tables in resize.py are torch's own arithmetic, so this is checked,
not assumed), and everything else as index gathers (nearest) or ``rows @ x @ cols`` with
constant matrices (Note [resize as matrices]), exact to float32 rounding on any device.

Example generated code:
    self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
    up = self.up(x)
"""
from __future__ import annotations

import numpy as np

from ..resize import RESIZE, axis_matrix, nearest_indices, repeat_factor

__all__ = ["apply_axis_matrices_torch"]


def apply_axis_matrices_torch(node, t, x, matrices, hints=("rows", "cols")):
    """Write ``y = rows @ x @ cols`` over the last one or two axes; ``matrices`` hold (n_out, n_in) or None."""
    if len(matrices) > 2:
        raise NotImplementedError(f"{node.where()}: per-axis matrices are written for 1 or 2 trailing axes")
    dtype = x.type.dtype if x.type.dtype in ("float16", "float32", "float64") else "float32"
    expr = t.ref(x) if dtype == x.type.dtype else f"{t.ref(x)}.to({t.dtype(dtype)})"
    if matrices[-1] is not None:
        expr = f"torch.matmul({expr}, {t.const(node, matrices[-1].T.astype(dtype), hints[-1])})"
    if len(matrices) == 2 and matrices[0] is not None:
        expr = f"torch.matmul({t.const(node, matrices[0].astype(dtype), hints[0])}, {expr})"
    if dtype != x.type.dtype:
        expr = f"{expr}.to({t.dtype(x.type.dtype)})"
    t.assign(node, expr)


def _nearest_to_torch(node, t, x, axes, exact):
    """A 2-d integer factor is ``nn.Upsample``; other axes repeat or gather a constant index table."""
    tables = [nearest_indices(*axis, exact=exact) for axis in axes]
    factors = [repeat_factor(idx, n_in) for idx, (n_in, _, _) in zip(tables, axes)]
    rank = x.type.rank
    if len(axes) == 2 and rank == 4 and None not in factors and factors != [1, 1] and all(
            np.array_equal(idx, nearest_indices(n_in, n_in * f, float(f)))
            for idx, (n_in, _, _), f in zip(tables, axes, factors)):
        scale = tuple(float(f) for f in factors)
        t.layer(node, "Upsample", (), {"scale_factor": scale[0] if scale[0] == scale[1] else scale,
                                       "mode": "nearest"}, {}, [x])
        return
    expr = t.ref(x)
    for i, (idx, f) in enumerate(zip(tables, factors)):
        axis = rank - len(axes) + i
        if f is None:
            hint = ("src_rows", "src_cols")[i + 2 - len(tables)] if len(tables) <= 2 else f"src_axis{axis}"
            expr = f"{expr}.index_select({axis}, {t.const(node, idx.astype('int32'), hint)})"
        elif f > 1:
            expr = f"{expr}.repeat_interleave({f}, dim={axis})"
    t.assign(node, expr)


@RESIZE.emits("torch-xla")
def _resize_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    size = tuple(a["size"])
    axes = [(x.type.shape[x.type.rank - len(size) + i], n_out, None if a["scales"] is None else a["scales"][i])
            for i, n_out in enumerate(size)]
    if a["mode"].startswith("nearest"):
        _nearest_to_torch(node, t, x, axes, a["mode"] == "nearest_exact")
        return
    matrices = [axis_matrix(a["mode"], *axis, a["align_corners"]) for axis in axes]
    if a["mode"] == "linear" and len(size) == 2 and x.type.rank == 4 and all(
            np.array_equal(m, axis_matrix("linear", n_in, n_out, None, a["align_corners"]))
            for m, (n_in, n_out, _) in zip(matrices, axes)):
        kwargs = {"size": size, "mode": "bilinear", "align_corners": bool(a["align_corners"])}
        t.layer(node, "Upsample", (), kwargs, {}, [x])
        return
    identity = [None if m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(len(m))) else m for m in matrices]
    apply_axis_matrices_torch(node, t, x, identity)
