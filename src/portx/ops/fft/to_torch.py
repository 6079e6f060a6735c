"""torch-xla emit rules for FFTs and complex numbers: constant DFT matmuls (``torch.fft`` for long axes), complex views.

PyTorch/XLA cannot lower ``torch.fft``, so transforms of axes up to ``DFT_MAX`` samples are written
as matmuls with cos/sin tables (Note [DFT as matmul] in ``dft.py``) and joined into a complex
tensor with ``torch.view_as_complex``; longer ones are ``torch.fft.fftn/ifftn/rfftn/irfftn``.
For those, the IR's ``norm`` is a divisor; torch's ``norm=`` names which direction carries it: a forward
transform divided by n is ``norm="forward"``, an inverse one ``"backward"``, sqrt(n) is ``"ortho"``
either way, and an undivided transform is the opposite direction's name. Complex tensors are
built with ``torch.view_as_complex`` (which PyTorch/XLA lowers; ``torch.complex`` it does not), so
``conj`` negates the imaginary part and rejoins (``torch.conj`` is a lazy view), ``angle`` is
``atan2(imag, real)``, and ``view_as_complex`` reads a contiguous tensor, as torch requires.

Example generated code:
    rfft_re = x @ self.rdft8_cos
    rfft_im = x @ self.rdft8_sin
    rfft = torch.view_as_complex(torch.stack([rfft_re, rfft_im], dim=-1))
"""
from __future__ import annotations

from ..fft import (ANGLE, COMPLEX, COMPLEX_ABS, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL, VIEW_AS_COMPLEX,
                   VIEW_AS_REAL, divisor, real_dtype)
from ..fft.dft import DFT_MAX, dft_tables, irfft_tables

__all__ = []

_FORWARD = {"none": "backward", "sqrt": "ortho", "n": "forward"}
_INVERSE = {"none": "forward", "sqrt": "ortho", "n": "backward"}


def _moved(expr, axis, rank, back=False):
    if axis == rank - 1:
        return expr
    return f"{expr}.movedim(-1, {axis})" if back else f"{expr}.movedim({axis}, -1)"


def _tables(t, node, arrays, hint, dtype):
    return [t.const(node, a.astype(dtype), f"{hint}_{part}") for a, part in zip(arrays, ("cos", "sin"))]


def _dft_axis(t, node, pair, axis, sign, dtype):
    """One complex DFT along ``axis`` of the (real, imag) expressions (Note [DFT as matmul])."""
    rank, n = node.inputs[0].type.rank, node.inputs[0].type.shape[axis]
    cos, sin = _tables(t, node, dft_tables(n, sign), f"dft{n}" + ("" if sign < 0 else "_inverse"), dtype)
    a, b = (_moved(p, axis, rank) for p in pair)
    re, im = t.temp(node, f"{a} @ {cos} - {b} @ {sin}", "re"), t.temp(node, f"{b} @ {cos} + {a} @ {sin}", "im")
    return _moved(re, axis, rank, back=True), _moved(im, axis, rank, back=True)


def _joined(t, node, pair, scale):
    re, im = (p if scale == 1 else f"{p} * {t.lit(float(scale))}" for p in pair)
    t.assign(node, f"torch.view_as_complex(torch.stack([{re}, {im}], dim=-1))")


def _split(t, node, x):
    return t.temp(node, f"torch.real({t.ref(x)})", "re"), t.temp(node, f"torch.imag({t.ref(x)})", "im")


def _fits(node):
    x = node.inputs[0]
    return all(n <= DFT_MAX for n in list(x.type.shape) + list(node.output.type.shape))


@FFT_C2C.emits("torch-xla")
def _fft_c2c_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    if not _fits(node):
        fn, names = ("fftn", _FORWARD) if a["forward"] else ("ifftn", _INVERSE)
        t.assign(node, f"torch.fft.{fn}({t.ref(x)}, dim={t.lit(tuple(a['axes']))}, norm={t.lit(names[a['norm']])})")
        return
    pair, dtype = _split(t, node, x), real_dtype(x.type.dtype)
    for axis in a["axes"]:
        pair = _dft_axis(t, node, pair, axis, -1 if a["forward"] else 1, dtype)
    _joined(t, node, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in a["axes"]]))


@FFT_R2C.emits("torch-xla")
def _fft_r2c_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    axes, rank, dtype = tuple(a["axes"]), x.type.rank, x.type.dtype
    if not _fits(node):
        fn = "rfftn" if a["onesided"] else "fftn"
        t.assign(node, f"torch.fft.{fn}({t.ref(x)}, dim={t.lit(axes)}, norm={t.lit(_FORWARD[a['norm']])})")
        return
    n = x.type.shape[axes[-1]]
    cos, sin = _tables(t, node, dft_tables(n, -1, node.output.type.shape[axes[-1]]), f"rdft{n}", dtype)
    moved = _moved(t.ref(x), axes[-1], rank)
    pair = tuple(_moved(t.temp(node, f"{moved} @ {table}", part), axes[-1], rank, back=True)
                 for table, part in ((cos, "re"), (sin, "im")))
    for axis in axes[:-1]:
        pair = _dft_axis(t, node, pair, axis, -1, dtype)
    _joined(t, node, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in axes]))


@FFT_C2R.emits("torch-xla")
def _fft_c2r_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    axes, rank, n = tuple(a["axes"]), x.type.rank, int(a["last_size"])
    sizes = tuple(x.type.shape[i] for i in axes[:-1]) + (n,)
    if not _fits(node):
        t.assign(node, f"torch.fft.irfftn({t.ref(x)}, s={t.lit(sizes)}, dim={t.lit(axes)}, "
                       f"norm={t.lit(_INVERSE[a['norm']])})")
        return
    pair, dtype = _split(t, node, x), real_dtype(x.type.dtype)
    for axis in axes[:-1]:
        pair = _dft_axis(t, node, pair, axis, 1, dtype)
    bins = x.type.shape[axes[-1]]
    cos, sin = _tables(t, node, irfft_tables(bins, n), f"irdft{n}", dtype)
    re, im = (_moved(p, axes[-1], rank) for p in pair)
    y = _moved(f"({re} @ {cos} - {im} @ {sin})", axes[-1], rank, back=True)
    scale = 1 / divisor(a["norm"], sizes)
    t.assign(node, y if scale == 1 else f"{y} * {t.lit(float(scale))}")


def _call(template):
    def emit(node, t):
        t.assign(node, template.format(*[t.ref(v) for v in node.inputs]))
    return emit


for _op, _template in ((VIEW_AS_REAL, "torch.view_as_real({0})"),
                       (VIEW_AS_COMPLEX, "torch.view_as_complex({0}.contiguous())"),
                       (REAL, "torch.real({0})"), (IMAG, "torch.imag({0})"),
                       (CONJ, "torch.view_as_complex(torch.stack([torch.real({0}), -torch.imag({0})], dim=-1))"),
                       (COMPLEX, "torch.view_as_complex(torch.stack([{0}, {1}], dim=-1))"),
                       (COMPLEX_ABS, "torch.abs({0})"), (ANGLE, "torch.atan2(torch.imag({0}), torch.real({0}))")):
    _rule = _call(_template)
    _rule.__name__ = _rule.__qualname__ = f"_{_op.name}_to_torch"
    _op.emits("torch-xla")(_rule)
