"""Subclassed Keras models (no functional graph) -> IR, by tracing ``stateless_call`` under KERAS_BACKEND=jax.

The model's variables are passed to ``jax.make_jaxpr`` as arguments, so the jaxpr reads them as
inputs that ``lower_jaxpr`` stores as named parameters (``m/dense_1/kernel`` -> ``dense_1.kernel``;
the model's own name is dropped, as Keras' per-layer scopes do not include it). Inference mode is
forced: ``training=False`` is passed when ``call`` accepts it, and the Keras call context says
``training=False`` to every nested layer either way.

Example:
    >>> graph = lower_keras_subclassed(model, [np.zeros((1, 32, 32, 3), np.float32)])
"""
from __future__ import annotations

import contextlib
import inspect

import jax
import numpy as np

from ...errors import BadInput, first_line
from ...ir import Graph
from ..base import KERAS, Differentiable, SourceBase
from ..input_spec import resize_array
from ..jax import lower_jaxpr
from ..jax.symbols import Mismatch, compact, read_symbols, symbolic_specs

__all__ = ["call_args", "lower_keras_subclassed", "needs_tracing", "param_name", "inference_context",
           "SubclassedKerasSource", "trace_jaxpr", "traced_symbols"]

#: the scales an axis other than the batch is traced at (Note [scaled symbols] in frontends/jax/symbols.py)
_SCALES = (1, 2, 4, 8, 16, 32)


def needs_tracing(model) -> bool:
    """True for a Keras model or layer with no functional graph (neither Functional nor Sequential).

    Example: ``needs_tracing(MyModel())`` -> True; ``needs_tracing(keras.Model(inputs, outputs))`` -> False.
    """
    import keras
    from keras.src.models.functional import Functional

    return isinstance(model, keras.layers.Layer) and not isinstance(model, (Functional, keras.Sequential))


def param_name(path: str, model_name: str) -> str:
    """Dotted name from a Keras variable path: ``param_name("m/dense_1/kernel", "m")`` -> ``dense_1.kernel``."""
    parts = path.split("/")
    if len(parts) > 1 and parts[0] == model_name:
        parts = parts[1:]
    return ".".join(parts)


@contextlib.contextmanager
def inference_context(model):
    """A Keras call context with training=False, seen by every layer called inside (Note in module docstring)."""
    from keras.src.backend.common import global_state
    from keras.src.layers.layer import CallContext

    previous = global_state.get_global_attribute("current_call_ctx")
    context = CallContext(entry_layer=model)
    context.training = False
    global_state.set_global_attribute("current_call_ctx", context)
    try:
        yield
    finally:
        global_state.set_global_attribute("current_call_ctx", previous)


def _input_names(model, count) -> list:
    """Names of ``call``'s first ``count`` positional parameters (``input_i`` where there are none)."""
    params = [p.name for p in inspect.signature(model.call).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("training", "mask")]
    return [params[i] if i < len(params) else f"input_{i}" for i in range(count)]


