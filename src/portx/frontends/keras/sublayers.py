"""Known sublayers of a traced Keras layer, kept whole: each becomes one opaque equation, lowered by its import rule.

Note [keras sublayer calls]: tracing a composite layer (Note [keras composite layers]) would otherwise take its
``Dense``, ``LayerNormalization`` or ``MultiHeadAttention`` apart into dot_generals and reductions. While the
layer is traced, every sublayer whose class has a Keras import rule has its ``call`` replaced (on the instance,
undone afterwards) by one that binds ``portx_keras_layer_call``: a primitive whose abstract value is the real
call's (``jax.eval_shape``) and whose parameter is a key into this trace's ``SublayerCalls``, which keeps the
layer and its non-tensor arguments. ``inline_jaxpr`` hands that equation to ``SublayerCalls.lower``, which runs
the layer's import rule on a ``KerasCall`` as the functional walk would (weights named ``SCOPE.weight``). A
sublayer whose rule refuses its variant (an activation given as a Python function) is traced through on the
next try; when anything else fails, the caller traces the layer without interception.

Example:
    >>> calls = SublayerCalls(layer, walker)
    >>> with calls.intercepted():
    ...     closed = jax.make_jaxpr(traced)(values, *specs)
    >>> outs, failures = inline_jaxpr(builder, closed, args, scope, hooks=calls.hooks)
"""
from __future__ import annotations

import contextlib
import itertools
from types import SimpleNamespace

import jax
from jax.extend.core import Primitive

from ...errors import Unsupported
from ...ir import IMPORT_RULES
from .call_args import rule_key

__all__ = ["SublayerCalls", "LAYER_CALL"]

#: the opaque primitive a known sublayer's call binds while its parent is traced (never evaluated)
LAYER_CALL = Primitive("portx_keras_layer_call")
LAYER_CALL.multiple_results = True
_ACTIVE = {}  # key -> SublayerCalls entry, for abstract evaluation while a trace runs
_KEYS = itertools.count()


def _abstract(*avals, key):
    return [jax.core.ShapedArray(a.shape, a.dtype) for a in _ACTIVE[key]["avals"]]


LAYER_CALL.def_abstract_eval(_abstract)


def _is_tensor(leaf) -> bool:
    return hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not isinstance(leaf, (bool, int, float, str))


class SublayerCalls:
    """The known sublayers of ``layer`` and the calls recorded while it is traced."""

    def __init__(self, layer, walker, exclude=()):
        import keras

        self.walker, self.entries, self.failed = walker, {}, set(exclude)
        rules = IMPORT_RULES.get("keras", {})
        self.known = [sub for sub in layer._flatten_layers(include_self=False, recursive=True)
                      if isinstance(sub, keras.layers.Layer) and rule_key(sub) in rules and id(sub) not in exclude]

    @property
    def hooks(self) -> dict:
        """The ``inline_jaxpr`` hook for LAYER_CALL."""
        return {LAYER_CALL.name: self.lower}

    @contextlib.contextmanager
    def intercepted(self):
        """Every known sublayer's ``call`` binds LAYER_CALL inside this block."""
        saved = [(sub, sub.__dict__.get("call")) for sub in self.known]
        for sub in self.known:
            object.__setattr__(sub, "call", self._binder(sub, sub.call))
        try:
            yield
        finally:
            for sub, before in saved:
                object.__delattr__(sub, "call")
                if before is not None:
                    object.__setattr__(sub, "call", before)
            for key in self.entries:
                _ACTIVE.pop(key, None)

    def _binder(self, sub, original):
        def call(*args, **kwargs):
            leaves, tree = jax.tree.flatten((args, kwargs))
            slots = [i for i, leaf in enumerate(leaves) if _is_tensor(leaf)]

            def run(*tensors):
                filled = list(leaves)
                for i, t in zip(slots, tensors):
                    filled[i] = t
                a, k = jax.tree.unflatten(tree, filled)
                return original(*a, **k)

            tensors = [leaves[i] for i in slots]
            out_leaves, out_tree = jax.tree.flatten(jax.eval_shape(run, *tensors))
            key = next(_KEYS)
            self.entries[key] = _ACTIVE[key] = {"layer": sub, "leaves": leaves, "tree": tree, "slots": slots,
                                                "avals": out_leaves}
            return jax.tree.unflatten(out_tree, LAYER_CALL.bind(*tensors, key=key))

        return call

    def lower(self, eqn, values, scope) -> list:
        """The recorded call's import rule on a KerasCall (Note [keras sublayer calls])."""
        import keras

        entry = self.entries.get(eqn.params["key"])
        if entry is None:
            raise Unsupported("a sublayer call recorded by another trace")
        leaves = list(entry["leaves"])
        for i, value in zip(entry["slots"], values):
            leaves[i] = value
        args, kwargs = jax.tree.unflatten(entry["tree"], leaves)
        kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        layer = entry["layer"]
        outputs = [keras.KerasTensor(tuple(a.shape), str(a.dtype)) for a in entry["avals"]]
        node = SimpleNamespace(operation=layer, outputs=outputs, arguments=SimpleNamespace(keras_tensors=[]))
        try:
            call = self.walker.call(node, scope, list(args), kwargs, list(values))  # keras.py's KerasCall
            result = IMPORT_RULES["keras"][rule_key(layer)][1](call)
        except Exception as exc:  # noqa: BLE001 - a variant its rule refuses: that sublayer is traced through
            self.failed.add(id(layer))
            raise Unsupported(f"{rule_key(layer)} at {scope}: {exc}") from exc
        return list(result) if isinstance(result, (list, tuple)) else [result]
