"""Source text of the Keras-side kernels for the special functions, written into model.py by to_keras.py.

``CEPHES_HELPERS`` is the ``CephesFunction`` layer with Horner and Chebyshev-series evaluation; ``CEPHES_KERNELS``
holds one function per torch.special function, in keras.ops, as torch computes it (Math.h: the same rational and
Chebyshev approximations, branch points and special values, float32 in float32), reading the coefficient tables
of cephes_data.py as ``CEPHES_J0``-style constants (``table_source``). ``polynomial_layer`` writes the layer of
one orthogonal polynomial from its recurrence (``POLYNOMIAL_TABLE``): a loop of fixed length when the largest
degree is known at conversion time, else a while loop up to max(n) (both lower to one XLA While on TPU).

Example:
    >>> CEPHES_KERNELS["bessel_j0"].splitlines()[2]
    'def bessel_j0(x):'
"""
from __future__ import annotations

from .cephes_data import COEFFICIENTS
from ..special import CLOSED_FORMS, HERMITE_LIMIT, POLYNOMIAL_TABLE

__all__ = ["CEPHES_HELPERS", "CEPHES_KERNELS", "KERNEL_NEEDS", "table_source", "polynomial_layer"]

CEPHES_HELPERS = '''
CEPHES = {}  # torch.special functions by name, computed as torch's Math.h does (CephesFunction)


def cephes(fn):
    CEPHES[fn.__name__] = fn
    return fn


def horner(z, coefs):
    acc = ops.zeros_like(z)
    for c in coefs:
        acc = acc * z + c
    return acc


def chbevl(y, coefs):
    p, q, b = ops.zeros_like(y), ops.zeros_like(y), ops.zeros_like(y) + coefs[0]
    for c in coefs[1:]:
        p, q = q, b
        b = y * q - p + c
    return 0.5 * (b - p)


@keras.saving.register_keras_serializable(package="converted")
class CephesFunction(layers.Layer):
    """A torch.special function that keras.ops and jax.scipy.special lack (bessel_j0, airy_ai, ...), by name."""

    def __init__(self, fn, **options):
        super().__init__(**options)
        if fn not in CEPHES:
            raise ValueError(f"CephesFunction: unknown function {fn!r}")
        self.fn = fn

    def call(self, x):
        return CEPHES[self.fn](x)

    def get_config(self):
        return {**super().get_config(), "fn": self.fn}
'''

_ASYMPTOTIC = '''    w = 25.0 / (xa * xa)
    p = horner(w, J["PP"]) / horner(w, J["PQ"])
    q = 5.0 / xa * (horner(w, J["QP"]) / horner(w, J["QQ"]))
    phase = xa - {phase}
    big = ({combo}) * 0.7978845608028654 / ops.sqrt(xa)
'''
_J = "p * ops.cos(phase) - q * ops.sin(phase)"
_Y = "p * ops.sin(phase) + q * ops.cos(phase)"