def call_args(model, inputs) -> tuple:
    """``call``'s positional arguments for ``inputs``: one each when ``call(self, x, y)`` takes them so,
    else one list (``call(self, inputs)``); a single input is passed alone. Tracing, building and running
    the source all call the model this one way."""
    inputs = list(inputs)
    if len(inputs) == 1:
        return tuple(inputs)
    params = [p for p in inspect.signature(model.call).parameters.values() if p.name not in ("training", "mask")]
    spread = any(p.kind == p.VAR_POSITIONAL for p in params) or len(
        [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= len(inputs)
    return tuple(inputs) if spread else (inputs,)


def _host_array(array) -> np.ndarray:
    """NumPy input in a dtype JAX keeps without x64 (int64 -> int32, float64 -> float32)."""
    array = np.asarray(array)
    narrow = {"int64": "int32", "uint64": "uint32", "float64": "float32"}
    return array.astype(narrow[str(array.dtype)]) if str(array.dtype) in narrow and \
        not jax.config.jax_enable_x64 else array


def lower_keras_subclassed(model, example_arrays, name=None, keep=None) -> Graph:
    """Trace ``model.stateless_call`` on ``example_arrays`` with jax.make_jaxpr and lower the jaxpr.

    The model is built by one eager call when it is not built yet. Raises UnsupportedOps listing
    every primitive without a rule; BadInput when the backend is not JAX or the call cannot be traced.
    ``keep``, a dict, gets what a symbolic trace needs (Note [jax symbols] in frontends/jax/symbols.py): the traced
    function, its weights and inputs, the jaxpr and the lowering's record.
    Example: ``lower_keras_subclassed(MyModel(), [x])``.
    """
    import keras

    if keras.backend.backend() != "jax":
        raise BadInput(f"model {model.name}: subclassed models are traced with JAX, but Keras runs on "
                       f"{keras.backend.backend()}", hint="set KERAS_BACKEND=jax before importing keras")
    arrays = [_host_array(a) for a in example_arrays]
    if not model.built:
        model(*call_args(model, arrays))
    trainable, frozen = list(model.trainable_variables), list(model.non_trainable_variables)
    kwargs = {"training": False} if getattr(model, "_call_has_training_arg", False) else {}

    def traced(values, *inputs):
        with inference_context(model):
            outputs, _ = model.stateless_call(values[:len(trainable)], values[len(trainable):],
                                              *call_args(model, inputs), **kwargs)
        return outputs

    variables = trainable + frozen
    try:
        closed = trace_jaxpr(traced, [v.value for v in variables], *arrays)
    except Exception as exc:  # tracing runs user code: any exception means "cannot trace"
        first = first_line(exc, 300, type(exc).__name__)
        raise BadInput(f"model {model.name}: tracing {type(model).__name__}.call failed: {first}",
                       hint="make call() traceable by JAX (no Python branches on tensor values, static shapes)") \
            from exc
    params = [(param_name(v.path, model.name), np.asarray(v.value)) for v in variables]
    record = None if keep is None else []
    graph = lower_jaxpr(closed, _input_names(model, len(arrays)), params, name or model.name,
                        trainable=[name for name, _ in params[:len(trainable)]], record=record)
    if keep is not None:
        keep.update(fn=traced, weights=[v.value for v in variables], arrays=arrays, closed=closed,
                    record=compact(record))
    sources = {name: v.path for (name, _), v in zip(params, trainable)}  # Note [gradient pairing]
    return graph.replace(meta={**graph.meta, "param_sources": sources})


def trace_jaxpr(fn, *args):
    """``jax.make_jaxpr(fn)(*args)``; where the call needs a concrete value of a constant (Keras turns
    ``ops.hamming(4)``'s int into a tensor, which JAX >= 0.7 stages as a tracer), traced again with JAX's eager
    constant folding (``jax.ensure_compile_time_eval``), so that what depends on constants alone is computed
    once and read as a constant. Example: ``trace_jaxpr(lambda x: x * keras.ops.hamming(4), x)``."""
    try:
        return jax.make_jaxpr(fn)(*args)
    except jax.errors.ConcretizationTypeError:
        with jax.ensure_compile_time_eval():
            return jax.make_jaxpr(fn)(*args)


def traced_symbols(kept, sites):
    """``JaxSymbols`` of ``sites`` ((input, axis) pairs, one symbol) from tracing ``kept["fn"]`` again with them
    symbolic, matched to the lowered trace ``kept`` (``lower_keras_subclassed``'s); else why not, in one line. An
    axis that is not the batch is tried at scales 2, 4, ... too (Note [scaled symbols] in frontends/jax/symbols.py)."""
    sizes = {kept["arrays"][i].shape[axis] for i, axis in sites}
    if len(sizes) != 1:
        return f"its axes have different sizes ({sorted(sizes)})"
    size, why = sizes.pop(), None
    for scale in (1,) if all(axis == 0 for _, axis in sites) else _SCALES:
        if scale > size:
            break
        specs = symbolic_specs(kept["arrays"], sites, scale)
        try:
            closed = trace_jaxpr(kept["fn"], kept["weights"], *specs)
            return read_symbols(kept["closed"], closed, kept["record"], [(v, s.shape) for v, s in zip(
                kept["inputs"], specs)], size, scale)
        except Mismatch as exc:
            why = why or f"its symbolic trace differs from the static one: {exc}"
        except Exception as exc:  # noqa: BLE001 - tracing runs user code: any failure means "not symbolically"
            why = why or f"JAX cannot trace it with a symbolic size ({first_line(exc, 200, type(exc).__name__)})"
    return why


def _check_float_dtypes(model, arrays):
    """BadInput for a float example in another float type than the model computes in or keeps its weights in
    (float64, NumPy's default, is narrowed to float32)."""
    compute = str(getattr(model, "compute_dtype", None) or "float32")
    accepted = {compute, str(getattr(model, "variable_dtype", None) or compute), "float64"}
    for i, array in enumerate(arrays):
        dtype = str(array.dtype)
        if dtype.startswith(("float", "bfloat")) and dtype not in accepted:
            raise BadInput(f"example input {i}: dtype {dtype} given, but Keras model {model.name} computes in "
                           f"{compute}", hint=f"pass {compute} arrays (x.astype('{compute}')); portx converts for "
                                              "the model's own dtype")


class SubclassedKerasSource(SourceBase):
    """A subclassed Keras model with example inputs: runs the model and lowers it by tracing.

    Example:
        >>> src = SubclassedKerasSource(model, [np.zeros((1, 8), np.float32)])
        >>> graph = src.lower("model")
    """

    def __init__(self, model, example_arrays, label=None):
        self.model = model
        self.example_arrays = [np.asarray(a) for a in example_arrays]
        _check_float_dtypes(model, self.example_arrays)
        self.label = label or model.name
        self.notes = ["subclassed Keras model: lowered by tracing its JAX computation (scopes from name scopes)"]
        self.pinned = {}  # JAX pins no dim of a symbolic trace: it traces symbolically or fails (Note [jax symbols])
        self.fallbacks = []  # why a free dim was found by two lowerings, one line each (report warnings)
        self._kept, self._symbols = None, {}

    def run(self, *arrays) -> list:
        """The model's outputs in inference mode on NumPy inputs."""
        import keras

        flat = [np.asarray(a) for a in arrays]
        with inference_context(self.model):
            out = self.model(*call_args(self.model, flat))
        return [np.asarray(t) for t in keras.tree.flatten(out)]

    def differentiable(self) -> Differentiable:
        """The Keras model, differentiated with ``jax.grad`` (frontends/base.py)."""
        return Differentiable(self.model, KERAS)

    def examples(self) -> list:
        """The example arrays it was traced on."""
        return self.example_arrays

    def pinned_dims(self) -> dict:
        """None pinned: JAX traces symbolically or fails (Note [jax symbols])."""
        return self.pinned

    def fallback_notes(self) -> list:
        """Why a free dim was found by two lowerings, one line each."""
        return self.fallbacks

    def lower(self, name="model", strict_tpu=False):
        """The IR Graph traced from ``model.stateless_call`` (``strict_tpu``: see KerasSource.lower)."""
        self._kept, self._symbols = {}, {}
        graph = lower_keras_subclassed(self.model, self.example_arrays, name=name, keep=self._kept)
        self._kept["inputs"] = list(graph.inputs)
        return graph

    def symbolic(self, sites) -> bool:
        """True when a trace with ``sites`` ((input, axis) pairs) as one symbol matches the lowered one (Note [jax
        symbols]); else the reason is one of ``fallbacks``."""
        found = self._symbols_at(sites)
        if isinstance(found, str):
            names = [v.name for v in self._kept["inputs"]] if self._kept else []
            axes = ", ".join(f"{names[i] if i < len(names) else i}:{axis}" for i, axis in sorted(map(tuple, sites)))
            line = f"{axes} found by two lowerings, not by JAX's symbolic shapes: {found} (Note [jax symbols])"
            self.fallbacks += [line] if line not in self.fallbacks else []
        return not isinstance(found, str)

    def divisor(self, sites) -> int:
        """What the symbolic shapes divide ``sites`` by (Note [divided dims] in session/dims/find.py)."""
        found = self._symbols_at(sites)
        return 1 if isinstance(found, str) else found.divisor()

    def hints(self, sizes):
        """The lowered graph's shapes at ``sizes`` ({(input, axis): size}, one size) from the symbolic trace,
        without lowering again (Note [jax symbols]); None where that trace does not match."""
        found = self._symbols_at(list(sizes)) if len(set(sizes.values())) == 1 else "sizes differ"
        return None if isinstance(found, str) else found.hints(next(iter(sizes.values())))

    def _symbols_at(self, sites):
        """The matched symbolic trace of ``sites`` (JaxSymbols), or why there is none (str); traced once."""
        key = frozenset(map(tuple, sites))
        if key not in self._symbols:
            self._symbols[key] = traced_symbols(self._kept, key) if self._kept else "not lowered yet"
        return self._symbols[key]

    def intermediates(self, arrays, keep=None, release=None) -> dict:
        """Nothing: traced values are not paired with the model's layers."""
        return {}

    def dynamic_dims(self) -> list:
        """None: a subclassed model declares no input shapes (``--dynamic`` declares them)."""
        return []

    def resized(self, sizes):
        """This model traced on the examples cut or repeated to other sizes ({(input index, axis): size}): how a free
        dim is found where the symbolic trace does not settle it (Note [jax symbols] in frontends/jax/symbols.py)."""
        arrays = [resize_array(a, {axis: n for (i, axis), n in sizes.items() if i == k})
                  for k, a in enumerate(self.example_arrays)]
        return SubclassedKerasSource(self.model, arrays, self.label)
