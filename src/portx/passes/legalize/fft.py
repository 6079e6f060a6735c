"""The discrete Fourier transform as matmuls with constant cos/sin tables, written once as IR (torch-xla's op table).

Note [DFT as matmul]: PyTorch/XLA has no lowering for ATen's ``_fft_*`` ops, so ``torch.fft`` calls
leave the device (the CPU fallback). A DFT along one axis of n samples is a product with the n x n
matrix ``exp(sign * 2 pi i j k / n)``; written on (real, imag) parts it is four real matmuls with
``cos`` and ``sin`` tables, which XLA runs on the TPU's matrix unit. The rule works on the pair the IR
already has for a complex value (``real``, ``imag``, and ``complex`` to join it: Note [complex values] in
ops/fft/__init__.py), so no emitter writes a table. The inverse of a onesided transform (``fft_c2r``) reads
n // 2 + 1 bins and doubles every bin but the first and (for even n) the Nyquist one, whose sines vanish, so
their imaginary parts are ignored as torch ignores them. The tables grow as n squared, so the rule takes axes
up to ``DFT_MAX`` samples and leaves longer ones to the emitter (``torch.fft``). keras-jax keeps its FFT ops:
``keras.ops.fft`` lowers to stablehlo.fft, which XLA runs on TPU in O(n log n).

Example (before / after ``fft_as_dft_matmuls``, an rfft of 8 samples)::

    %f: complex64[2x5] = fft_r2c(%x) {axes=(1,), norm="none", onesided=True}
        ->
    %f_re = matmul(%x, %f.rdft8_cos); %f_im = matmul(%x, %f.rdft8_sin); %f = complex(%f_re, %f_im)
"""
from __future__ import annotations

import numpy as np

from ...ops.elementwise import BINARY, CAST
from ...ops.fft import COMPLEX, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL, divisor, real_dtype
from ...ops.linear import MATMUL
from ...ops.shape import PERMUTE
from .rewriter import node_rule

__all__ = ["DFT_MAX", "dft_tables", "irfft_tables", "fft_as_dft_matmuls"]

#: the longest axis transformed with constant tables (two 1024 x 1024 float32 tables: 8 MB)
DFT_MAX = 1024


def dft_tables(n, sign, bins=None):
    """(cos, sign * sin) tables, (n, bins): ``x @ cos + i x @ sin`` is the DFT with ``exp(sign * 2 pi i j k / n)``."""
    bins = n if bins is None else bins
    angle = 2 * np.pi * np.outer(np.arange(n), np.arange(bins)) / n
    return np.cos(angle).astype(np.float32), (sign * np.sin(angle)).astype(np.float32)


def irfft_tables(bins, n):
    """(cos, sin) tables (bins, n) of the inverse onesided DFT: ``re @ cos - im @ sin`` (Note [DFT as matmul])."""
    weight = np.full(bins, 2.0)
    weight[0] = 1.0
    if n % 2 == 0 and bins > n // 2:
        weight[n // 2] = 1.0
    weight[n // 2 + 1:] = 0.0  # bins past n // 2 are not read
    angle = 2 * np.pi * np.outer(np.arange(bins), np.arange(n)) / n
    return (weight[:, None] * np.cos(angle)).astype(np.float32), (weight[:, None] * np.sin(angle)).astype(np.float32)


class _Axis:
    """Products with constant tables along one axis of the rewritten node's values: the axis moved last, the
    tables (``dtype``; one constant per table and node, ``made``) applied, the axis moved back."""

    def __init__(self, rw, axis, rank, dtype, made):
        self.rw, self.dtype, self.made = rw, dtype, made
        self.perm = tuple(a for a in range(rank) if a != axis) + (axis,)
        self.back = tuple(int(i) for i in np.argsort(self.perm))
        self.moved = axis != rank - 1

    def tables(self, pair, hint):
        if hint not in self.made:
            self.made[hint] = [self.rw.const(t.astype(self.dtype), f"{hint}_{part}")
                               for t, part in zip(pair, ("cos", "sin"))]
        return self.made[hint]

    def last(self, value):
        return self.rw.emit(PERMUTE, [value], {"perm": self.perm}, hint="moved") if self.moved else value

    def restored(self, value, hint):
        return self.rw.emit(PERMUTE, [value], {"perm": self.back}, hint=hint) if self.moved else value

    def combine(self, name, a, b, hint):
        """``BINARY[name]`` of ``a`` and ``b`` (axis last), the axis moved back."""
        return self.restored(self.rw.emit(BINARY[name], [a, b], hint=f"{hint}_last" if self.moved else hint), hint)

    def times(self, value, table, hint):
        return self.rw.emit(MATMUL, [value, table], hint=hint)


def _complex_dft(rw, pair, axis, sign, made):
    """One complex DFT along ``axis`` of the (real, imag) values: ``(a cos - b sin, b cos + a sin)``."""
    n, dtype = pair[0].type.shape[axis], pair[0].type.dtype
    along = _Axis(rw, axis, pair[0].type.rank, dtype, made)
    cos, sin = along.tables(dft_tables(n, sign), f"dft{n}" + ("" if sign < 0 else "_inverse"))
    a, b = (along.last(p) for p in pair)
    re = along.combine("sub", along.times(a, cos, "re_cos"), along.times(b, sin, "im_sin"), "re")
    im = along.combine("add", along.times(b, cos, "im_cos"), along.times(a, sin, "re_sin"), "im")
    return re, im


def _scaled(rw, values, scale) -> list:
    """``values`` (one dtype) times ``scale``, one constant for all of them."""
    if scale == 1:
        return list(values)
    factor = rw.const(np.array(scale, values[0].type.dtype), "scale")
    return [rw.emit(BINARY["mul"], [v, factor], hint="scaled") for v in values]


def _fits(node) -> bool:
    """Every transformed axis, before and after, is at most ``DFT_MAX`` long."""
    shapes = (node.inputs[0].type.shape, node.output.type.shape)
    return all(shape[a] <= DFT_MAX for shape in shapes for a in node.attrs["axes"])


def _parts(rw, x):
    return rw.emit(REAL, [x], hint="real"), rw.emit(IMAG, [x], hint="imag")


def _joined(rw, pair, scale):
    return rw.result(rw.emit(COMPLEX, _scaled(rw, pair, scale), hint="joined"))


def _c2c(node, rw):
    x, a = node.inputs[0], node.attrs
    pair, made = _parts(rw, x), {}
    for axis in a["axes"]:
        pair = _complex_dft(rw, pair, axis, -1 if a["forward"] else 1, made)
    _joined(rw, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in a["axes"]]))


