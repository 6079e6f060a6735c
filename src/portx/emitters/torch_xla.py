"""PyTorch emitter for the ``torch-xla`` target: IR -> readable ``model.py`` + ``model.safetensors``.

The generated file is plain PyTorch (never portx, keras or torch_xla): a ``Model(nn.Module)`` with
submodules named after the source layers, a ``forward`` with one statement per IR node,
``build_model()`` and ``load_model()``. Per-op rules live in ``ops/*_torch.py`` and receive a
``TorchEmitter``; this module assembles the file, saves the weights and imports the result.

Note [XLA-friendly torch]: every rule writes static shapes and no host syncs (no ``.item()``,
``nonzero`` or data-dependent Python), reads small constants from buffers made once in
``__init__`` (not ``torch.tensor`` calls in ``forward``, which would upload on every step) and
avoids ATen ops that PyTorch/XLA runs on the CPU (uneven adaptive pooling, bicubic or 1-d/3-d
upsampling): those become constant-matrix matmuls or index gathers.

Example:
    >>> files = emit_torch(graph, "out/")          # out/model.py, out/model.safetensors
    >>> model = import_emitted_torch("out/model.py").load_model()
    >>> outputs = run_torch(model, [x])
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
import uuid
from pathlib import Path

import numpy as np

from ..errors import UnsupportedOps
from ..ir import DTYPES, IRError
from ..ops._util import kind
from .codegen import LineWriter, Namespace, flatten_outputs, literal

__all__ = ["TARGET", "WEIGHTS_FILE", "TorchEmitter", "emit_torch", "import_emitted_torch", "run_torch",
           "run_torch_with_locals", "emit", "load_folder", "run_model"]

TARGET = "torch-xla"
WEIGHTS_FILE = "model.safetensors"
_RESERVED = {"torch", "nn", "F", "os", "math", "load_file", "self", "Model", "build_model", "load_model", "WEIGHTS"}
_WEIGHT_WORDS = {"weight", "bias", "kernel", "folded", "folded_bias", "gamma", "beta", "embeddings",
                 "running_mean", "running_var", "moving_mean", "moving_variance", "in_proj_weight",
                 "reordered"}  # passes/layout_rules.py: a linear weight whose columns follow a moved flatten
_INLINE_MAX = 16  # stored arrays with at most this many elements are written into __init__ as literals


@functools.lru_cache(maxsize=1)
def _module_attributes() -> frozenset:
    """Names a submodule or buffer must not shadow (``forward``, ``training``, ``to``, ...)."""
    import torch

    # dir() of an instance: class attributes and those __init__ sets (training, _parameters, ...)
    return frozenset(dir(torch.nn.Module())) | {"forward"}


def _plain(array):
    """Nested Python data for an array; float32/float16 values in their shortest round-trip form."""
    array = np.asarray(array)
    if str(array.dtype) in ("float32", "float16", "bfloat16"):
        narrow = array.astype(np.float32) if str(array.dtype) == "bfloat16" else array
        return np.array([float(str(v)) for v in narrow.ravel()], dtype=object).reshape(array.shape).tolist()
    return array.tolist()


def _scalar_result(dtype: str, scalar_dtype: str) -> str:
    """torch's dtype for ``tensor(dtype) OP python_scalar``: the scalar only lifts the category."""
    lifted = kind(scalar_dtype)
    return dtype if lifted <= kind(dtype) else {1: "int64", 2: "float32", 3: "complex64"}[lifted]


