"""ATen import rules for FFTs and complex numbers: ``_fft_r2c/_fft_c2c/_fft_c2r`` and the complex views.

Every ``torch.fft`` function (fft, ifft, rfft, irfft, fft2, fftn, rfftn, irfftn, hfft, ihfft) reaches
one of ATen's three internal transforms after ``torch.export``; their ``normalization`` (0, 1, 2)
is the IR's ``norm`` ("none", "sqrt", "n"). ``polar`` is ``complex(abs * cos, abs * sin)``; the
real-valued ``angle`` is that of ``complex(x, 0)``.

Example:
    aten::_fft_r2c(%x, [1], 0, True) -> fft_r2c(%x) {axes=(1,), norm="none", onesided=True}
"""
from __future__ import annotations

from .._util import kind, norm_axes
from ..elementwise import BINARY, CAST
from ..elementwise.unary import UNARY
from ..fft import (ANGLE, COMPLEX, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, NORMS, REAL, VIEW_AS_COMPLEX,
                   VIEW_AS_REAL, real_dtype)
from ..shape import EXPAND

__all__ = []


def _axes(call, x):
    """torch's ``dim`` in order (the last one is the halved axis of r2c / c2r), non-negative."""
    dims = [int(d) % x.type.rank for d in call.arg("dim")]
    if sorted(dims) != list(norm_axes(dims, x.type.rank)) or len(set(dims)) != len(dims):
        call.unsupported(f"repeated fft dims {dims}")
    return tuple(dims)


def _norm(call):
    return NORMS[int(call.arg("normalization", 0))]


@FFT_C2C.imports("torch", "aten::_fft_c2c")
def _fft_c2c_from_aten(call):
    x = call.arg("self")
    return call.emit(FFT_C2C, [x], {"axes": _axes(call, x), "norm": _norm(call), "forward": bool(call.arg("forward"))})


@FFT_R2C.imports("torch", "aten::_fft_r2c")
def _fft_r2c_from_aten(call):
    x = call.arg("self")
    return call.emit(FFT_R2C, [x], {"axes": _axes(call, x), "norm": _norm(call),
                                    "onesided": bool(call.arg("onesided"))})


@FFT_C2R.imports("torch", "aten::_fft_c2r")
def _fft_c2r_from_aten(call):
    x = call.arg("self")
    return call.emit(FFT_C2R, [x], {"axes": _axes(call, x), "norm": _norm(call),
                                    "last_size": int(call.arg("last_dim_size"))})


@VIEW_AS_REAL.imports("torch", "aten::view_as_real")
def _view_as_real_from_aten(call):
    return call.emit(VIEW_AS_REAL, [call.arg("self")])


@VIEW_AS_COMPLEX.imports("torch", "aten::view_as_complex")
def _view_as_complex_from_aten(call):
    return call.emit(VIEW_AS_COMPLEX, [call.arg("self")])


@REAL.imports("torch", "aten::real")
@IMAG.imports("torch", "aten::imag")
def _part_from_aten(call):
    x = call.arg("self")
    if kind(x.type.dtype) < 3:
        return x if call.node.target._schema.name == "aten::real" else call.unsupported("imag of a real tensor")
    return call.emit(REAL if call.node.target._schema.name == "aten::real" else IMAG, [x])


@CONJ.imports("torch", "aten::_conj", "aten::conj_physical", "aten::_conj_physical", "aten::conj")
def _conj_from_aten(call):
    """A real tensor's conjugate is itself; ``_conj`` is a lazy view torch materializes with ``clone``."""
    x = call.arg("self")
    return call.emit(CONJ, [x]) if kind(x.type.dtype) == 3 else x


def _joined(call, real, imag):
    """complex(real, imag) after torch's broadcasting and promotion of the two parts to the output's."""
    out = call.out_type()
    parts = []
    for part in (real, imag):
        if part.type.dtype != real_dtype(out.dtype):
            part = call.emit(CAST, [part], {"dtype": real_dtype(out.dtype)})
        parts.append(part if part.type.shape == out.shape else call.emit(EXPAND, [part], {"shape": out.shape}))
    return call.emit(COMPLEX, parts)


@COMPLEX.imports("torch", "aten::complex")
def _complex_from_aten(call):
    return _joined(call, call.arg("real"), call.arg("imag"))


@COMPLEX.imports("torch", "aten::polar")
def _polar_from_aten(call):
    """``abs * (cos(angle) + i sin(angle))``."""
    r, theta = call.arg("abs"), call.arg("angle")
    real = call.emit(BINARY["mul"], [r, call.emit(UNARY["cos"], [theta])])
    imag = call.emit(BINARY["mul"], [r, call.emit(UNARY["sin"], [theta])])
    return _joined(call, real, imag)


@ANGLE.imports("torch", "aten::angle")
def _angle_from_aten(call):
    """Complex: atan2(imag, real); real: the angle of ``complex(x, 0 * x)`` (0, or pi for negatives)."""
    x = call.arg("self")
    if kind(x.type.dtype) < 2:
        call.unsupported("angle of an integer tensor: cast it to float first")
    if kind(x.type.dtype) == 2:
        zero = call.emit(BINARY["sub"], [x, x])
        x = call.emit(COMPLEX, [x, zero])
    return call.emit(ANGLE, [x])
