"""Keras frontend: a functional Keras 3 model (Sequential, Functional, nested) -> IR.

Note [keras walk]: Keras records every call of a layer or keras.ops operation as a ``Node`` (``op._inbound_nodes``)
whose ``arguments`` hold the KerasTensors it was called with. The walker visits a model's nodes deepest-first (the
order ``Functional._run_through_graph`` uses), maps each KerasTensor to an IR Value, and calls the import rule
registered under the node's class name: ``IMPORT_RULES["keras"]["Conv2D"]`` for layers, ``"ops.Add"`` for keras.ops
operations (a layer class and an op class may share a name). Nested models are walked in place with dotted scopes
(``block1.conv``). A layer called several times (shared) gets one parameter set: ``KerasCall.param`` returns the
stored Value again for the same layer, hint and array. Unsupported layers are collected and raised together as
UnsupportedOps once the whole model was scanned. A layer without a rule is traced through instead (Note [keras
composite layers] in keras_traced.py).

Note [keras name scopes]: a layer built inside ``keras.name_scope("cell")`` (keras.applications' NASNet opens one
per cell and per branch) has the path ``cell/<layer name>``, and so do its weights (``cell/conv/kernel``); a layer
without a ``build`` (Activation) keeps the scopes it was first called in as ``_parent_path`` only. The walker
records each top-level layer's scopes, ``graph.meta["name_scopes"]``: {layer scope: ``"cell/branch"``}, only where
there are some; the keras-jax emitter opens the same scopes around the layer (targets/keras_jax/scopes.py). A
Sequential builds its layers inside its own scope (``sequential/dense/kernel``): that one is left out, as the
emitted model is a Functional one that opens none (its paths stay ``dense/kernel``, as before). A Sequential
nested as a layer is recorded like a name scope (``convnext_tiny_stem``), and its layers are written under their own
names (Note [nested models' scopes] in targets/keras_jax/scopes.py).

Note [keras layout]: Keras tensors are channels-last while IR conv/pool/norm ops are channels-first (ATen). Rules
wrap such ops in ``to_channels_first`` / ``to_channels_last`` permutes; the layout pass cancels the pairs.

Example:
    >>> graph = lower_keras(model, [TensorType((1, 32, 32, 3), "float32")], name="model")
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import MAX_INPUT_ELEMENTS, BadInput, Unsupported, UnsupportedOps
from ...ir import DTYPES, IMPORT_RULES, GraphBuilder, TensorType, Value
from ...ir.builder import held_weight
from ...ir.validate import IRError
from ...progress import step
from ...ops.shape import PERMUTE
from ..call import ImportCall
from .activations import apply_activation
from .call_args import BoundArguments, bind_arguments, read_weight, rule_key
from .pairs import with_layer_outputs
from ..jax import prune_graph
from .traced import trace_function, trace_layer, traceable

__all__ = ["KerasCall", "lower_keras", "input_types_for", "sequence_limit", "DEFAULT_LENGTH", "rule_key", "is_model", "functional_of", "input_name"]


def is_model(operation) -> bool:
    """True for a nested Functional or Sequential model (walked in place, not looked up)."""
    import keras

    return isinstance(operation, keras.Model) and functional_of(operation) is not None


def functional_of(model):
    """The Functional graph behind ``model`` (Sequential keeps one in ``_functional``), or None."""
    if hasattr(model, "_nodes_by_depth"):
        return model
    return getattr(model, "_functional", None)


class KerasCall(BoundArguments, ImportCall):
    """What an import rule sees for one call of a Keras layer or operation (Note [import calls] in frontends/call.py).

    ``layer`` is the Keras object, ``config`` its ``get_config()``, ``scope`` the dotted layer path,
    ``inputs`` the IR Values of the tensor arguments in call order, ``args`` / ``kwargs`` the call
    arguments with each KerasTensor replaced by its IR Value (``kwargs`` without ``training``), ``bound``
    the same by parameter name (read them with ``arg``: Note [keras call arguments] in keras_call_args.py),
    ``outputs`` the Keras output tensors. Example (Dense)::

        y = call.emit(LINEAR, [call.inputs[0], call.param(call.weight("kernel").T, "weight")])
        return call.activation(y, call.config["activation"])
    """

    def __init__(self, walker, node, scope, args, kwargs, inputs):
        super().__init__(walker.builder, scope, prefix=scope)
        self._walker, self.node, self.layer = walker, node, node.operation
        self.args, self.kwargs, self.inputs = args, kwargs, inputs
        self.bound = bind_arguments(self.layer, args, kwargs)
        self.outputs = list(node.outputs)
        self._config = None
        self._read = []  # (array, trainable, variable path) for each weight of this layer read so far (``weight``)

    @property
    def config(self) -> dict:
        """The layer's ``get_config()`` (computed once)."""
        if self._config is None:
            getter = getattr(self.layer, "get_config", None)
            try:
                self._config = dict(getter()) if getter else {}
            except NotImplementedError:
                self._config = {}
        return self._config

    def out_shape(self, index=0) -> tuple:
        """Keras' shape of output ``index`` with the batch resolved (other unknown dims stay None)."""
        return self._walker.static_shape(self.outputs[index].shape)

    def weight(self, name) -> np.ndarray:
        """A layer weight as float32/int NumPy: ``"kernel"``, ``"bias"``, ``"gamma"``, ``"query/kernel"``."""
        for var in self.layer.weights:
            path = getattr(var, "path", var.name)
            if var.name == name or path.endswith("/" + name):
                array = read_weight(var)
                inputs = {v.type.dtype for v in self.inputs if v is not None}  # float32 (_policy_notes) unless
                if str(array.dtype) in ("float16", "bfloat16") and str(array.dtype) not in inputs:  # inputs are half
                    array = array.astype(np.float32)
                self._read.append((array, bool(getattr(var, "trainable", False) and self.layer.trainable), path))
                return array
        known = [getattr(v, "path", v.name) for v in self.layer.weights]
        raise Unsupported(f"layer has no weight {name!r} (has {known})")

    def has_weight(self, name) -> bool:
        """True when the layer holds a weight called ``name``."""
        return any(v.name == name or getattr(v, "path", v.name).endswith("/" + name) for v in self.layer.weights)

    @property
    def epsilon(self) -> float:
        """``keras.config.epsilon()``, the fuzz factor layers such as Normalization use (ops/ cannot import keras)."""
        import keras

        return float(keras.config.epsilon())

    def const(self, array, hint="const") -> Value:
        """A stored parameter (``param``) named ``SCOPE.hint``; a shared layer gets the same Value back."""
        value = self._walker.param(self.layer, hint, f"{self.scope}.{hint}" if self.scope else hint, array)
        index = held_weight(np.asarray(array), self._read)
        if index is not None and self._read[index][1]:  # Note [gradient pairing] (verification/grad_pairs.py)
            self._walker.builder.trainable.append(value.name)
            self._walker.builder.sources[value.name] = self._read[index][2]
        return value

    def activation(self, value, name, **options) -> Value:
        """Apply a Keras activation by config name (``"relu"``), serialized dict or function;
        ``options`` are its keyword arguments (``approximate=True`` for gelu, ``axis`` for softmax)."""
        return apply_activation(self, value, name, **options)

    def traced(self, fn, *values) -> Value:
        """``fn(*values)`` for a Python function of keras.ops (a custom activation), traced with JAX and inlined
        under this call's scope; Unsupported names what JAX or the rules could not take."""
        return trace_function(self._walker.builder, fn, list(values), self.scope)

    def to_channels_first(self, x) -> Value:
        """Permute NHWC-like (N, *spatial, C) to (N, C, *spatial) for any rank >= 3."""
        rank = x.type.rank
        return self.emit(PERMUTE, [x], {"perm": (0, rank - 1) + tuple(range(1, rank - 1))})

    def to_channels_last(self, x) -> Value:
        """Permute (N, C, *spatial) back to (N, *spatial, C)."""
        rank = x.type.rank
        return self.emit(PERMUTE, [x], {"perm": (0,) + tuple(range(2, rank)) + (1,)})

    def bind_mask(self, value, index=0) -> None:
        """Give output ``index``'s Keras mask (``Embedding(mask_zero=True)``, ``Masking``) the IR Value ``value``,
        a bool tensor that later layers read as their ``mask`` argument (``call.arg("mask")``)."""
        mask = getattr(self.outputs[index], "_keras_mask", None)
        if mask is not None:
            self._walker.masks[id(mask)] = value