def _r2c(node, rw):
    """The real DFT along the last of the axes (``bins`` of them), then complex DFTs along the others."""
    x, a = node.inputs[0], node.attrs
    axes, rank = tuple(a["axes"]), x.type.rank
    if x.type.dtype not in ("float32", "float64"):  # half precision: computed in float32, as the output is complex64
        x = rw.emit(CAST, [x], {"dtype": "float32"}, hint="float32")
    n, bins = x.type.shape[axes[-1]], node.output.type.shape[axes[-1]]
    made = {}
    along = _Axis(rw, axes[-1], rank, x.type.dtype, made)
    cos, sin = along.tables(dft_tables(n, -1, bins), f"rdft{n}")
    moved = along.last(x)
    pair = tuple(along.restored(along.times(moved, table, f"{part}_last" if along.moved else part), part)
                 for table, part in ((cos, "re"), (sin, "im")))
    for axis in axes[:-1]:
        pair = _complex_dft(rw, pair, axis, -1, made)
    _joined(rw, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in axes]))


def _c2r(node, rw):
    """Inverse complex DFTs along all axes but the last, then the inverse onesided one (``re cos - im sin``)."""
    x, a = node.inputs[0], node.attrs
    axes, rank, n = tuple(a["axes"]), x.type.rank, int(a["last_size"])
    pair, made = _parts(rw, x), {}
    for axis in axes[:-1]:
        pair = _complex_dft(rw, pair, axis, 1, made)
    along = _Axis(rw, axes[-1], rank, real_dtype(x.type.dtype), made)
    cos, sin = along.tables(irfft_tables(x.type.shape[axes[-1]], n), f"irdft{n}")
    re, im = (along.last(p) for p in pair)
    y = along.combine("sub", along.times(re, cos, "re_cos"), along.times(im, sin, "im_sin"), "signal")
    rw.result(_scaled(rw, [y], 1 / divisor(a["norm"], [x.type.shape[i] for i in axes[:-1]] + [n]))[0])


@node_rule(FFT_C2C, FFT_R2C, FFT_C2R)
def fft_as_dft_matmuls(node, rw) -> bool:
    """A DFT over axes of at most ``DFT_MAX`` samples as matmuls with cos/sin tables on the (real, imag) parts
    (Note [DFT as matmul]); longer axes are left to the emitter.

    Before / after (a complex DFT along axis 1 of 4 samples; several axes repeat the step per axis)::

        %y: complex64[2x4] = fft_c2c(%x) {axes=(1,), norm="none", forward=True}
            ->
        %y_real = real(%x); %y_imag = imag(%x)
        %y_re = sub(matmul(%y_real, %y.dft4_cos), matmul(%y_imag, %y.dft4_sin))
        %y_im = add(matmul(%y_imag, %y.dft4_cos), matmul(%y_real, %y.dft4_sin)); %y = complex(%y_re, %y_im)
    """
    if not _fits(node):
        return False
    {FFT_C2C: _c2c, FFT_R2C: _r2c, FFT_C2R: _c2r}[node.op](node, rw)
    return True
