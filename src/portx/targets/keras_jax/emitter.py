"""Keras 3 (JAX backend) emitter: IR -> readable functional ``model.py`` + sharded ``model.weights.json``.

Per-op emit rules live in ``ops/<family>/`` and receive a ``KerasEmitter``; this module only assembles
the file and creates the weights (runtime.py loads and runs the result the way a user would), and
style.py decides how it reads: layer arguments as keras.applications writes them, variable names,
lines wrapped at 100 columns.

Example:
    >>> files = emit_keras(graph, "out/")        # out/model.py, out/model.weights.json, out/model_00000.weights.h5
    >>> model = import_by_path("out/model.py").load_model()
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ...ir import FreeDimRefused, SymDim, Value
from ...progress import watch
from ..auto_names import block_path
from ..codegen import EmitterBase, LineWriter, Namespace, import_by_path, literal
from .style import VariableNames, auto_names_in, layer_args
from ..constants import evaluate_constant, live_values
from ..refused import refused_build
from .blocks import write_blocks
from .scopes import SOURCE_WEIGHT, body_scopes, layer_scopes, open_scopes, source_weight
from .sharded import DEFAULT_SHARD_GB, abstract_model, write_sharded
from .sharding import layout_map_source, variable_splits
from .files import CONSTANT_LAYER, HEADER, WEIGHTS_FILE, WIDTH, model_name, module_text
from .model_classes import DRAW_MODEL, FREE_SHAPE_LAYER, constant_model_body, draws_random, write_size_checks

__all__ = ["TARGET", "WEIGHTS_FILE", "HEADER", "KerasEmitter", "emit_keras"]

TARGET = "keras-jax"
_RESERVED = {"keras", "layers", "ops", "np", "os", "build_model", "load_model", "WEIGHTS", "Constant", "SourceWeight", "FreeShape",
             "SizeCheck", "model", "inputs", "outputs", "jax", "anchor", "DrawModel"}
_INLINE_MAX = 16  # constants with at most this many elements are written into the code



class KerasEmitter(EmitterBase):
    """What an emit rule sees: references to values, and ways to write layers and expressions.

    Example rule::

        @RELU.emits("keras-jax")
        def _relu_to_keras(node, k):
            if k.layer_ready(node):  # float32 KerasTensors: a named layer, as keras.applications writes
                k.layer(node, "ReLU", {}, [node.inputs[0]])
            else:
                k.assign(node, f"ops.relu({k.ref(node.inputs[0])})")
    """

    TARGET = TARGET
    HELD = "weights"  # the written layers' weights (targets/origins.py)

    def __init__(self, graph, clash=frozenset()):
        super().__init__(graph)
        self.ns = Namespace(_RESERVED)
        self.body = LineWriter(WIDTH)
        self.body.indent = 1
        self.weights = {}  # layer name -> list of arrays, in layer.get_weights() order
        self.layer_of = {}  # Value -> layer name, for per-layer checks
        self.uses_numpy = False
        self.definitions = {}  # class name -> its source, written once above build_model (``define``)
        self.default_layout = False  # a layer leaves data_format at Keras's default (channels_last)
        self.clash = clash  # Note [layer names]: auto-name prefixes of the ops this body calls
        self.layer_names = set()
        self.var_names = VariableNames(graph)
        self.live = live_values(graph)  # values computed from the inputs: KerasTensors in build_model
        self._anchor = None
        self.functions = []  # repeated blocks written once, above build_model (blocks.py)
        self.longer = None  # (structured, flat) lines where the flat form was shorter (blocks.py)
        self.hidden = set()  # variables inside those functions: not build_model's locals

    def layer_ready(self, node) -> bool:
        """True when a weightless Keras layer computes exactly what ``node`` computes: its inputs are
        KerasTensors, and inputs and outputs are float32 (a layer casts floats to its float32 policy)."""
        values = [v for v in node.inputs if v is not None]
        return all(v in self.live for v in values) and \
            all(v.type.dtype == "float32" for v in values + list(node.outputs))

    # -- values ---------------------------------------------------------------------------
    def store(self, raw_name, array, layer=False, trainable=False) -> str:
        """A literal for a small array (unless ``layer`` or ``trainable``), else a Constant layer
        holding it (a trainable weight for a source parameter, else a non-trainable one)."""
        array = np.asarray(array)
        if array.size <= _INLINE_MAX and not (layer or trainable):
            return self.inline(array)
        named = source_weight(self.graph, raw_name) if "." in raw_name else None  # Note [source-named weights]
        if named:
            raw_name = self.var_names.local.get(raw_name.rpartition(".")[0], raw_name.rpartition(".")[0])
        name = self.layer_ident(raw_name, "const", cased=True)
        cls = self.define(*(("SourceWeight", SOURCE_WEIGHT) if named else ("Constant", CONSTANT_LAYER)))
        self.weights[name] = [array]
        trains = (", trainable=True" if trainable else "") + (named or "")
        self.body.line(f"{name.lower()} = {cls}({literal(tuple(array.shape))}, {literal(str(array.dtype))}{trains}, "
                       f"name={literal(name)})({self._anchor})")
        return name.lower()

    def _output_ref(self, value) -> str:
        """``ref`` for a model output, which Keras needs as a KerasTensor: a stored array, or an output no
        input reaches (evaluated once, targets/constants.py), becomes a Constant layer even when it is small."""
        if not self.is_param(value) and (value in self.live or not value.type.is_static):  # free dims: run time
            return self.ref(value)
        array = self.param(value) if self.is_param(value) else evaluate_constant(self.graph, value)  # no input reaches
        return self.store(value.name, array, layer=True, trainable=self.graph.is_trainable(value.name))

    def define(self, name: str, source: str) -> str:
        """Write the class ``name`` (``source``, registered serializable) into model.py once; returns ``name``."""
        self.definitions.setdefault(name, source)
        return name

    def free_shape(self, node, op: str, x: str, shape, fill=0.0) -> None:
        """``out = FreeShape(op, dims)(x, inputs...)``: ``op`` with the SymDims of ``shape`` read at run time."""
        name = self.layer_name(node)
        self._bind(node, self._free_call(op, x, shape, name, fill), self.variables(node, name))

    def free_expr(self, node, op: str, x: str, shape) -> str:
        """An expression for ``x`` reshaped or broadcast to ``shape``, which may hold free dims (SymDims)."""
        if not any(isinstance(d, SymDim) for d in shape):
            return f"ops.{op}({x}, {literal(tuple(shape))})"
        return self._free_call(op, x, shape, self.layer_ident(f"{self.var_names.raw(node)}_{op}", op))

    def _free_call(self, op, x, shape, name, fill=0.0) -> str:
        refs, dims = [], []
        for d in shape:
            if isinstance(d, SymDim) and "*" in d.symbol:
                raise FreeDimRefused(f"FreeShape reads one input size per dim, not the product {d}",
                                     set(d.symbol.split("*")))
            if isinstance(d, SymDim):
                value, axis = self.site(d.symbol)
                if self.names[value] not in refs:
                    refs.append(self.names[value])
                dims.append([refs.index(self.names[value]), axis, d.scale, d.offset] + ([d.div] if d.div != 1 else []))
            else:
                dims.append(int(d))
        self.define("FreeShape", FREE_SHAPE_LAYER)
        value = f", value={literal(float(fill))}" if fill else ""  # pad's fill
        return f"FreeShape({literal(op)}, {literal(dims)}{value}, name={literal(name)})({', '.join([x] + refs)})"

    def inline(self, array) -> str:
        """A literal for a small array: a Python number for 0-d float32/int, else ``np.array``."""
        array = np.asarray(array)
        if array.ndim == 0 and array.dtype in (np.float32, np.int64, np.int32, np.bool_):
            return literal(array.item())
        self.uses_numpy = True
        return f"np.array({literal(array.tolist())}, dtype={literal(str(array.dtype))})"

    # -- writing ----------------------------------------------------------------------------
    def layer_ident(self, raw: str, fallback: str, cased: bool = False) -> str:
        """A unique name for a Keras layer (and, lower-cased, its variable), never one Keras gives an op itself;
        ``cased``: in the source's letter case (Note [layer names in the source's case] in style.py).

        Note [layer names]: ``keras.ops`` calls, operators and subscripts in a functional model are
        auto-named after their class (``softmax``, ``softmax_1``, ...; the counters are global to
        the process); an explicit layer name equal to one of those makes Keras refuse the model.
        ``emit_graph`` writes the body, collects the prefixes of the ops it calls
        (``style.auto_names_in``) and, only if a layer name clashes with one, writes it again with
        those prefixes in ``clash``: such names then get a ``_layer`` suffix.
        """
        base = self.ns.name(raw, fallback, self.var_names.room(raw), cased)  # Note [names in longer blocks]
        if re.sub(r"_\d+$", "", base.lower()) in self.clash:
            self.ns.release(base.lower())
            base = self.ns.name(f"{base}_layer", fallback, cased=cased)
        self.layer_names.add(base.lower())
        return base

    def layer_name(self, node, raw=None) -> str:
        """A unique layer name for ``node``: ``raw``, else its weight's module, else as for a variable (Note
        [variable names])."""
        weights = [v.name for v in node.inputs if v is not None and self.is_param(v)]
        if raw is None and weights and weights[0].endswith((".weight", "_weight")):  # "attn.in_proj_weight"
            raw = weights[0][: -len("weight") - 1]
            raw = self.var_names.local.get(raw, block_path(raw, self.graph))  # Note [nested models' scopes]
        return self.layer_ident(self.var_names.layer(node) if raw is None else raw, node.op.name, cased=True)

    def layer(self, node, cls: str, kwargs: dict, inputs, weights=None, *, module="layers", raw=None) -> str:
        """Write ``out = layers.CLS(args, name=...)(inputs)`` (Keras defaults left out, ``style.layer_args``),
        and record its weights (``emit_nodes`` comments the line with what was folded in or dropped); ``raw``:
        the layer's source name where it is not ``node``'s (a SeparableConv2D's, ops/conv/to_keras.py)."""
        name = self.layer_name(node, raw)
        call = self._layer_call(cls, kwargs, name, inputs, module, self.var_names.kept(node))
        self._bind(node, call, self.variables(node, name))
        if weights:
            self.weights[name] = [np.asarray(w) for w in weights]
        for out in node.outputs:
            self.layer_of[out] = name
        return name

    def sublayer(self, node, cls: str, kwargs: dict, inputs, weights=None, *, module="layers", hint=None) -> str:
        """Like ``layer`` but into a temporary variable named ``<scope>_<hint>``, for multi-step rules."""
        hint = hint or re.sub(r"\dD(Transpose)?$", "", cls).lower()
        name = self.layer_ident(f"{self.var_names.scope.get(node) or node.outputs[0].name}_{hint}", node.op.name)
        self.body.line(f"{name} = {self._layer_call(cls, kwargs, name, inputs, module)}")
        if weights:
            self.weights[name] = [np.asarray(w) for w in weights]
        return name

    def _layer_call(self, cls, kwargs, name, inputs, module, keep=()) -> str:
        if kwargs.get("data_format") == "channels_last":
            self.default_layout = True
        ins = [self.ref(v) for v in inputs]
        arg = ins[0] if len(ins) == 1 else "[" + ", ".join(ins) + "]"
        return f"{module}.{cls}({', '.join(layer_args(cls, kwargs, keep) + [f'name={literal(name)}'])})({arg})"

    def pad_value(self, node, value, pads, channels_last=False) -> str:
        """Zero-pad the spatial axes of a channels-first (or channels-last) tensor by (begin, end) pairs."""
        pads = tuple(tuple(int(v) for v in p) for p in pads)
        rank = len(pads)
        if rank == 1:
            widths = ((0, 0),) + pads + ((0, 0),) if channels_last else ((0, 0), (0, 0)) + pads
            return self.temp(node, f"ops.pad({self.ref(value)}, {literal(widths)})", "padded")
        fmt = "channels_last" if channels_last else "channels_first"
        return self.sublayer(node, f"ZeroPadding{rank}D", {"padding": pads, "data_format": fmt}, [value], hint="pad")

    def crop(self, node, source: str, padding, channels_last=False) -> None:
        """Bind the node's output to ``source`` with ``padding[i]`` removed from both ends of spatial axis i."""
        parts = ", ".join(f"{p}:{-p}" if p else ":" for p in padding)
        self.assign(node, f"{source}[:, {parts}, :]" if channels_last else f"{source}[:, :, {parts}]")

    def via_channels_first(self, node, rule) -> None:
        """Emit a ``channels_last`` node with its channels-first ``rule`` between two transposes.

        Only rare ``keras.ops`` fallbacks use this (uneven adaptive pooling, resize as matrices,
        grouped transposed convolution); on the TPU pipeline legalization has rewritten those first.
        """
        x, out = node.inputs[0], node.outputs[0]
        rank = x.type.rank
        first, last = (0, rank - 1) + tuple(range(1, rank - 1)), (0,) + tuple(range(2, rank)) + (1,)
        inner_x = Value(f"{x.name}_cf", x.type.with_shape(tuple(x.type.shape[p] for p in first)))
        inner_out = Value(f"{out.name}_cf", out.type.with_shape(tuple(out.type.shape[p] for p in first)))
        self.names[inner_x] = self.temp(node, f"ops.transpose({self.ref(x)}, axes={literal(first)})", "cf")
        rule(node.replace(inputs=(inner_x,) + tuple(node.inputs[1:]), outputs=(inner_out,),
                          attrs={**node.attrs, "channels_last": False}), self)
        self.assign(node, f"ops.transpose({self.ref(inner_out)}, axes={literal(last)})")

    def variables(self, node, hint) -> list:
        """A layer's own (already unique) name for its one output; fresh names otherwise."""
        if hint and len(node.outputs) == 1:
            return [hint.lower()]  # the variable of a layer named in the source's case
        hint = hint or self.var_names.raw(node)  # Note [variable names] in style.py
        return [self.ns.name(hint if len(node.outputs) == 1 else f"{hint}_{i}", node.op.name, self.var_names.room(hint))
                for i, _ in enumerate(node.outputs)]

    # -- assembly ---------------------------------------------------------------------------
    def emit_graph(self) -> str:
        """Walk the graph and return the full ``model.py`` text (twice if a layer name clashes, Note [layer names])."""
        text = self._emit_once()
        used = auto_names_in(self.body.text())
        if not self.clash and any(re.sub(r"_\d+$", "", name) in used for name in self.layer_names):
            self.__init__(self.graph, clash=frozenset(used))
            text = self._emit_once()
        return text

    def _emit_once(self) -> str:
        head = LineWriter(WIDTH)
        head.indent = 1
        for value in self.graph.inputs:  # an Input is a layer: its name must not be an op's auto name either
            var = self.layer_ident(value.name, "input")  # (a segment's input is named after a value: add_14)
            self.names[value] = var
            dtype = f", dtype={literal(value.type.dtype)}" if value.type.dtype != "float32" else ""
            shape = tuple(None if isinstance(d, SymDim) else d for d in self.graph.free_shape(value))
            given = f"shape={literal(shape[1:])}" if shape and shape[0] is None else f"batch_shape={literal(shape)}"
            head.line(f"{var} = keras.Input({given}{dtype}, name={literal(var)})")
        self.given = write_size_checks(self, head)  # Note [size checks] in targets/size_checks.py
        drawn = not self.graph.inputs and draws_random(self.graph)  # a DrawModel around an anchor input
        if not self.graph.inputs and not drawn:  # a functional model needs an input: a ConstantModel
            return module_text(self, constant_model_body(self, model_name(self.graph)), None)
        if drawn:
            head.line("anchor = keras.Input(batch_shape=(1,), name='anchor')")
            self.define("DrawModel", DRAW_MODEL)
        self._anchor = self.names[self.graph.inputs[0]] if not drawn else "anchor"
        self.emit_nodes()
        outs = write_blocks(self, [self._output_ref(v) for v in self.graph.outputs], WIDTH)
        self.body.rows = open_scopes(self.body.rows, body_scopes(self.body.rows, layer_scopes(self)))
        return module_text(self, head.text() + self.body.text(), outs)

    def var_of(self) -> dict:
        """Value -> variable for the values build_model binds (those inside block functions left out)."""
        return {v: n for v, n in super().var_of().items() if n not in self.hidden}

def emit_keras(graph, out_dir, max_shard_size=DEFAULT_SHARD_GB) -> dict:
    """Write ``model.py`` and the weights (Keras' sharded layout, shards of at most ``max_shard_size`` GB: Note
    [sharded keras weights]) into ``out_dir``; return {"code": path, "weights": path, "shards": [paths], ...}."""
    out_dir = Path(out_dir)
    emitter = KerasEmitter(graph)
    code = emitter.emit_graph()
    code_path = out_dir / "model.py"
    code_path.write_text(code, encoding="utf-8")
    module = import_by_path(code_path)
    weights_path = out_dir / WEIGHTS_FILE
    with watch(code_path, "build_model", "building the Keras model"):  # progress.py: follows build_model's lines
        with refused_build(graph, emitter.names, code_path):  # Note [build-time refusal]
            model = abstract_model(module)
        splits = variable_splits(graph, model, emitter.layer_of, emitter.weights)
        code_path.write_text(code + layout_map_source(splits, graph.meta.get("blocks")), encoding="utf-8")
        shards = write_sharded(model, emitter.weights, weights_path, max_shard_size)
    return {"code": code_path, "weights": weights_path, "shards": shards, "layer_of": emitter.layer_of,
            "var_of": emitter.var_of(), "origins": emitter.origins, "model": model}  # weightless: structure only
