"""Keras emit rules for FFTs and complex numbers: ``keras.ops.fft/rfft/irfft`` one axis at a time, and the
complex views.

Keras' FFTs transform the last axis and take and return (real, imag) pairs (Note [complex values]
in ``fft/__init__.py``), so a transform over several axes is one ``ops.fft`` per axis, each moved
last and back; an inverse complex transform is ``conj(fft(conj(x)))`` (the imaginary part negated
before and after); ``ops.irfft`` divides by its length, which the final scale undoes. The pair is
joined back into a complex tensor with ``ops.view_as_complex``.

Example generated code:
    fft_pair = ops.fft((ops.real(x), ops.imag(x)))
    fft = ops.view_as_complex(ops.stack([fft_pair[0], fft_pair[1]], axis=-1))
"""
from __future__ import annotations

from ..fft import (ANGLE, COMPLEX, COMPLEX_ABS, CONJ, FFT_C2C, FFT_C2R, FFT_R2C, IMAG, REAL, VIEW_AS_COMPLEX,
                   VIEW_AS_REAL, divisor)

__all__ = []


def _moved(expr, axis, rank, back=False):
    """``expr`` with ``axis`` moved last (or, ``back``, the last axis returned to ``axis``)."""
    if axis == rank - 1:
        return expr
    return f"ops.moveaxis({expr}, -1, {axis})" if back else f"ops.moveaxis({expr}, {axis}, -1)"


def _along(k, node, pair, axis, rank, fn="ops.fft"):
    """``fn`` ((real, imag) in, (real, imag) out) along ``axis``: the new pair of expressions."""
    re, im = (_moved(p, axis, rank) for p in pair)
    out = k.temp(node, f"{fn}(({re}, {im}))", "pair")
    return _moved(f"{out}[0]", axis, rank, back=True), _moved(f"{out}[1]", axis, rank, back=True)


def _transform(k, node, pair, axes, rank, forward):
    """Unnormalized complex DFT of ``pair`` over ``axes``; inverse as conj(fft(conj(x)))."""
    re, im = pair
    if not forward:
        im = f"ops.negative({im})"
    for axis in axes:
        re, im = _along(k, node, (re, im), axis, rank)
    return (re, f"ops.negative({im})") if not forward else (re, im)


def _scaled(k, expr, scale):
    return expr if scale == 1 else f"ops.multiply({expr}, {k.lit(float(scale))})"


def _joined(k, node, pair, scale):
    re, im = (_scaled(k, p, scale) for p in pair)
    k.assign(node, f"ops.view_as_complex(ops.stack([{re}, {im}], axis=-1))")


def _split(k, node, x):
    ref = k.ref(x)
    return k.temp(node, f"ops.real({ref})", "real"), k.temp(node, f"ops.imag({ref})", "imag")


@FFT_C2C.emits("keras-jax")
def _fft_c2c_to_keras(node, k):
    x, a = node.inputs[0], node.attrs
    pair = _transform(k, node, _split(k, node, x), a["axes"], x.type.rank, a["forward"])
    _joined(k, node, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in a["axes"]]))


@FFT_R2C.emits("keras-jax")
def _fft_r2c_to_keras(node, k):
    """``ops.rfft`` along the last of the axes (onesided), then ``ops.fft`` along the others."""
    x, a = node.inputs[0], node.attrs
    rank, axes, ref = x.type.rank, tuple(a["axes"]), k.ref(x)
    if a["onesided"]:
        moved = _moved(ref, axes[-1], rank)
        out = k.temp(node, f"ops.rfft({moved})", "pair")
        pair = tuple(_moved(f"{out}[{i}]", axes[-1], rank, back=True) for i in (0, 1))
        axes = axes[:-1]
    else:
        pair = (ref, f"ops.zeros_like({ref})")
    pair = _transform(k, node, pair, axes, rank, True)
    _joined(k, node, pair, 1 / divisor(a["norm"], [x.type.shape[i] for i in a["axes"]]))


@FFT_C2R.emits("keras-jax")
def _fft_c2r_to_keras(node, k):
    """Inverse ``ops.fft`` along all axes but the last, then ``ops.irfft`` (which divides by its length)."""
    x, a = node.inputs[0], node.attrs
    rank, axes, n = x.type.rank, tuple(a["axes"]), int(a["last_size"])
    re, im = _transform(k, node, _split(k, node, x), axes[:-1], rank, False)
    moved = f"({_moved(re, axes[-1], rank)}, {_moved(im, axes[-1], rank)})"
    out = _moved(f"ops.irfft({moved}, fft_length={n})", axes[-1], rank, back=True)
    sizes = [x.type.shape[i] for i in axes[:-1]] + [n]
    k.assign(node, _scaled(k, out, n / divisor(a["norm"], sizes)))


def _call(template):
    def emit(node, k):
        k.assign(node, template.format(*[k.ref(v) for v in node.inputs]))
    return emit


for _op, _template in ((VIEW_AS_REAL, "ops.view_as_real({0})"), (VIEW_AS_COMPLEX, "ops.view_as_complex({0})"),
                       (REAL, "ops.real({0})"), (IMAG, "ops.imag({0})"), (CONJ, "ops.conj({0})"),
                       (COMPLEX, "ops.view_as_complex(ops.stack([{0}, {1}], axis=-1))"),
                       (COMPLEX_ABS, "ops.abs({0})"), (ANGLE, "ops.angle({0})")):
    _rule = _call(_template)
    _rule.__name__ = _rule.__qualname__ = f"_{_op.name}_to_keras"
    _op.emits("keras-jax")(_rule)
