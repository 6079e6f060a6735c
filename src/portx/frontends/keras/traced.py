"""Composite Keras layers (no import rule of their own) traced with JAX and inlined into the functional walk.

Note [keras composite layers]: libraries such as keras-hub build their models from layers whose ``call`` is
made of other layers and ``keras.ops`` (``TransformerEncoder``, ``ViTPatchingAndEmbedding``,
``ReversibleEmbedding``). Inside a functional graph Keras records only the outer call, so the walker cannot
see the sublayers. A layer without an import rule is therefore traced: ``layer.stateless_call`` runs under
``jax.make_jaxpr`` on abstract inputs of the IR's static shapes, with the layer's variables as jaxpr inputs,
in inference mode (Note in keras_subclassed.py), and ``inline_jaxpr`` lowers the result into the walker's
graph with the layer's scope in front of JAX's name stack (``vit_encoder.transformer_block_0.mha.query``).
Variables become parameters named by their Keras path under the layer's scope; a variable read by two
traced layers (tied embeddings) is stored once. A primitive without a rule fails the layer (keyed by its
class, naming the primitive), and so does a call JAX cannot trace (a Python-side cache, a branch on a
tensor's value); both are collected with the walker's other failures. A ``Lambda`` layer is traced the same way:
one reaches the walker only from a live model (the user's own code) or from a file Keras loaded with
``safe_mode=False`` (``--unsafe-keras``, the user's trust; Note [keras safe mode] in files.py), so its code has
run already, and the emitted model holds the ops it computes, not its Python.

Example:
    >>> outs = trace_layer(walker, node, "encoder", [x_value])  # inside _Walker.visit
"""
from __future__ import annotations

import contextlib
import re

from ...errors import Unsupported
from ..jax import Const, inline_jaxpr
from .sublayers import SublayerCalls
from .subclassed import inference_context, param_name

__all__ = ["trace_layer", "trace_function", "traceable"]


def traceable(operation) -> bool:
    """True for a Keras layer whose ``call`` can be traced (Lambda too: Note [keras composite layers])."""
    import keras

    # trusted: a Lambda's function runs when traced; it reaches here only from a live model or --unsafe-keras
    return isinstance(operation, keras.layers.Layer) and not isinstance(operation, keras.layers.InputLayer)