class _Walker:
    """Walks one Keras model; holds the builder, the KerasTensor -> Value map and failures."""

    def __init__(self, name, batch):
        self.builder, self.batch = GraphBuilder(name), batch
        self.failures = {}  # (key, reason) -> scopes
        self.shared = {}  # (id(layer), hint) -> list of (array, Value): one weight set per shared layer
        self.variables = {}  # id(keras.Variable) -> Value: weights of traced layers (Note [keras composite layers])
        self.weight_paths = {}  # param -> a traced weight's path: Note [source-named weights] in keras_jax/scopes.py
        self.traced = False  # a layer was traced: a failed try may have left dead nodes
        self.masks = {}  # id(Keras mask tensor) -> bool Value: masks a rule bound (KerasCall.bind_mask)
        self.classes = {}  # layer scope -> its class name (meta["module_classes"]: block classes are named after it)
        self.name_scopes = {}  # layer scope -> the Keras name scopes it was built in (Note [keras name scopes])


    def call(self, node, scope, args, kwargs, inputs) -> KerasCall:
        """The ``KerasCall`` an import rule sees (also made by keras_sublayers.py for a traced layer's sublayers)."""
        return KerasCall(self, node, scope, args, kwargs, inputs)
    def static_shape(self, shape) -> tuple:
        return tuple(self.batch if (d is None and i == 0) else d for i, d in enumerate(shape))

    def param(self, layer, hint, name, array) -> Value:
        """A parameter of ``layer``; the same Value again for a repeated (layer, hint, array)."""
        array = np.asarray(array)
        entries = self.shared.setdefault((id(layer), hint), [])
        for stored, value in entries:
            if stored.shape == array.shape and stored.dtype == array.dtype and np.array_equal(stored, array):
                return value
        value = self.builder.param(name, array)
        entries.append((array, value))
        return value

    def fail(self, key, scope, reason):
        self.failures.setdefault((key, reason), []).append(scope)

    def walk(self, model, in_values, prefix) -> list:
        """Lower ``model``'s graph with its inputs bound to ``in_values``; returns its output Values."""
        import keras

        fn = functional_of(model)
        env = {id(t): v for t, v in zip(fn.inputs, in_values)}
        self.top = self.top if prefix else env  # Note [keras layer outputs]
        done, total = 0, sum(len(nodes) for nodes in fn._nodes_by_depth.values())
        for depth in sorted(fn._nodes_by_depth, reverse=True):
            for node in fn._nodes_by_depth[depth]:
                done += 1
                if node.operation is None or node.is_input:
                    continue
                if not prefix:  # progress.py: the display's layer count (a no-op without one)
                    step(done, total, node.operation.name)
                self.visit(node, env, prefix)
        return [env.get(id(t)) for t in keras.tree.flatten(fn.outputs)]

    def visit(self, node, env, prefix):
        op = node.operation
        scope = f"{prefix}.{op.name}" if prefix else op.name
        inputs = [env.get(id(t)) for t in node.arguments.keras_tensors]
        if is_model(op):
            outs = self.walk(op, inputs, scope) if all(v is not None for v in inputs) else []
            self.bind(node, env, outs)
            return
        key = rule_key(op)
        self.classes.setdefault(scope, type(op).__name__)
        path = getattr(op, "path", None) or ""  # Note [keras name scopes]
        path = path[: -len(op.name) - 1] if path.endswith("/" + op.name) else getattr(op, "_parent_path", None)
        if path:
            self.name_scopes[scope] = path
        entry = IMPORT_RULES.get("keras", {}).get(key)
        if entry is None and not traceable(op):
            self.fail(key, scope, _missing_reason(op))
            return
        mask = bind_arguments(op, node.arguments.args, node.arguments.kwargs).get("mask")
        if id(mask) in self.masks and key not in _MASK_READERS:
            self.fail(key, scope, f"reads a Keras mask, which portx converts into {', '.join(_MASK_READERS)} "
                                  "only; pass explicit masks instead")
            return
        if entry is None:  # a composite layer: traced through (Note [keras composite layers])
            self.trace(node, env, scope, key, inputs)
            return
        env.update(self.masks)
        inputs = [env.get(id(t)) for t in node.arguments.keras_tensors]
        if any(v is None for v in inputs):  # an upstream layer failed; keep scanning
            return
        args, kwargs = node.arguments.convert(lambda x: env.get(id(x)) if _is_keras_tensor(x) else x)
        kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        call = self.call(node, scope, list(args), kwargs, inputs)
        try:
            result = entry[1](call)
        except Unsupported as exc:
            self.fail(key, scope, str(exc))
            return
        except IRError as exc:
            raise IRError(f"layer {scope} ({key}): {exc}") from exc
        self.bind(node, env, result if isinstance(result, (list, tuple)) else [result])

    def trace(self, node, env, scope, key, inputs):
        """Trace a layer without a rule; after a failed upstream layer, on typed stand-ins (collect, then fail)."""
        import keras

        tensors = node.arguments.keras_tensors
        inputs = [v or Value(self.builder.fresh("unsupported"), TensorType(
            tuple(DEFAULT_LENGTH if d is None else d for d in self.static_shape(t.shape)),
            str(keras.backend.standardize_dtype(t.dtype)))) for v, t in zip(inputs, tensors)]
        self.traced = True
        try:
            self.bind(node, env, trace_layer(self, node, scope, inputs))
        except Unsupported as exc:
            self.fail(key, scope, str(exc))

    def bind(self, node, env, outs):
        for tensor, value in zip(node.outputs, outs):
            known = tuple(tensor.shape)  # None: a free dim, any size
            if value is not None and math.prod(value.type.shape) > MAX_INPUT_ELEMENTS:
                raise BadInput(f"layer {node.operation.name} ({rule_key(node.operation)}): output shape "
                               f"{tuple(value.type.shape)} has more than {MAX_INPUT_ELEMENTS:.3g} elements",
                               hint="convert for a smaller --input shape, or check the model's config")
            if value is not None and (len(known) != value.type.rank or any(
                    d is not None and d != v for d, v in zip(known, value.type.shape))):
                raise IRError(f"layer {node.operation.name} ({rule_key(node.operation)}): IR shape "
                              f"{tuple(value.type.shape)} differs from Keras' {tuple(tensor.shape)}")
            env[id(tensor)] = value