CEPHES_KERNELS = {
    "bessel_j0": '''
@cephes
def bessel_j0(x):
    J = CEPHES_J0
    xa = ops.abs(x)
    z = xa * xa
    small = (z - 5.783185962946784) * (z - 30.471262343662087) * horner(z, J["RP"]) / horner(z, J["RQ"])
    small = ops.where(xa < 1e-05, 1.0 - z / 4.0, small)
''' + _ASYMPTOTIC.format(phase="0.7853981633974483", combo=_J) + '''    return ops.where(xa <= 5.0, small, big)
''',
    "bessel_j1": '''
@cephes
def bessel_j1(x):
    J = CEPHES_J1
    xa = ops.abs(x)
    z = xa * xa
    small = horner(z, J["RP"]) / horner(z, J["RQ"]) * xa * (z - 14.681970642123893) * (z - 49.2184563216946)
''' + _ASYMPTOTIC.format(phase="2.356194490192345", combo=_J) + '''    value = ops.where(xa <= 5.0, small, big)
    return ops.sign(x) * value
''',
    "bessel_y0": '''
@cephes
def bessel_y0(x):
    J, Y = CEPHES_J0, CEPHES_Y0
    xa = ops.abs(x)
    z = x * x
    small = horner(z, Y["YP"]) / horner(z, Y["YQ"]) + 0.6366197723675814 * ops.log(x) * bessel_j0(x)
''' + _ASYMPTOTIC.format(phase="0.7853981633974483", combo=_Y) + '''    return ops.where(x <= 5.0, small, big)
''',
    "bessel_y1": '''
@cephes
def bessel_y1(x):
    J, Y = CEPHES_J1, CEPHES_Y1
    xa = ops.abs(x)
    z = x * x
    small = x * (horner(z, Y["YP"]) / horner(z, Y["YQ"])) + 0.6366197723675814 * (
        bessel_j1(x) * ops.log(x) - 1.0 / x)
    small = ops.where(x == 0.0, -float("inf"), small)
''' + _ASYMPTOTIC.format(phase="2.356194490192345", combo=_Y) + '''    return ops.where(x <= 5.0, small, big)
''',
    "modified_bessel_k0": '''
@cephes
def modified_bessel_k0(x, scaled=False):
    import jax.scipy.special
    K = CEPHES_K0
    xs = ops.minimum(x, 2.0)
    small = chbevl(xs * xs - 2.0, K["A"]) - ops.log(0.5 * xs) * jax.scipy.special.i0(xs)
    xb = ops.maximum(x, 2.0)
    big = chbevl(8.0 / xb - 2.0, K["B"]) / ops.sqrt(xb)
    if scaled:
        small = small * ops.exp(xs)
    else:
        big = ops.exp(-xb) * big
    return ops.where(x < 0.0, float("nan"), ops.where(x <= 2.0, small, big))
''',
    "modified_bessel_k1": '''
@cephes
def modified_bessel_k1(x, scaled=False):
    import jax.scipy.special
    K = CEPHES_K1
    xs = ops.minimum(x, 2.0)
    small = ops.log(0.5 * xs) * jax.scipy.special.i1(xs) + chbevl(xs * xs - 2.0, K["A"]) / xs
    xb = ops.maximum(x, 2.0)
    big = chbevl(8.0 / xb - 2.0, K["B"]) / ops.sqrt(xb)
    if scaled:
        small = small * ops.exp(xs)
    else:
        big = ops.exp(-xb) * big
    value = ops.where(x <= 2.0, small, big)
    return ops.where(x < 0.0, float("nan"), ops.where(x == 0.0, float("inf"), value))
''',
    "scaled_modified_bessel_k0": '''
@cephes
def scaled_modified_bessel_k0(x):
    return modified_bessel_k0(x, scaled=True)
''',
    "scaled_modified_bessel_k1": '''
@cephes
def scaled_modified_bessel_k1(x):
    return modified_bessel_k1(x, scaled=True)
''',
    "airy_ai": '''
@cephes
def airy_ai(x):
    A = CEPHES_AI
    xn = ops.minimum(x, -2.09)
    zeta = -2.0 * xn * ops.sqrt(-xn) / 3.0
    z = 1.0 / zeta
    zz = z * z
    t = zeta + 0.25 * 3.141592653589793
    negative = 0.5641895835477563 / ops.sqrt(ops.sqrt(-xn)) * (
        ops.sin(t) * (1.0 + zz * horner(zz, A["AFN"]) / horner(zz, A["AFD"]))
        - ops.cos(t) * (z * horner(zz, A["AGN"]) / horner(zz, A["AGD"])))
    xp = ops.maximum(x, 2.09)
    zeta = 2.0 * xp * ops.sqrt(xp) / 3.0
    positive = 0.5641895835477563 * (horner(1.0 / zeta, A["AN"]) / horner(1.0 / zeta, A["AD"])) / (
        2.0 * ops.sqrt(ops.sqrt(xp)) * ops.exp(zeta))
    xm = ops.clip(x, -2.09, 2.09)
    f, g, k, m, n = ops.ones_like(xm), xm, 1.0, ops.ones_like(xm), xm
    z = xm * xm * xm
    for _ in range(12):  # the series converges to float32 precision in fewer terms for |x| <= 2.09
        m = m * z / (k + 1.0) / (k + 2.0)
        n = n * z / (k + 2.0) / (k + 3.0)
        k = k + 3.0
        f, g = f + m, g + n
    middle = 0.35502805388781724 * f - 0.2588194037928068 * g
    value = ops.where(x < -2.09, negative, ops.where(x >= 2.09, positive, middle))
    return ops.where(ops.isinf(x) | ops.isnan(x), float("nan"), ops.where(x > 103.892, 0.0, value))
''',
}
#: (kernels it calls, coefficient tables it reads) by kernel; each is written into model.py before it
KERNEL_NEEDS = {"bessel_j0": ([], ["J0"]), "bessel_j1": ([], ["J1"]), "bessel_y0": (["bessel_j0"], ["J0", "Y0"]),
                "bessel_y1": (["bessel_j1"], ["J1", "Y1"]), "modified_bessel_k0": ([], ["K0"]),
                "modified_bessel_k1": ([], ["K1"]), "scaled_modified_bessel_k0": (["modified_bessel_k0"], []),
                "scaled_modified_bessel_k1": (["modified_bessel_k1"], []), "airy_ai": ([], ["AI"])}


