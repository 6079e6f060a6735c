"""``ImportCall``: what an import rule sees for one call of its source, the base of every frontend's call.

Each frontend package subclasses it (``TorchCall``, ``KerasCall``, ``OnnxCall``, ``JaxCall``) over the ``GraphBuilder``
(ir/builder.py) its walk emits into (Note [import calls]).

Example:
    >>> call = TorchCall(lowering, fx_node)         # an ImportCall
    >>> y = call.emit(LINEAR, [call.arg("input"), call.const(weight, "weight")])
"""
from __future__ import annotations

import numpy as np

from ..errors import Unsupported
from ..ir import GraphBuilder, Value

__all__ = ["ImportCall"]


class ImportCall:
    """What an import rule sees for one call of its source, whichever the framework.

    Note [import calls]: each frontend walks its source (an fx graph, Keras' call records, an ONNX graph, a jaxpr)
    and hands each call to the rule registered for it as a subclass of this class (``TorchCall``, ``KerasCall``,
    ``OnnxCall``, ``JaxCall``). What every rule needs is here, written once: ``emit`` appends a node to the
    walk's ``builder`` under the call's ``scope``, naming its outputs after ``hint`` (the builder derives a name
    from the scope when it is empty); ``const`` stores a constant named ``prefix.hint`` (``param`` is the same, so
    a helper written for one frontend serves the others); ``arg`` reads an argument bound by name (``bound``);
    ``unsupported`` stops the rule; ``dropped`` records an identity at inference. A subclass adds the readers of
    its own source (``OnnxCall.attr``, ``JaxCall.params``, ``KerasCall.weight``) and overrides ``const`` where a
    constant needs more (a shared Keras layer's weights stored once, a JAX weight's trainability).

    Example (a rule, any frontend)::

        y = call.emit(LINEAR, [x, call.const(weight, "weight")])
    """

    def __init__(self, builder: GraphBuilder, scope: str = "", hint: str = "", prefix: str | None = None):
        self.builder, self.scope, self.hint = builder, scope, hint
        self.prefix = hint if prefix is None else prefix  # parameter names: ``prefix.hint``
        self.bound = {}  # argument name -> value (an IR Value for tensors), where the source binds them by name

    def emit(self, op, inputs, attrs=None, hint: str = ""):
        """Append ``op(inputs) {attrs}`` under this call's scope; returns the output Value, or a list for several."""
        return self.builder.emit(op, list(inputs), dict(attrs or {}), self.scope, hint or self.hint)

    def const(self, array, hint: str = "const") -> Value:
        """A new stored constant (a scalar operand, an index table, a re-arranged weight)."""
        return self.builder.param(f"{self.prefix}.{hint}" if self.prefix else hint, np.asarray(array))

    def param(self, array, hint: str = "const") -> Value:
        """A stored parameter: ``const`` by its other name, the one Keras rules (and helpers they share) use."""
        return self.const(array, hint)

    def arg(self, name, default=None):
        """The argument bound to parameter ``name``, positional or keyword (``default`` when absent or None)."""
        value = self.bound.get(name, default)
        return default if value is None else value

    def unsupported(self, reason: str):
        """Stop this rule: the variant cannot be expressed (collected, reported with exit 3)."""
        raise Unsupported(reason)

    def dropped(self, value, kind: str):
        """Record that this call (``kind``, e.g. Dropout) is the identity at inference, after ``value``."""
        row = {"scope": self.scope, "kind": kind, "after": value.name}
        if row not in self.builder.dropped:
            self.builder.dropped.append(row)