#: rule keys that read a Keras mask (Note [recurrent masks])
_MASK_READERS = ("LSTM", "GRU", "SimpleRNN", "RNN")


def _is_keras_tensor(x) -> bool:
    import keras

    return isinstance(x, keras.KerasTensor)


def _missing_reason(op) -> str:
    import keras

    if isinstance(op, keras.Model):
        return "subclassed model without a functional graph"
    return ""


def lower_keras(model, input_types, name="model") -> "Graph":  # noqa: F821
    """Lower a functional Keras model to an IR Graph, inputs typed by ``input_types`` (static shapes).

    Raises UnsupportedOps listing every layer without an import rule (or whose variant a rule refused).
    Example: ``lower_keras(model, [TensorType((1, 8, 8, 3), "float32")])``.
    """
    import keras

    fn = functional_of(model)
    if fn is None:
        raise BadInput(f"model {model.name} ({type(model).__name__}) has no functional graph",
                       hint="build it on keras.Input(...) (Sequential: pass an Input first or call build)")
    batch = input_types[0].shape[0] if input_types and input_types[0].rank else 1
    walker = _Walker(name, batch)
    values = [walker.builder.input(input_name(t), ty) for t, ty in zip(keras.tree.flatten(fn.inputs), input_types)]
    outs = walker.walk(model, values, "")
    if walker.failures:  # {(key, reason): scopes}
        raise UnsupportedOps([(k, s, r) for (k, r), s in walker.failures.items()], where=f"Keras model {model.name}")
    graph = walker.builder.finish(outs)
    paths = {"weight_paths": walker.weight_paths} if walker.weight_paths else {}
    graph = graph.replace(meta={**graph.meta, "module_classes": walker.classes, **paths})
    own = model.name + "/"  # a Sequential builds its layers in its own scope: the emitted model opens none
    scopes = {k: (v + "/")[len(own):-1] if (v + "/").startswith(own) else v for k, v in walker.name_scopes.items()}
    if any(scopes.values()):  # Note [keras name scopes]
        graph = graph.replace(meta={**graph.meta, "name_scopes": {k: v for k, v in scopes.items() if v}})
    return with_layer_outputs(prune_graph(graph) if walker.traced else graph, fn, walker.top)


