"""JAX import rules for FFTs and complex numbers: ``fft`` (every ``fft_type``), ``real``, ``imag``, ``complex``,
``conj``.

``lax.fft`` transforms the trailing ``len(fft_lengths)`` axes. XLA's inverse transforms (IFFT, IRFFT)
divide by n, its forward ones do not, which is the IR's ``norm`` "n" and "none"; ``jnp.fft`` (and
``keras.ops.fft``/``rfft``/``irfft``/``stft``) already cropped or padded the input to the lengths.

Example:
    fft[fft_type=2 fft_lengths=(16,)](%x) -> fft_r2c(%x) {axes=(1,), norm="none", onesided=True}
"""
from __future__ import annotations

from ..elementwise import BINARY
from ..fft import COMPLEX, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL

__all__ = []


@FFT_C2C.imports("jax", "fft")
def _fft_from_jax(call):
    """FFT / IFFT (complex), RFFT (real to onesided), IRFFT (onesided to real) over the trailing axes."""
    x, lengths = call.input(0), tuple(int(n) for n in call.params["fft_lengths"])
    fft_type = int(call.params["fft_type"])
    axes = tuple(range(x.type.rank - len(lengths), x.type.rank))
    if fft_type in (0, 1):
        return call.emit(FFT_C2C, [x], {"axes": axes, "norm": "none" if fft_type == 0 else "n",
                                        "forward": fft_type == 0})
    if fft_type == 2:
        return call.emit(FFT_R2C, [x], {"axes": axes, "norm": "none", "onesided": True})
    if x.type.shape[-1] != lengths[-1] // 2 + 1:
        call.unsupported(f"irfft of {x.type.shape[-1]} bins to {lengths[-1]} samples (expected "
                         f"{lengths[-1] // 2 + 1} bins; jnp.fft.irfft pads them)")
    return call.emit(FFT_C2R, [x], {"axes": axes, "norm": "n", "last_size": lengths[-1]})


@REAL.imports("jax", "real")
def _real_from_jax(call):
    return call.emit(REAL, [call.input(0)])


@IMAG.imports("jax", "imag")
def _imag_from_jax(call):
    return call.emit(IMAG, [call.input(0)])


@COMPLEX.imports("jax", "complex")
def _complex_from_jax(call):
    return call.emit(COMPLEX, [call.input(0), call.input(1)])


@CONJ.imports("jax", "conj")
def _conj_from_jax(call):
    """``lax.conj``; of a real input it is ``complex(x, 0)`` (jnp.conj returns a real input as is)."""
    x = call.input(0)
    if not x.type.dtype.startswith("complex"):
        return call.emit(COMPLEX, [x, call.emit(BINARY["sub"], [x, x])])
    return call.emit(CONJ, [x])
