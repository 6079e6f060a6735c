"""keras.ops FFTs and complex views in functional graphs (``ops.rfft(x)``, ``ops.fft((re, im))``) -> IR.

Keras' FFTs take and return (real, imag) pairs over the last axis (``fft2``: the last two); the
rules join a pair with ``complex``, transform, and split the result with ``real`` / ``imag``
(Note [complex values] in ``fft/__init__.py``). ``rfft``/``irfft`` with ``fft_length`` crop or
zero-pad their input first, as ``jnp.fft`` does; ``ifft2`` and ``irfft`` divide by n (norm "n").

Example:
    >>> re, im = keras.ops.rfft(x)     # -> fft_r2c(%x) {axes=(1,), norm="none", onesided=True}; real; imag
"""
from __future__ import annotations

from .._util import named_rule
from ..elementwise import BINARY
from ..fft import (ANGLE, COMPLEX, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL, VIEW_AS_COMPLEX,
                   VIEW_AS_REAL)
from ..pad import PAD

__all__ = []


def _split(call, y):
    return [call.emit(REAL, [y]), call.emit(IMAG, [y])]


def _last(x, count):
    return tuple(range(x.type.rank - count, x.type.rank))


def _resized(call, x, n):
    """``x`` cropped or zero-padded to ``n`` samples on its last axis (jnp.fft's ``n=``)."""
    if n is None or x.type.shape[-1] == n:
        return x
    pads = ((0, 0),) * (x.type.rank - 1) + ((0, int(n) - x.type.shape[-1]),)
    return call.emit(PAD, [x], {"pads": pads, "mode": "constant", "value": 0.0})


def _c2c_rule(name, count, forward):
    def rule(call):
        x = call.emit(COMPLEX, call.inputs[:2])
        attrs = {"axes": _last(x, count), "norm": "none" if forward else "n", "forward": forward}
        return _split(call, call.emit(FFT_C2C, [x], attrs))
    return named_rule(rule, name, "from_keras")


FFT_C2C.imports("keras", "ops.FFT")(_c2c_rule("fft", 1, True))
FFT_C2C.imports("keras", "ops.FFT2")(_c2c_rule("fft2", 2, True))
FFT_C2C.imports("keras", "ops.IFFT2")(_c2c_rule("ifft2", 2, False))


@FFT_R2C.imports("keras", "ops.RFFT")
def _rfft_from_keras(call):
    x = _resized(call, call.inputs[0], call.layer.fft_length)
    return _split(call, call.emit(FFT_R2C, [x], {"axes": _last(x, 1), "norm": "none", "onesided": True}))


@FFT_C2R.imports("keras", "ops.IRFFT")
def _irfft_from_keras(call):
    """``irfft((re, im), n)``: the bins cropped or padded to n // 2 + 1, then the inverse divided by n."""
    re, im = call.inputs[:2]
    n = call.layer.fft_length or 2 * (re.type.shape[-1] - 1)
    x = call.emit(COMPLEX, [_resized(call, re, n // 2 + 1), _resized(call, im, n // 2 + 1)])
    return call.emit(FFT_C2R, [x], {"axes": _last(x, 1), "norm": "n", "last_size": int(n)})


def _unary_rule(op):
    """One complex input; of a real one (``jnp`` accepts it) real/conj are the input and imag is zeros."""
    def rule(call):
        x = call.inputs[0]
        if op is VIEW_AS_COMPLEX or x.type.dtype.startswith("complex"):
            return call.emit(op, [x])
        if op in (REAL, CONJ):
            return x
        zero = call.emit(BINARY["sub"], [x, x])
        return zero if op is IMAG else call.emit(op, [call.emit(COMPLEX, [x, zero])])
    return named_rule(rule, op.name, "from_keras")


for _cls, _op in (("ViewAsComplex", VIEW_AS_COMPLEX), ("ViewAsReal", VIEW_AS_REAL), ("Real", REAL), ("Imag", IMAG),
                  ("Conjugate", CONJ), ("Conj", CONJ), ("Angle", ANGLE)):
    _op.imports("keras", f"ops.{_cls}")(_unary_rule(_op))
