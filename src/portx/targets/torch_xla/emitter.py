"""PyTorch emitter for the ``torch-xla`` target: IR -> readable ``model.py`` + ``model.safetensors``.

The generated file is plain PyTorch (never portx, keras or torch_xla): a ``Model(nn.Module)`` with
submodules named after the source layers, a ``forward`` with one statement per IR node,
``build_model()`` and ``load_model()``. Per-op rules live in ``ops/<family>/to_torch.py`` and receive a
``TorchEmitter``; this module walks the graph and saves the weights, modules.py declares the submodules and
buffers, blocks.py writes repeated blocks as classes, files.py frames the file (runtime.py loads and runs it).

Note [XLA-friendly torch]: every rule writes static shapes and no host syncs (no ``.item()``,
``nonzero`` or data-dependent Python), reads small constants from buffers made once in
``__init__`` (not ``torch.tensor`` calls in ``forward``, which would upload on every step) and
avoids ATen ops that PyTorch/XLA runs on the CPU (uneven adaptive pooling, bicubic or 1-d/3-d
upsampling): those become constant-matrix matmuls or index gathers.

Example:
    >>> files = emit_torch(graph, "out/")          # out/model.py, out/model.safetensors
    >>> model = import_by_path("out/model.py").load_model()
"""
from __future__ import annotations

import functools
from pathlib import Path

from ...ir import DTYPES, IRError, SymDim
from ...ops._util import kind
from ...ops.dropout import DROPOUT
from ..first_blocks import without_first
from ...progress import watch
from ..codegen import EmitterBase, LineWriter, Namespace, import_by_path, literal
from ..size_checks import write_forward_checks
from ..structure import block_rooms, room_of
from .blocks import write_modules
from .files import HEADER, Emitted, model_text
from .held import mha_holders
from .modules import ModuleWriter
from .shards import BUFFERS_FILE, WEIGHTS_FILE, Converted, is_sharded, module_on, skeleton, write_weights
from .literals import plain, scalar_result
from .sharding import tp_plan_source
from .unsigned import WIDE, narrowed, widened, widens

__all__ = ["TARGET", "WEIGHTS_FILE", "HEADER", "TorchEmitter", "emit_torch"]

TARGET = "torch-xla"
_RESERVED = {"torch", "nn", "F", "os", "math", "load_file", "self", "Model", "build_model", "load_model", "WEIGHTS",
             "load_buffers", "BUFFERS"}


@functools.lru_cache(maxsize=1)
def _module_attributes() -> frozenset:
    """Names a submodule or buffer must not shadow (``forward``, ``training``, ``to``, ...)."""
    import torch

    # dir() of an instance: class attributes and those __init__ sets (training, _parameters, ...)
    return frozenset(dir(torch.nn.Module())) | {"forward"}


class _BlockNames(Namespace):
    """A Namespace in which a name that starts with a repeated block's prefix may run past the usual length by that
    prefix's length (Note [names in longer blocks] in keras_jax/style.py): it is cut, if at all, after the prefix,
    so every block of a kind names its submodules alike (``self_attention_out_proj``, not ``self_attention_ou``)."""

    def __init__(self, reserved, graph):
        super().__init__(reserved)
        self.rooms = block_rooms(graph.meta.get("blocks"))

    def name(self, raw: str, fallback: str = "v", room: int = 0, cased: bool = False) -> str:
        """``Namespace.name``, with the room of the block whose prefix ``raw`` starts with."""
        return super().name(raw, fallback, max(room, room_of(self.rooms, raw)), cased)


