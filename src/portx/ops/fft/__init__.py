"""Discrete Fourier transforms and complex numbers: torch's ``_fft_r2c/_fft_c2c/_fft_c2r`` and JAX's ``fft``.

Note [complex values]: the IR carries complex tensors as ``complex64`` (``complex128`` from float64
sources, narrowed to complex64 for TPUs by the dtype legalization), not as (real, imag) pairs: both
targets hold complex tensors (Keras' functional models take complex64 KerasTensors), so a complex
graph input or output reaches the user as it did in the source. Only the Keras FFT calls, which
take and return (real, imag) pairs, split and rejoin a value inside one emit rule.

The three transforms follow ATen's internal ops, which every ``torch.fft`` function and every JAX
``fft_type`` reduce to: ``fft_c2c`` (complex to complex, ``forward`` picks the sign), ``fft_r2c``
(real input, ``onesided`` keeps ``n // 2 + 1`` bins of the last axis) and ``fft_c2r`` (the inverse
of a onesided transform, ``last_size`` samples along the last axis). All are unnormalized sums
divided by ``norm``: ``"none"`` (1), ``"sqrt"`` (sqrt(n)) or ``"n"`` (n), n the product of the
signal sizes (ATen's ``normalization`` 0, 1, 2).

Example IR:
    %f: complex64[2x5] = fft_r2c(%x) {axes=(1,), norm="none", onesided=True}  # rfft
    %y: float32[2x8] = fft_c2r(%f) {axes=(1,), norm="n", last_size=8}  # irfft
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import REQUIRED, OpDef

__all__ = ["FFT_C2C", "FFT_R2C", "FFT_C2R", "VIEW_AS_REAL", "VIEW_AS_COMPLEX", "REAL", "IMAG", "COMPLEX", "CONJ",
           "COMPLEX_ABS", "ANGLE", "NORMS", "complex_dtype", "real_dtype", "divisor"]

NORMS = ("none", "sqrt", "n")
_COMPLEX = {"float32": "complex64", "float64": "complex128", "float16": "complex64", "bfloat16": "complex64"}
_REAL = {"complex64": "float32", "complex128": "float64"}

FFT_C2C = OpDef("fft_c2c", ("x",), {"axes": REQUIRED, "norm": "none", "forward": True}, family="fft",
                doc="Complex DFT over axes (forward: e^-i, else e^+i), divided per norm.")
FFT_R2C = OpDef("fft_r2c", ("x",), {"axes": REQUIRED, "norm": "none", "onesided": True}, family="fft",
                doc="DFT of a real tensor over axes; onesided keeps n//2+1 bins of the last axis.")
FFT_C2R = OpDef("fft_c2r", ("x",), {"axes": REQUIRED, "norm": "none", "last_size": REQUIRED}, family="fft",
                doc="Inverse of a onesided DFT: real output, last_size samples on the last axis.")
VIEW_AS_REAL = OpDef("view_as_real", ("x",), family="fft", doc="complex (...) -> float (..., 2): real, imag.")
VIEW_AS_COMPLEX = OpDef("view_as_complex", ("x",), family="fft", doc="float (..., 2) -> complex (...).")
REAL = OpDef("real", ("x",), family="fft", doc="Real part of a complex tensor.")
IMAG = OpDef("imag", ("x",), family="fft", doc="Imaginary part of a complex tensor.")
COMPLEX = OpDef("complex", ("real", "imag"), family="fft", doc="real + i * imag (same shapes, floats).")
CONJ = OpDef("conj", ("x",), family="fft", doc="Complex conjugate.")
COMPLEX_ABS = OpDef("complex_abs", ("x",), family="fft", doc="|x| of a complex tensor (a float tensor).")
ANGLE = OpDef("angle", ("x",), family="fft", doc="atan2(imag, real) of a complex tensor (a float tensor).")


def complex_dtype(dtype: str) -> str:
    """The complex dtype holding a ``dtype`` pair: ``complex_dtype("float32")`` -> ``"complex64"``."""
    return dtype if dtype in _REAL else _COMPLEX[dtype]


def real_dtype(dtype: str) -> str:
    """The float dtype of one part: ``real_dtype("complex64")`` -> ``"float32"``."""
    return _REAL.get(dtype, dtype)


def divisor(norm, sizes) -> float:
    """What the unnormalized sum is divided by: ``divisor("sqrt", (4, 4))`` -> 4.0."""
    n = math.prod(sizes)
    return {"none": 1.0, "sqrt": math.sqrt(n), "n": float(n)}[norm]


def _check(name, x, axes, norm):
    if norm not in NORMS or not axes or any(not 0 <= a < x.rank for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axes {axes} / norm {norm!r} do not fit input {x.shape}")


def _needs(name, x, complex_input):
    if (x.dtype in _REAL) != complex_input:
        raise ValueError(f"{name}: input {x} must be {'complex' if complex_input else 'real'}")


@FFT_C2C.infer
def _fft_c2c_type(x, *, axes, norm, forward):
    _check("fft_c2c", x, axes, norm)
    _needs("fft_c2c", x, True)
    return x


@FFT_C2C.reference
def _fft_c2c_numpy(x, *, axes, norm, forward):
    y = (np.fft.fftn if forward else np.fft.ifftn)(x.astype(np.complex128), axes=axes, norm="forward" if not
                                                  forward else "backward")
    return (y / divisor(norm, [x.shape[a] for a in axes])).astype(x.dtype)


@FFT_R2C.infer
def _fft_r2c_type(x, *, axes, norm, onesided):
    _check("fft_r2c", x, axes, norm)
    _needs("fft_r2c", x, False)
    shape = list(x.shape)
    if onesided:
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return x.with_shape(shape).with_dtype(complex_dtype(x.dtype))


@FFT_R2C.reference
def _fft_r2c_numpy(x, *, axes, norm, onesided):
    y = (np.fft.rfftn if onesided else np.fft.fftn)(x.astype(np.float64), axes=axes)
    return (y / divisor(norm, [x.shape[a] for a in axes])).astype(complex_dtype(str(x.dtype)))


@FFT_C2R.infer
def _fft_c2r_type(x, *, axes, norm, last_size):
    _check("fft_c2r", x, axes, norm)
    _needs("fft_c2r", x, True)
    shape = list(x.shape)
    shape[axes[-1]] = int(last_size)
    return x.with_shape(shape).with_dtype(real_dtype(x.dtype))


@FFT_C2R.reference
def _fft_c2r_numpy(x, *, axes, norm, last_size):
    sizes = [x.shape[a] for a in axes[:-1]] + [last_size]
    y = np.fft.irfftn(x.astype(np.complex128), s=sizes, axes=axes, norm="forward")  # unnormalized
    return (y / divisor(norm, sizes)).astype(real_dtype(str(x.dtype)))


@VIEW_AS_REAL.infer
def _view_as_real_type(x):
    _needs("view_as_real", x, True)
    return x.with_shape(x.shape + (2,)).with_dtype(real_dtype(x.dtype))


@VIEW_AS_REAL.reference
def _view_as_real_numpy(x):
    return np.stack([x.real, x.imag], axis=-1)


@VIEW_AS_COMPLEX.infer
def _view_as_complex_type(x):
    if x.dtype in _REAL or not x.shape or x.shape[-1] != 2:
        raise ValueError(f"view_as_complex: input {x} must be a float tensor whose last axis is 2")
    return x.with_shape(x.shape[:-1]).with_dtype(complex_dtype(x.dtype))


@VIEW_AS_COMPLEX.reference
def _view_as_complex_numpy(x):
    return (x[..., 0] + 1j * x[..., 1]).astype(complex_dtype(str(x.dtype)))


def _part_type(x):
    _needs("real/imag/abs/angle", x, True)
    return x.with_dtype(real_dtype(x.dtype))


for _op in (REAL, IMAG, COMPLEX_ABS, ANGLE):
    _op.infer(_part_type)


@REAL.reference
def _real_numpy(x):
    return np.real(x)


@IMAG.reference
def _imag_numpy(x):
    return np.imag(x)


@COMPLEX_ABS.reference
def _complex_abs_numpy(x):
    return np.abs(x).astype(real_dtype(str(x.dtype)))


@ANGLE.reference
def _angle_numpy(x):
    return np.angle(x).astype(real_dtype(str(x.dtype)))


@CONJ.infer
def _conj_type(x):
    _needs("conj", x, True)
    return x


@CONJ.reference
def _conj_numpy(x):
    return np.conj(x)


@COMPLEX.infer
def _complex_type(real, imag):
    if real != imag or real.dtype in _REAL:
        raise ValueError(f"complex: real {real} and imag {imag} must be float tensors of one type")
    return real.with_dtype(complex_dtype(real.dtype))


@COMPLEX.reference
def _complex_numpy(real, imag):
    return (real + 1j * imag).astype(complex_dtype(str(real.dtype)))