class TorchEmitter:
    """What an emit rule sees: references to values, and ways to write submodules and statements.

    Example rule::

        @RELU.emits("torch-xla")
        def _relu_to_torch(node, t):
            t.assign(node, f"torch.relu({t.ref(node.inputs[0])})")
    """

    def __init__(self, graph):
        self.graph = graph
        self.ns = Namespace(_RESERVED)  # forward's local variables
        self.attrs = Namespace(_RESERVED | _module_attributes())  # self.<submodule or buffer>
        self.init, self.body = LineWriter(), LineWriter()
        self.init.indent = self.body.indent = 2
        self.names = {}  # Value -> expression in forward (a local, or self.<buffer>)
        self.state = {}  # state_dict key -> array, for model.safetensors
        self.module_of = {}  # Value -> submodule attribute, for per-layer checks
        self._shared = {}  # (constructor, weights) -> attribute: shared layers become one submodule

    # -- values ---------------------------------------------------------------------------
    def is_param(self, value) -> bool:
        """True for stored arrays (weights and folded constants)."""
        return self.graph.is_param(value)

    def param(self, value) -> np.ndarray:
        """The stored array behind a parameter value."""
        return self.graph.params[value.name]

    def ref(self, value) -> str:
        """A tensor expression for ``value``: its local variable, or ``self.<buffer>`` for stored arrays."""
        if isinstance(value, str):  # already an expression
            return value
        if value in self.names:
            return self.names[value]
        if not self.is_param(value):
            raise KeyError(f"value %{value.name} is used before it is defined")
        self.names[value] = expr = self.buffer(value.name, self.param(value))
        return expr

    def operand(self, value, other=None, result=None) -> str:
        """``ref``, or a Python number for a stored 0-d value where torch then computes the same dtype.

        ``other`` is the value on the other side of the operator and ``result`` the dtype the IR
        computes in; a Python number only lifts the dtype category (``int32 * 2`` stays int32).
        """
        if isinstance(value, str) or not self.is_param(value) or value.type.rank != 0:
            return self.ref(value)
        if other is None or isinstance(other, str) or other.type.rank == 0 or self.is_param(other):
            return self.ref(value)
        if _scalar_result(other.type.dtype, value.type.dtype) != (result or other.type.dtype):
            return self.ref(value)
        text = literal(_plain(self.param(value)))
        return f"({text})" if text.startswith("-") else text  # -2.0 ** x would negate the power

    def buffer(self, raw_name: str, array) -> str:
        """Register ``array`` as a buffer and return ``self.<name>``.

        Small arrays are written into ``__init__`` (non-persistent, so the code shows the numbers);
        larger ones are zeros in ``__init__`` and come from model.safetensors.
        """
        array = np.asarray(array)
        dtype, name = self.dtype(str(array.dtype)), self.attrs.name(raw_name, "buffer")
        zeros = f"torch.zeros({literal(tuple(array.shape))}, dtype={dtype})"
        if array.size == 0 or array.size > _INLINE_MAX:
            self.state.update({name: array} if array.size else {})
            kept = "" if array.size else ", persistent=False"
            self.init.line(f"self.register_buffer({literal(name)}, {zeros}{kept})")
        else:
            self.init.line(f"self.register_buffer({literal(name)}, torch.tensor({literal(_plain(array))}, "
                           f"dtype={dtype}), persistent=False)")
        return f"self.{name}"

    def const(self, node, array, hint="const") -> str:
        """A buffer for an array a rule computed (an interpolation matrix, an index table)."""
        return self.buffer(f"{node.scope or node.outputs[0].name}_{hint}", array)

    lit = staticmethod(literal)  # Python source for plain attribute data

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
        flat = [int(p) for pair in reversed(tuple(pairs)) for p in pair]
        while len(flat) > 2 and flat[-2:] == [0, 0]:
            flat = flat[:-2]
        return tuple(flat)

    # -- writing ----------------------------------------------------------------------------
    def submodule(self, node, cls: str, args=(), kwargs=None, weights=None) -> str:
        """Declare ``self.NAME = nn.CLS(*args, **kwargs)`` holding ``weights``; return ``self.NAME``.

        ``weights`` maps state_dict suffixes (``"weight"``, ``"running_mean"``) to stored Values
        or arrays. A layer applied twice (same constructor, same stored weights) is declared once.
        """
        weights = dict(weights or {})
        arrays = {k: np.asarray(self.param(v) if hasattr(v, "type") else v) for k, v in weights.items()}
        kwargs = dict(kwargs or {})
        text = ", ".join([literal(a) for a in args] + [f"{k}={literal(v)}" for k, v in kwargs.items()])
        floats = {str(a.dtype) for k, a in arrays.items() if a.dtype.kind == "f" or str(a.dtype) == "bfloat16"}
        if floats and floats != {"float32"}:
            text += f"{', ' if text else ''}dtype={self.dtype(sorted(floats)[0])}"
        ids = tuple((k, v.name if hasattr(v, "type") else hashlib.sha1(v.tobytes()).hexdigest())
                    for k, v in weights.items())
        key = (cls, text, ids)
        if key in self._shared:
            return self._shared[key]
        name = self.attrs.name(self._module_hint(node, weights), cls.lower())
        self.init.line(f"self.{name} = nn.{cls}({text})")
        for suffix, array in arrays.items():
            self.state[f"{name}.{suffix}"] = array
        self._shared[key] = f"self.{name}"
        return f"self.{name}"

    def _module_hint(self, node, weights) -> str:
        """The source layer's name: the node's scope, or the stored weight's more specific prefix.

        ``mha.query.kernel`` under scope ``mha`` names ``mha_query``; a tied weight (``wte.weight``
        read by ``lm_head``) keeps the reader's scope; ``conv.weight.folded`` names ``conv``.
        """
        scope = node.scope or node.outputs[0].name
        for value in weights.values():
            if hasattr(value, "type") and self.is_param(value):
                parts = value.name.split(".")
                while len(parts) > 1 and parts[-1] in _WEIGHT_WORDS:
                    parts.pop()
                prefix = ".".join(parts)
                if len(parts) > 1 or prefix != value.name:
                    return prefix if not node.scope or prefix.startswith(node.scope) else scope
        return scope

    def layer(self, node, cls: str, args=(), kwargs=None, weights=None, inputs=()) -> str:
        """A submodule and its call: ``NAME = self.NAME(inputs)``. Returns the attribute expression."""
        module = self.submodule(node, cls, args, kwargs, weights)
        call = ", ".join(self.ref(v) for v in inputs)
        self._bind(node, f"{module}({call})", module[len("self."):])
        for out in node.outputs:
            self.module_of[out] = module[len("self."):]
        return module

    def temp(self, node, expr: str, hint: str = "t") -> str:
        """Write ``tmp = EXPR`` and return the temporary's name."""
        name = self.ns.name(f"{node.outputs[0].name}_{hint}", node.op.name)
        self.body.line(f"{name} = {expr}")
        return name

    def assign(self, node, expr: str) -> None:
        """Write ``out = EXPR`` (or ``a, b = EXPR`` for several outputs)."""
        self._bind(node, expr, None)

    def _bind(self, node, expr, hint):
        if len(node.outputs) == 1:
            targets = [self.ns.name(hint or node.outputs[0].name, node.op.name)]
        else:
            targets = [self.ns.name(v.name, f"{node.op.name}_{i}") for i, v in enumerate(node.outputs)]
        for value, var in zip(node.outputs, targets):
            self.names[value] = var
        lhs = targets[0] if len(targets) == 1 else ", ".join(targets)
        self.body.line(f"{lhs} = {expr}")

    # -- assembly ---------------------------------------------------------------------------
    def emit_graph(self) -> str:
        """Walk the graph and return the full ``model.py`` text."""
        args = []
        for value in self.graph.inputs:
            self.names[value] = var = self.ns.name(value.name, "input")
            args.append(var)
        missing = {}
        for node in self.graph.nodes:
            if TARGET not in node.op.emit_rules:
                missing.setdefault(node.op.name, []).append(node.scope)
        if missing:
            raise UnsupportedOps([(op, scopes, f"no {TARGET} emitter") for op, scopes in missing.items()])
        for node in self.graph.nodes:
            if node.attrs.get("channels_last"):
                raise IRError(f"{node.where()}: channels_last=True reached the {TARGET} emitter, which writes "
                              f"channels-first PyTorch; run the '{TARGET}' pass pipeline first")
            node.op.emit_rules[TARGET](node, self)
        outs = [self.ref(v) for v in self.graph.outputs]
        self.body.line("return " + (outs[0] if len(outs) == 1 else ", ".join(outs)))
        return self._module_text(args)

    def _module_text(self, args) -> str:
        text = _HEADER.format(weights=literal(WEIGHTS_FILE))
        text += "\n\nclass Model(nn.Module):\n"
        text += '    """The converted network: channels-first inside, static shapes, eval-mode statistics."""\n\n'
        text += "    def __init__(self):\n        super().__init__()\n"
        text += self.init.text() if self.init.text().strip() else ""
        text += f"\n    def forward(self{''.join(', ' + a for a in args)}):\n"
        text += self.body.text()
        return text + _FOOTER