class TorchEmitter(ModuleWriter, EmitterBase):
    """What an emit rule sees: references to values, and ways to write submodules and statements.

    Example rule::

        @RELU.emits("torch-xla")
        def _relu_to_torch(node, t):
            t.assign(node, f"torch.relu({t.ref(node.inputs[0])})")
    """

    TARGET = TARGET
    HELD = "state"  # the state_dict being written (targets/origins.py)
    SHARES_LAYERS = True  # submodule(): one op with the same weights is one submodule
    TEMP_FROM_SCOPE = False

    def __init__(self, graph):
        graph = without_first(graph)  # Note [an unnumbered first block] in passes/blocks_first.py
        super().__init__(graph)
        self.ns = _BlockNames(_RESERVED, graph)  # forward's local variables
        self.attrs = _BlockNames(_RESERVED | _module_attributes(), graph)  # self.<submodule or buffer>
        self.init, self.body = LineWriter(), LineWriter()
        self.init.indent = self.body.indent = 2
        self.state = {}  # state_dict key -> array, for model.safetensors (or buffers.safetensors: computed)
        self.computed = False  # a buffer the source computes is written (Note [computed buffers] in shards.py)
        self.module_of = {}  # Value -> submodule attribute, for per-layer checks
        self.paths = {}  # attribute -> the source path it stands for (Note [nested paths] in nesting.py)
        self._shared = {}  # (constructor, weights or source module) -> attribute (Note [weightless modules])
        self._weightless = {}  # block key -> [(constructor, arguments, name in the block)] (the same Note)
        self._holders = None  # the source paths holding others (ModuleWriter._containers)
        self._tied = None  # tied param Value -> the first submodule's weight (Note [tied modules] in modules.py)
        self._unread = {}  # tied param Value -> its keys no node reads (the same Note)
        self._widened = False  # the node being written computes its unsigned operands in int64
        self._block = None  # the repeated block the node being written lies in (Note [blocks overwrite ...])
        self._reads = None  # Value -> how many node inputs read it
        self.max_shard_size = None  # bytes or "2GB": weights past it are written as shards (Note [torch shards])
        self.classes = []  # repeated blocks as nn.Module classes, above Model (blocks.py)
        self.longer = None  # (structured, flat) lines where the flat form was shorter (blocks.py)
        self.hidden = set()  # forward's variables now inside those classes
        self.block_inputs = {}  # block key -> the IR values its class's forward takes, in turn (block_args.py)
        self.held = mha_holders(graph)  # param name -> the nn.MultiheadAttention holding it (Note [held parameters])
        self.holders = {}  # source path -> the attribute of the nn.MultiheadAttention declared for it

    # -- values ---------------------------------------------------------------------------
    def operand(self, value, other=None, result=None) -> str:
        """``ref``, or a Python number for a stored 0-d value where torch then computes the same dtype.

        ``other`` is the value on the other side of the operator and ``result`` the dtype the IR
        computes in; a Python number only lifts the dtype category (``int32 * 2`` stays int32).
        """
        if isinstance(value, str) or not self.is_param(value) or value.type.rank != 0 or \
                self.graph.is_trainable(value.name):
            return self.ref(value)
        if other is None or isinstance(other, str) or other.type.rank == 0 or self.is_param(other):
            return self.ref(value)
        if scalar_result(other.type.dtype, value.type.dtype) != (result or other.type.dtype):
            return self.ref(value)
        text = literal(plain(self.param(value)))
        return f"({text})" if text.startswith("-") else text  # -2.0 ** x would negate the power

    def ref(self, value) -> str:
        """``EmitterBase.ref``; a uint16/32/64 value read as int64 inside a node that computes in it
        (Note [unsigned in int64] in unsigned.py)."""
        expr = super().ref(value)
        return widened(expr, value) if self._widened and not isinstance(value, str) else expr

    def overwrite(self, value) -> bool:
        """True when a node may overwrite ``value`` in place (``F.relu(x, inplace=True)``, ``x.add_(y)``), as
        hand-written PyTorch does to spare an allocation; ``value`` (and what it aliases) is then marked
        ``clobbered``, so that the trace no longer reads its variable. Allowed for a float value that one node
        input alone reads, neither an input nor an output of the graph, made fresh by an op whose backward
        does not keep its output (trait ``fresh_output``), or a dropout (the identity at inference) of such a value.

        Note [blocks overwrite their own values]: inside a repeated block (``graph.meta["blocks"]``) only a value the
        block made is overwritten. A value from outside is the block class's argument, and the first block's may be
        the model's input, which no node overwrites: in place there and not in the next block, the two would read
        differently and stay flat; and a class that overwrote its argument would change its caller's tensor."""
        if self._reads is None:
            self._reads = {}
            for user in self.graph.nodes:
                for v in user.inputs:
                    self._reads[v] = self._reads.get(v, 0) + 1
        if isinstance(value, str) or self.is_param(value) or self._reads.get(value, 0) != 1 \
                or value in self.graph.inputs or value in self.graph.outputs or kind(value.type.dtype) != 2 \
                or (self._block is not None and self._made_in.get(value) != self._block):
            return False
        producer = self._producers.get(value)
        if producer is not None and (producer.op.has("fresh_output")
                                     or (producer.op is DROPOUT and self.overwrite(producer.inputs[0]))):
            self.clobbered.add(value)
            return True
        return False

    @functools.cached_property
    def _producers(self) -> dict:
        return self.graph.producers()

    @functools.cached_property
    def _made_in(self) -> dict:
        """Value -> the key of the repeated block whose node makes it (Note [blocks overwrite their own values])."""
        nodes = self.graph.nodes
        return {out: b["key"] for b in self.graph.meta.get("blocks") or [] for node in nodes[b["start"]:b["stop"]]
                for out in node.outputs}

    def free_dim(self, dim) -> str:
        """A free dimension as code that reads it from an input: ``x.shape[0] * 4 + 1``, ``x.shape[2] // 2``; a
        product of two (``batch*seq``, a merged axis) multiplies their sizes."""
        sizes = [f"{self.names[value]}.shape[{axis}]" for value, axis in map(self.site, dim.symbol.split("*"))]
        text = " * ".join(sizes) + (f" * {dim.scale}" if dim.scale != 1 else "")
        text += f" + {dim.offset}" if dim.offset > 0 else f" - {-dim.offset}" if dim.offset else ""
        return text if dim.div == 1 else f"({text}) // {dim.div}" if dim.offset else f"{text} // {dim.div}"

    @staticmethod
    def dtype(name: str) -> str:
        """``torch.float32`` for the IR dtype name ``"float32"``."""
        if name not in DTYPES:
            raise ValueError(f"unknown dtype {name!r}")
        return f"torch.{name}"

    @staticmethod
    def compact(values):
        """One int for equal per-axis values (``(3, 3)`` -> ``3``), as PyTorch code usually reads."""
        values = tuple(int(v) for v in values)
        return values[0] if values and all(v == values[0] for v in values) else values

    @staticmethod
    def torch_pads(pairs) -> tuple:
        """(begin, end) pairs per axis -> F.pad's flat list, last axis first, trailing zeros dropped."""
        flat = [p if isinstance(p, SymDim) else int(p) for pair in reversed(tuple(pairs)) for p in pair]
        while len(flat) > 2 and flat[-2:] == [0, 0]:
            flat = flat[:-2]
        return tuple(flat)

    # -- writing ---------------------------------------------------------------------------
    def _bind(self, node, expr, targets):
        """``out = EXPR``; in a node computing in int64, each unsigned output narrowed back to its dtype."""
        narrow = [(v, var) for v, var in zip(node.outputs, targets) if self._widened and v.type.dtype in WIDE]
        if len(node.outputs) == 1 and narrow:
            expr = narrowed(expr, node.outputs[0].type.dtype, node.op.name)
        super()._bind(node, expr, targets)
        for value, var in narrow if len(node.outputs) > 1 else ():
            self.body.line(f"{var} = {narrowed(var, value.type.dtype, node.op.name)}")

    def variables(self, node, hint) -> list:
        """Fresh names: after ``hint`` (a submodule) or the output for one output, after each output for several."""
        if len(node.outputs) == 1:
            return [self.ns.name(hint or node.outputs[0].name, node.op.name)]
        return [self.ns.name(v.name, f"{node.op.name}_{i}") for i, v in enumerate(node.outputs)]

    # -- assembly ---------------------------------------------------------------------------
    def emit_graph(self) -> str:
        """Walk the graph and return the full ``model.py`` text."""
        args = []
        for value in self.graph.inputs:
            self.names[value] = var = self.ns.name(value.name, "input")
            args.append(var)
        write_forward_checks(self.body, self.graph, self.names)  # Note [size checks]
        self.emit_nodes()
        self._widened = False
        outs = [self.ref(v) for v in self.graph.outputs]
        self.body.line("return " + (outs[0] if len(outs) == 1 else ", ".join(outs)))
        write_modules(self, _module_attributes())  # Note [nested torch modules]
        return model_text(self, args)

    def marks(self) -> tuple:
        """How far ``forward`` and ``__init__`` have got (the lines each node wrote: blocks.py)."""
        return len(self.body), len(self.init)

    def var_of(self) -> dict:
        """Value -> variable for the values ``Model.forward`` binds (those inside block classes left out)."""
        return {v: n for v, n in super().var_of().items() if n not in self.hidden}

    def check(self, node) -> None:
        """channels_last IR is a bug upstream: the torch-xla pipeline makes every node channels-first.

        Called before each node's rule, it also decides whether the node computes its uint16/32/64 operands
        in int64 (Note [unsigned in int64] in unsigned.py): ``ref`` widens them and ``_bind`` narrows back.
        """
        self._widened = False
        self._block = self._made_in.get(node.outputs[0]) if node.outputs else None
        if node.attrs.get("channels_last"):
            raise IRError(f"{node.where()}: channels_last=True reached the {TARGET} emitter, which writes "
                          f"channels-first PyTorch; run the '{TARGET}' pass pipeline first")
        self._widened = widens(node)

    @property
    def sharded(self) -> bool:
        """True when the weights go to shards and an index, which load_model() then reads."""
        return is_sharded(self.state, self.max_shard_size)


