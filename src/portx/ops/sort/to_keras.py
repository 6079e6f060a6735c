"""Keras-JAX emit rules for sorting and running ops, and ``JaxFunction``, the layer for what keras.ops lacks.

Sorting is ``ops.sort`` / ``ops.argsort`` (stable on JAX); descending keeps ties in input order by sorting the
flipped input and flipping back; ``topk`` on the last axis is ``ops.top_k``. Running maximum, minimum and
log-sum-exp have no ``keras.ops`` function: they are ``JaxFunction("lax.cummax", ...)``, a small registered
layer written into model.py that calls the named ``jax.lax`` or ``jax.scipy.special`` function (the target
runs on JAX; special functions such as lgamma and digamma use it too).

Example generated code:
    sort_t = ops.argsort(x, axis=1)
    sort, sort_1 = ops.sort(x, axis=1), ops.cast(sort_t, 'int32')
    cm = JaxFunction('lax.cummax', kwargs={'axis': 1, 'reverse': False})(x)
"""
from __future__ import annotations

from .._util import forward, named_rule
from ..sort import SCANS, SEARCHSORTED, SORT, TOPK

__all__ = ["JAX_FUNCTION_LAYER", "jax_function"]

JAX_FUNCTION_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class JaxFunction(layers.Layer):
    """One jax.lax or jax.scipy.special function that keras.ops lacks (cummax, gammaln, digamma, ...), by name.

    ``prefix`` are leading arguments (polygamma's order), ``kwargs`` keyword ones. Registered serializable,
    like Constant; the inputs keep their dtypes (no autocast).
    """

    def __init__(self, fn, prefix=(), kwargs=None, **options):
        options.pop("autocast", None)
        super().__init__(autocast=False, **options)
        if fn.split(".")[0] not in ("lax", "special"):
            raise ValueError(f"JaxFunction: unknown function {fn!r}")
        self.fn, self.prefix, self.fn_kwargs = fn, list(prefix), dict(kwargs or {})

    def call(self, *xs):
        import jax
        import jax.scipy.special  # noqa: F401
        module, name = self.fn.split(".")
        found = getattr({"lax": jax.lax, "special": jax.scipy.special}[module], name)
        return found(*self.prefix, *xs, **self.fn_kwargs)

    def compute_output_spec(self, *xs):
        # traced on dense stand-ins: Keras marks ops.multiply(x, constant) sparse, and would trace a sparse array
        return super().compute_output_spec(*(keras.KerasTensor(x.shape, x.dtype) for x in xs))

    def get_config(self):
        return {**super().get_config(), "fn": self.fn, "prefix": self.prefix, "kwargs": self.fn_kwargs}
'''


def jax_function(k, fn: str, refs, prefix=(), **kwargs) -> str:
    """``JaxFunction(fn, ...)(*refs)`` as an expression (defining the layer class in model.py once)."""
    k.define("JaxFunction", JAX_FUNCTION_LAYER)
    pairs = ", ".join(f"{k.lit(key)}: {k.lit(value)}" for key, value in kwargs.items())
    extra = (f", prefix={k.lit(list(prefix))}" if prefix else "") + (f", kwargs={{{pairs}}}" if kwargs else "")
    return f"JaxFunction({k.lit(fn)}{extra})({', '.join(refs)})"


def _sort_indices(node, k, x, axis, descending) -> str:
    """Stable argsort; descending sorts the flipped input and flips back (ties stay in input order)."""
    if not descending:
        return k.temp(node, f"ops.argsort({x}, axis={axis})")
    n = k.lit(node.inputs[0].type.shape[axis])
    flipped = k.temp(node, f"ops.argsort(ops.flip({x}, axis={axis}), axis={axis})")
    return k.temp(node, f"ops.subtract({n} - 1, ops.flip({flipped}, axis={axis}))")


def _cast(k, expr, dtype) -> str:
    return f"ops.cast({expr}, {k.lit(dtype)})"


@SORT.emits("keras-jax")
def _sort_to_keras(node, k):
    x, a = k.ref(node.inputs[0]), node.attrs
    idx = _sort_indices(node, k, x, a["axis"], a["descending"])
    values = f"ops.sort({x}, axis={a['axis']})" if not a["descending"] else \
        f"ops.take_along_axis({x}, {idx}, axis={a['axis']})"
    k.assign(node, f"{values}, {_cast(k, idx, node.outputs[1].type.dtype)}")


@TOPK.emits("keras-jax")
def _topk_to_keras(node, k):
    x, a = k.ref(node.inputs[0]), node.attrs
    dtype = node.outputs[1].type.dtype
    if a["largest"] and a["axis"] == node.inputs[0].type.rank - 1:
        both = k.temp(node, f"ops.top_k({x}, {a['k']})")
        k.assign(node, f"{both}[0], {_cast(k, f'{both}[1]', dtype)}")
        return
    idx = _sort_indices(node, k, x, a["axis"], a["largest"])
    if a["axis"]:
        idx = k.temp(node, f"{idx}[{':, ' * a['axis']}:{a['k']}]")
    else:  # a KerasTensor refuses a slice of its batch axis
        idx = k.temp(node, f"ops.take({idx}, {k.lit(list(range(a['k'])))}, axis=0)")
    k.assign(node, f"ops.take_along_axis({x}, {idx}, axis={a['axis']}), {_cast(k, idx, dtype)}")


@SEARCHSORTED.emits("keras-jax")
def _searchsorted_to_keras(node, k):
    s, v = (k.ref(x) for x in node.inputs)
    side = "right" if node.attrs["right"] else "left"
    k.assign(node, _cast(k, f"ops.searchsorted({s}, {v}, side={side!r})", node.outputs[0].type.dtype))


#: running op -> its JaxFunction (keras.ops has only cumsum and cumprod)
_SCAN_FUNCTIONS = {"cummax": "lax.cummax", "cummin": "lax.cummin", "logcumsumexp": "lax.cumlogsumexp"}


def _scan_rule(name):
    def emit(node, k):
        x, axis = k.ref(node.inputs[0]), forward(node)
        if name in _SCAN_FUNCTIONS:
            k.assign(node, jax_function(k, _SCAN_FUNCTIONS[name], [x], axis=axis))
        else:
            k.assign(node, f"ops.cumprod({x}, axis={axis})")
    return named_rule(emit, name, "to_keras")


for _name, _op in SCANS.items():
    _op.emits("keras-jax")(_scan_rule(_name))
