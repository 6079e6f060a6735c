"""A Keras call's arguments by parameter name, bound as Keras binds them.

Note [keras call arguments]: Keras records a call's arguments as the user wrote them, positional or
keyword (``layers.Softmax()(x, m)`` and ``layers.Softmax()(x, mask=m)`` are the same call), and binds them
to ``layer.call``'s signature when it runs. Import rules read them the same way, once, through
``bind_arguments`` (``KerasCall.arg("mask")``), never by position in ``args`` or by key in ``kwargs``
alone: a rule that looked only at ``kwargs["mask"]`` silently dropped a mask given positionally.
``**kwargs`` parameters are spread into the result; ``*args`` ones stay a tuple under their name. A call
the signature cannot bind (Keras passes some arguments itself) keeps its keywords and names the leading
positionals in order.

Example:
    >>> bind_arguments(keras.layers.Softmax(), (x, m), {})
    {'inputs': x, 'mask': m}
"""
from __future__ import annotations

import inspect

import numpy as np

__all__ = ["bind_arguments", "BoundArguments", "read_weight", "rule_key"]


def _signature(operation):
    try:
        return inspect.signature(operation.call)
    except (TypeError, ValueError, AttributeError):  # a builtin or C-level callable: no signature to read
        return None


def bind_arguments(operation, args, kwargs) -> dict:
    """{parameter name: value} for ``operation.call(*args, **kwargs)`` (Note [keras call arguments]).

    Example: ``bind_arguments(keras.layers.LSTM(3), (x, states), {"mask": m})`` is
    ``{"sequences": x, "initial_state": states, "mask": m}``.
    """
    signature = _signature(operation)
    if signature is None:
        return dict(kwargs)
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        named = [p.name for p in signature.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return {**dict(zip(named, args)), **kwargs}
    out = {}
    for name, value in bound.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[name] = value
    return out


class BoundArguments:
    """The argument readers of ``KerasCall`` (frontends/keras/__init__.py), which sets ``layer``, ``node`` and
    ``bound``; ``arg`` (``call.arg("mask")``) is every frontend's, from ``ImportCall`` (frontends/call.py)."""

    def operands(self, n) -> list:
        """The first ``n`` parameters' arguments in the signature's order, each given positionally or by keyword:
        ``x, indices = call.operands(2)`` for ``keras.ops.take(x, indices=i)``."""
        return list(self.bound.values())[:n]

    def passed(self, name) -> bool:
        """True when the call gives parameter ``name`` a value, even one portx did not convert (a Keras mask)."""
        arguments = getattr(self.node, "arguments", None)
        return arguments is not None and bind_arguments(self.layer, arguments.args, arguments.kwargs).get(name) \
            is not None


def rule_key(operation) -> str:
    """The IMPORT_RULES["keras"] key: the class name for layers, ``"ops." + name`` for keras.ops."""
    import keras

    name = type(operation).__name__
    return name if isinstance(operation, keras.layers.Layer) else f"ops.{name}"


def read_weight(var) -> np.ndarray:
    """A layer weight as NumPy: a rule's own copy of a small one (to reorder in place: GRU's bias), a read-only
    view of a large one (Note [lazy relayout] in ops/_jax.py: the IR then holds no second copy of the model)."""
    array = np.asarray(var.value if hasattr(var, "value") else var)
    return array if array.nbytes >= 1 << 20 else array.copy()