def emit_torch(graph, out_dir, max_shard_size=None) -> dict:
    """Write ``model.py`` and the weights into ``out_dir``: ``model.safetensors``, or past ``max_shard_size``
    (bytes or ``"2GB"``; default 2 GB) Hugging Face shards and ``model.safetensors.index.json`` (Note [torch shards]).

    Returns {"code": path, "weights": path (the index when sharded), "module_of": {Value: submodule},
    "var_of": {Value: name}, "block_inputs": {block key: the IR values its class's forward takes},
    "model": the module in eval mode, holding the graph's arrays}.
    """
    out_dir = Path(out_dir)
    emitter = TorchEmitter(graph)
    emitter.max_shard_size = max_shard_size
    code_path = out_dir / "model.py"
    code_path.write_text(emitter.emit_graph(), encoding="utf-8")

    build = import_by_path(code_path).build_model
    with watch(code_path, "build_model", "building the torch module"):  # progress.py: follows build_model's lines
        shape = skeleton(build, emitter.state)
    code_path.write_text(code_path.read_text(encoding="utf-8") + tp_plan_source(graph, shape, emitter.module_of),
                         encoding="utf-8")
    weights_path = write_weights(Converted(emitter.state, shape), out_dir, max_shard_size, sharded=emitter.sharded)
    computed = Converted(emitter.state, shape, computed=True)  # Note [computed buffers] in shards.py
    if computed:
        write_weights(computed, out_dir, sharded=False, name=BUFFERS_FILE)
    return Emitted({"code": code_path, "weights": weights_path, "module_of": dict(emitter.module_of),
                    "var_of": emitter.var_of(), "origins": emitter.origins,
                    "block_inputs": dict(emitter.block_inputs)}, lambda: module_on(build, emitter.state))