_HEADER = '''"""PyTorch model written by portx. Plain PyTorch: runs on CPU, GPU and TPU (PyTorch/XLA, torchax).

build_model() returns the architecture; load_model() returns it in eval mode with the weights in
model.safetensors beside this file. Shapes are static and nothing in forward() syncs with the host.
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), {weights})
'''

_FOOTER = '''

def build_model():
    """The architecture, with freshly initialised weights."""
    return Model()


def load_model(weights=None, device=None):
    """The model in eval mode with its converted weights (strict load), moved to ``device`` if given."""
    model = build_model()
    model.load_state_dict(load_file(weights or WEIGHTS), strict=True)
    model.eval()
    return model if device is None else model.to(device)
'''


def import_emitted_torch(path, module_name=None):
    """Import a generated ``model.py`` by path, as a user would, under a unique module name."""
    path = Path(path)
    name = module_name or f"portx_emitted_torch_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def _tensor(array):
    """A torch tensor for a NumPy array (ml_dtypes bfloat16 included)."""
    import torch

    array = np.ascontiguousarray(array).reshape(np.shape(array))  # ascontiguousarray makes 0-d arrays 1-d
    if str(array.dtype) == "bfloat16":
        return torch.from_numpy(array.view(np.uint16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def _numpy(tensor) -> np.ndarray:
    import torch

    tensor = tensor.detach().cpu()
    return (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()


def emit_torch(graph, out_dir) -> dict:
    """Write ``model.py`` and ``model.safetensors`` into ``out_dir``.

    Returns {"code": path, "weights": path, "module_of": {Value: submodule}, "var_of": {Value: name},
    "model": the loaded module in eval mode}.
    """
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    emitter = TorchEmitter(graph)
    code_path = out_dir / "model.py"
    code_path.write_text(emitter.emit_graph(), encoding="utf-8")
    model = import_emitted_torch(code_path).build_model()
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(a.shape) for k, a in emitter.state.items()}
    if expected != got:
        diff = sorted(set(expected.items()) ^ set(got.items()))[:4]
        raise RuntimeError(f"emit rules produced weights that do not fit the module's state_dict: {diff}")
    model.load_state_dict({k: _tensor(a) for k, a in emitter.state.items()}, strict=True)
    weights_path = out_dir / WEIGHTS_FILE
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights_path),
              metadata={"format": "pt"})
    model.eval()
    return {"code": code_path, "weights": weights_path, "module_of": dict(emitter.module_of),
            "var_of": dict(emitter.names), "model": model}


def run_torch(model, arrays) -> list:
    """Run ``model`` on NumPy inputs under ``torch.no_grad()``; outputs as a list of arrays."""
    import torch

    device = next((t.device for t in list(model.parameters()) + list(model.buffers())), torch.device("cpu"))
    with torch.no_grad():
        out = model(*[_tensor(a).to(device) for a in arrays])
    return [_numpy(t) for t in flatten_outputs(out)]


emit = emit_torch  # the emitter interface api.py dispatches on: emit, load_folder, run_model, WEIGHTS_FILE
run_model = run_torch


def load_folder(folder):
    """The module written in ``folder``, as ``load_model()`` gives it (eval mode, weights loaded)."""
    return import_emitted_torch(Path(folder) / "model.py").load_model()


def run_torch_with_locals(model, arrays):
    """``run_torch`` plus every local of ``forward`` as NumPy (``var_of`` names them), for localization."""
    import torch

    captured = {}
    code = type(model).forward.__code__

    def watch(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    sys.setprofile(watch)
    try:
        outputs = run_torch(model, arrays)
    finally:
        sys.setprofile(None)
    return outputs, {k: _numpy(v) for k, v in captured.items() if isinstance(v, torch.Tensor)}