def _cause(exc) -> str:
    """``exc`` as one short line, without Keras' colour codes and "Exception encountered when calling" wrapper."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Exception encount")]
    return f"{type(exc).__name__}: {lines[0][:160] if lines else ''}"


def _missing(failures, scope) -> str:
    """What a traced layer needs: ``traced through; no import rule for JAX primitive tile (x2) at vit.embed``."""
    parts = []
    for (primitive, reason), scopes in failures.items():
        count = f" (x{len(scopes)})" if len(scopes) > 1 else ""
        where = f" at {scopes[0]}" if scopes[0] and scopes[0] != scope else ""
        parts.append(f"{primitive}{count}{where}" + (f": {reason}" if reason else ""))
    return "traced through its call; no import rule for JAX primitive " + ", ".join(parts[:3]) + (
        f" and {len(parts) - 3} more" if len(parts) > 3 else "")


def _variable_name(variable, layer, scope) -> str:
    """``encoder/dense/kernel`` of layer ``encoder`` at scope ``m.encoder`` -> ``m.encoder.dense.kernel``."""
    rest = param_name(getattr(variable, "path", variable.name), layer.name)
    return f"{scope}.{rest}" if scope else rest


def trace_layer(walker, node, scope, inputs) -> list:
    """The output Values of ``node``'s layer call, traced (Note [keras composite layers]) with its known
    sublayers kept whole (Note [keras sublayer calls]), else traced all through; Unsupported when JAX cannot
    trace it, with the layer named by the caller."""
    import keras

    if keras.backend.backend() != "jax":
        raise Unsupported(f"composite layers are traced with JAX, but Keras runs on {keras.backend.backend()}; "
                          "set KERAS_BACKEND=jax")
    calls = SublayerCalls(node.operation, walker)
    while calls.known:
        saved = _snapshot(walker)
        try:
            return _traced(walker, node, scope, inputs, calls)
        except Unsupported:
            _restore(walker, saved)  # the failed try's nodes and names are undone
            if not calls.failed & {id(sub) for sub in calls.known}:
                break  # not a sublayer rule that failed: trace all through
            calls = SublayerCalls(node.operation, walker, exclude=calls.failed)
    return _traced(walker, node, scope, inputs, None)


def _snapshot(walker) -> tuple:
    b = walker.builder
    return (len(b.nodes), dict(b.params), dict(b.param_values), set(b.taken), len(b.trainable), len(b.dropped),
            {k: list(v) for k, v in walker.shared.items()}, dict(walker.variables))


def _restore(walker, saved):
    b = walker.builder
    nodes, b.params, b.param_values, b.taken, trainable, dropped, walker.shared, walker.variables = saved
    del b.nodes[nodes:], b.trainable[trainable:], b.dropped[dropped:]


def _traced(walker, node, scope, inputs, calls) -> list:
    import jax
    import keras

    layer = node.operation
    tensors = list(node.arguments.keras_tensors)
    slots = {id(t): i for i, t in enumerate(tensors)}
    trainable, frozen = list(layer.trainable_variables), list(layer.non_trainable_variables)
    variables = trainable + frozen
    wants_training = getattr(layer, "_call_has_training_arg", False)

    def traced(values, *arrays):
        args, kwargs = node.arguments.convert(lambda t: arrays[slots[id(t)]] if id(t) in slots else t)
        kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        if wants_training:
            kwargs["training"] = False
        with inference_context(layer):
            outputs, _ = layer.stateless_call(values[:len(trainable)], values[len(trainable):], *args, **kwargs)
        return keras.tree.flatten(outputs)

    specs = [jax.ShapeDtypeStruct(tuple(v.type.shape), v.type.dtype) for v in inputs]
    try:
        with calls.intercepted() if calls else contextlib.nullcontext():
            closed = jax.make_jaxpr(traced)([v.value for v in variables], *specs)
    except Exception as exc:  # tracing runs the layer's Python code: any exception means "cannot trace"
        raise Unsupported(f"its call cannot be traced with JAX ({_cause(exc)}); portx converts a layer's stateless "
                          "inference call: rebuild the model without a Python-side cache or state and without "
                          "Python branches on tensor values") from None
    consts = []
    for i, variable in enumerate(variables):
        const = Const(variable.value, _variable_name(variable, layer, scope), i < len(trainable))
        const.value = walker.variables.get(id(variable))
        consts.append(const)
    outs, failures = inline_jaxpr(walker.builder, closed, consts + list(inputs), scope,
                                  hooks=calls.hooks if calls else None)
    if failures:
        raise Unsupported(_missing(failures, scope))
    for variable, const in zip(variables, consts):
        if const.value is not None:
            walker.variables.setdefault(id(variable), const.value)
            walker.weight_paths.setdefault(const.value.name, getattr(variable, "path", variable.name))
    return outs


def trace_function(builder, fn, inputs, scope) -> "Value":  # noqa: F821
    """One output of ``fn`` (keras.ops / JAX code, no weights) on ``inputs``, traced and inlined into ``builder``."""
    import jax

    specs = [jax.ShapeDtypeStruct(tuple(v.type.shape), v.type.dtype) for v in inputs]
    try:
        closed = jax.make_jaxpr(fn)(*specs)
    except Exception as exc:  # user code: any exception means "cannot trace"
        raise Unsupported(f"function {getattr(fn, '__name__', fn)!r} cannot be traced with JAX ({_cause(exc)})") \
            from None
    if len(closed.jaxpr.outvars) != 1:
        raise Unsupported(f"function {getattr(fn, '__name__', fn)!r} returns {len(closed.jaxpr.outvars)} values")
    outs, failures = inline_jaxpr(builder, closed, list(inputs), scope)
    if failures:
        raise Unsupported(_missing(failures, scope))
    return outs[0]