def input_name(tensor) -> str:
    """The name of a functional model's input tensor: its InputLayer's name."""
    history = getattr(tensor, "_keras_history", None)
    return history.operation.name if history and history.operation is not None else (tensor.name or "input")


#: example size of an input dimension the model leaves unknown (a sequence length), Note [keras free input dims]
DEFAULT_LENGTH = 8
_LIMIT_KEYS = ("max_sequence_length", "sequence_length", "max_position_embeddings")  # the longest sequence accepted


def sequence_limit(model):
    """The longest sequence ``model``'s layers accept (the smallest ``max_sequence_length`` or
    ``sequence_length`` in their configs), or None when none states one.

    Example: ``sequence_limit(keras_hub.models.BertBackbone(..., max_sequence_length=16))`` -> 16.
    """
    found = []
    for layer in [model] + list(getattr(model, "_flatten_layers", lambda: [])()):
        try:
            config = layer.get_config()
        except Exception:  # noqa: BLE001 - a layer without a serializable config states no limit
            continue
        found += [v for k, v in config.items() if k in _LIMIT_KEYS and isinstance(v, int) and v > 0]
    return min(found) if found else None


def input_types_for(model, overrides=None) -> list:
    """Static TensorTypes for the model inputs: batch None -> 1, any other None -> ``DEFAULT_LENGTH`` within
    ``sequence_limit`` (or the shape in ``overrides[name]``).

    Note [keras free input dims]: ``keras.Input(shape=(None,))`` (token ids, a padding mask) needs an example
    size to lower at; those dims stay free (``KerasSource.dynamic_dims``), so the size only picks the example.
    Inputs of rank 4 or more (images, volumes) get none: strides and pools need a real size, so BadInput asks
    for ``--input``.

    BadInput for a dimension below 1, more than MAX_INPUT_ELEMENTS elements or a dtype the IR has no name for
    (Note [keras input checks]), before anything is allocated.
    """
    import keras

    fn = functional_of(model)
    types = []
    for tensor in keras.tree.flatten(fn.inputs):
        name = input_name(tensor)
        shape = (overrides or {}).get(name)
        if shape is None and len(tensor.shape) <= 3:  # a sequence: Note [keras free input dims]
            free = min(DEFAULT_LENGTH, sequence_limit(model) or DEFAULT_LENGTH)
            shape = tuple((1 if i == 0 else free) if d is None else d for i, d in enumerate(tensor.shape))
        if shape is None:
            shape = tuple(1 if (d is None and i == 0) else d for i, d in enumerate(tensor.shape))
        if any(d is None for d in shape):
            raise BadInput(f"Keras input {name}: shape {tuple(tensor.shape)} leaves an image or volume size unknown",
                           hint=f"pass --input {name}:SHAPE, e.g. {name}:"
                                + "x".join(str(d or 224) for d in (1,) + tuple(tensor.shape[1:])))
        shape = tuple(int(d) for d in shape)
        if any(d < 1 for d in shape) or math.prod(shape) > MAX_INPUT_ELEMENTS:
            why = "a dimension below 1" if any(d < 1 for d in shape) else \
                f"{math.prod(shape):.3g} elements, more than portx allocates ({MAX_INPUT_ELEMENTS:.3g})"
            raise BadInput(f"Keras input {name}: shape {shape} has {why}", hint=f"pass --input {name}:SHAPE with "
                           "dimensions >= 1 and a smaller example shape; TPU programs are compiled per shape anyway")
        dtype = str(keras.backend.standardize_dtype(tensor.dtype))
        if dtype not in DTYPES:
            raise BadInput(f"Keras input {name}: dtype {dtype} cannot be converted",
                           hint=f"portx converts inputs of {', '.join(DTYPES)}")
        types.append(TensorType(shape, dtype))
    return types
