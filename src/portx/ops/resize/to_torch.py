"""torch-xla emit rule for resize: ``nn.Upsample`` where it is torch's meaning; legalization does the rest.

Note [XLA resize]: PyTorch/XLA lowers only ``upsample_nearest2d`` and ``upsample_bilinear2d``;
bicubic, 1-d, nearest-exact and 3-d upsampling run on the CPU. ``op_tables/torch_xla.toml``
therefore rewrites resizes into repeats, gathers and constant-matrix matmuls before emitting
(``passes/legalize/resize.py``), and this rule writes the native forms only (Note [resize native
forms] in ``to_keras.py``): the identity, and ``nn.Upsample`` for 2-d nearest integer factors and
2-d bilinear whose torch coordinate maps equal the IR's (the tables in ``resize/__init__.py`` are
torch's own arithmetic, so this is checked, not assumed). Anything else is ``Unsupported``.
``grid_sample`` (PyTorch/XLA has no ``grid_sampler_2d`` / ``_3d``) reaches no emitter: both targets get it as
gathers from ``passes/legalize/decompose.py`` (Note [grid sample] in ``grid.py``).

Example generated code:
    self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
    up = self.up(x)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..resize import RESIZE, axis_maps, is_identity, resized_axes, torch_upsample_kwargs

__all__ = []


@RESIZE.emits("torch-xla")
def _resize_to_torch(node, t):
    """The identity, or nn.Upsample (Note [XLA resize])."""
    x, axes = node.inputs[0], resized_axes(node)
    if all(is_identity(m, n_in) for m, (n_in, _, _) in zip(axis_maps(node), axes)):
        t.assign(node, t.ref(x))
        return
    kwargs = torch_upsample_kwargs(node)
    if kwargs is None:
        sizes = " x ".join(f"{n_in}->{n_out}" for n_in, n_out, _ in axes)
        raise Unsupported(f"{node.attrs['mode']} resize {sizes} has no PyTorch/XLA upsampling with this sampling; "
                          "the legalize pass rewrites it (passes/legalize/resize.py)")
    t.layer(node, "Upsample", (), kwargs, {}, [x])