def table_source(table) -> str:
    """``CEPHES_<table> = {...}``: one coefficient table of cephes_data.py as model.py code."""
    rows = "".join(f"    {name!r}: {values!r},\n" for name, values in COEFFICIENTS[table].items())
    return f"\nCEPHES_{table} = {{\n{rows}}}\n"


_POLYNOMIAL_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class {cls}(layers.Layer):
    """torch.special.{name}(x, n) by its recurrence: n truncated toward zero, n < 0 gives 0. ``limit`` is the
    largest degree when n is known at conversion time (a loop of fixed length), else the loop runs to max(n)."""

    def __init__(self, limit=None, **options):
        super().__init__(**options)
        self.limit = limit

    def call(self, x, n):
        x, n = x + ops.zeros_like(n), n + ops.zeros_like(x)
        n = ops.where(ops.isfinite(n), ops.trunc(n), -1.0)
        t = {t}
        p, q = ops.ones_like(x), {first}
        out = ops.where(n == 0.0, p, ops.where(n == 1.0, q, ops.zeros_like(x)))

        def step(i, p, q, out):
            k = ops.cast(i, x.dtype)
            p, q = q, {step}
            return i + 1, p, q, ops.where(n == k + 1.0, q, out)

        top = self.limit if self.limit is not None else ops.cast(ops.max(n), "int32")
        out = ops.while_loop(lambda i, p, q, out: i < top, step, (1, p, q, out))[3]{closed}
        return {result}

    def get_config(self):
        return {{**super().get_config(), "limit": self.limit}}
'''


_CLOSED = """
        theta = ops.arccos(ops.clip(t, -1.0, 1.0))
        out = ops.where((n > {above}) & (ops.abs(t) < 1.0), {form}, out)"""


def polynomial_layer(name) -> tuple:
    """(class name, source) of the layer computing the ``POLYNOMIAL_TABLE`` row ``name``."""
    shifted, first, step = POLYNOMIAL_TABLE[name]
    cls = "".join(word.capitalize() for word in name.split("_"))
    result = f"ops.where(n > {HERMITE_LIMIT}.0, float('nan'), out)" if name.startswith("hermite") else "out"
    closed = ""
    if name in CLOSED_FORMS:
        above, form = CLOSED_FORMS[name]
        closed = _CLOSED.format(above=float(above), form=form.replace("cos(", "ops.cos(").replace("sin(", "ops.sin("))
    return cls, _POLYNOMIAL_LAYER.format(cls=cls, name=name, t="x + x - 1.0" if shifted else "x", first=first,
                                         step=step, closed=closed, result=result)
