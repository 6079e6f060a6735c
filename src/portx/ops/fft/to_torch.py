"""torch-xla emit rules for FFTs and complex numbers: ``torch.fft`` for long axes, complex views.

PyTorch/XLA cannot lower ``torch.fft``, so the op table rewrites transforms of axes up to ``DFT_MAX`` samples
as matmuls with cos/sin tables in the IR (Note [DFT as matmul] in passes/legalize/fft.py); what reaches these
rules is longer, and becomes ``torch.fft.fftn/ifftn/rfftn/irfftn``. The IR's ``norm`` is a divisor; torch's
``norm=`` names which direction carries it: a forward transform divided by n is ``norm="forward"``, an inverse
one ``"backward"``, sqrt(n) is ``"ortho"`` either way, and an undivided transform is the opposite direction's
name. Complex tensors are
built with ``torch.view_as_complex`` (which PyTorch/XLA lowers; ``torch.complex`` it does not), so
``conj`` negates the imaginary part and rejoins (``torch.conj`` is a lazy view), ``angle`` is
``atan2(imag, real)``, and ``view_as_complex`` reads a contiguous tensor, as torch requires.

Example generated code (an rfft of 2048 samples):
    rfft = torch.fft.rfftn(x, dim=(1,), norm="backward")
"""
from __future__ import annotations

from ..fft import (ANGLE, COMPLEX, COMPLEX_ABS, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL, VIEW_AS_COMPLEX,
                   VIEW_AS_REAL)

__all__ = []

_FORWARD = {"none": "backward", "sqrt": "ortho", "n": "forward"}
_INVERSE = {"none": "forward", "sqrt": "ortho", "n": "backward"}


@FFT_C2C.emits("torch-xla")
def _fft_c2c_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    fn, names = ("fftn", _FORWARD) if a["forward"] else ("ifftn", _INVERSE)
    t.assign(node, f"torch.fft.{fn}({t.ref(x)}, dim={t.lit(tuple(a['axes']))}, norm={t.lit(names[a['norm']])})")


@FFT_R2C.emits("torch-xla")
def _fft_r2c_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    fn = "rfftn" if a["onesided"] else "fftn"
    t.assign(node, f"torch.fft.{fn}({t.ref(x)}, dim={t.lit(tuple(a['axes']))}, norm={t.lit(_FORWARD[a['norm']])})")


@FFT_C2R.emits("torch-xla")
def _fft_c2r_to_torch(node, t):
    x, a = node.inputs[0], node.attrs
    axes, n = tuple(a["axes"]), int(a["last_size"])
    sizes = tuple(x.type.shape[i] for i in axes[:-1]) + (n,)
    t.assign(node, f"torch.fft.irfftn({t.ref(x)}, s={t.lit(sizes)}, dim={t.lit(axes)}, "
                   f"norm={t.lit(_INVERSE[a['norm']])})")


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
