"""The submodules, parameters and buffers ``Model.__init__`` declares, each named after its source layer.

Note [weightless modules]: a layer with weights is declared once per set of weights, so a layer the source applies
twice (a tied embedding, a module called in a loop) is one submodule. A layer without weights (``nn.Dropout``, a
pooling, ``nn.Upsample``) is declared once per source module (the node's scope): the nodes of one source module
share it, as the source applies its own module again, and every other source module has its own. Shared model-wide
(as they were), the dropouts of a repeated block were one module declared in the first block, which the later
blocks then read: a block class took them as ``forward`` arguments, or the blocks differed and stayed flat. Per
source module, each block owns its ``nn.Dropout`` under its source name (``self.attention_dropout``), as a person
writes it, and ``state_dict()`` is unchanged (such modules hold nothing). Inside a repeated block a weightless
module takes the name the first block of its kind gave the one at the same position (``_weightless_hint``): Keras
numbers the layers it names itself model-wide (``dropout`` in one block, ``dropout_1`` in the next), and the
blocks' code must read the same to be one class. A weightless module made for a function that a source module's
``forward`` calls (a squeeze-excite's ``F.adaptive_avg_pool2d`` under ``blocks.0.se``) is that module's child named
after the op (``blocks.0.se.adaptive_avg_pool``), not the module itself: at ``blocks.0.se`` it would clash with the
module's own children (``blocks.0.se.fc1``), which then kept their flat names (``blocks.0.se_fc1``), not the
source's state_dict keys.

Note [tied modules]: a parameter the source holds under several keys (``graph.meta["tied"]``: a language model's
``lm_head.weight`` tied to its embedding's ``tok.weight``) is read by nodes of different ops, which share no layer
(``ownable``), so it was one ``nn.Parameter`` that each read: ``F.embedding(idx, self.tok.weight)``, ``F.linear(x,
self.tok.weight)``, under a bare ``nn.Module()`` at each key. Where each of its readers is an embedding or a linear
reading it as its weight, and the readers' scopes are its keys (the source's modules that hold it), each reader
owns a module as the source has it, and the later ones take the first's weight, as a person ties them::

    self.tok = nn.Embedding(101, 32)
    self.lm_head = nn.Linear(32, 101, bias=False)
    self.lm_head.weight = self.tok.weight
    ...
    lm_head = self.lm_head(ln_f)

``state_dict()`` keeps both keys (Note [the source's keys] in key_order.py); ``tp_plan()`` leaves such modules
whole, as before (splitting them would untie them: sharding.py). T5 and BART (transformers 5) tie ``shared``, which
nothing calls, to the encoder's and decoder's ``embed_tokens`` (and T5's ``lm_head``): two embeddings alike, of one
op, were one module (``ownable``), the decoder's reads were the encoder's, and ``shared.weight`` and
``decoder.embed_tokens.weight`` were lost. Readers whose scopes are some of the keys qualify, each scope its own
module (``submodule``'s key holds the scope), and a key nothing reads is an ``nn.Embedding`` of the table's shape
(``_unread_module``): the first key, where nothing reads it (``self.shared = nn.Embedding(100, 32)``), holds the
weight that the readers' modules take; a later one takes it too.

Example:
    >>> t.layer(node, "Dropout", (0.1,), {}, None, [x])   # self.<scope> = nn.Dropout(0.1); x_1 = self.<scope>(x)
    'self.layers_0_dropout'
"""
from __future__ import annotations

import hashlib

import numpy as np

from ...ops.embedding import EMBEDDING
from ...ops.linear import LINEAR
from ..auto_names import block_path
from ..codegen import literal
from .held import held_layer, held_param
from .literals import plain

__all__ = ["ModuleWriter"]

#: op -> the input a module owns as its weight, for a tied parameter (Note [tied modules])
_TIED_READERS = {EMBEDDING: EMBEDDING.input_names.index("table"), LINEAR: LINEAR.input_names.index("weight")}
#: the last parts of a stored weight's name that name no module (``conv.weight`` is module ``conv``)
_WEIGHT_WORDS = {"weight", "bias", "kernel", "folded", "folded_bias", "gamma", "beta", "embeddings",
                "running_mean", "running_var", "moving_mean", "moving_variance", "in_proj_weight",
                "reordered"}  # passes/layout/rules.py: a linear weight whose columns follow a moved flatten
_INLINE_MAX = 16  # stored arrays with at most this many elements are written into __init__ as literals


class ModuleWriter:
    """``TorchEmitter``'s declarations: ``buffer``, ``store`` (an ``nn.Parameter``), ``submodule`` and ``layer``
    (a submodule and its call). Reads the emitter's ``attrs`` (the Namespace of ``self.``), ``init``, ``state``,
    ``paths``, ``module_of``, ``_shared`` and ``_weightless``."""

    def buffer(self, raw_name: str, array) -> str:
        """Register ``array`` as a buffer and return ``self.<name>``.

        Small arrays are written into ``__init__`` (non-persistent, so the code shows the numbers);
        larger ones are zeros in ``__init__`` and come from model.safetensors, or from buffers.safetensors where
        the source has no state_dict key for them (Note [computed buffers] in shards.py).
        """
        array = np.asarray(array)
        dtype, name = self.dtype(str(array.dtype)), self.attrs.name(raw_name, "buffer")
        if raw_name in (self.graph.meta.get("source_buffers") or ()):  # on its module: Note [the source's keys]
            self.paths[name] = raw_name
        zeros = f"torch.zeros({literal(tuple(array.shape))}, dtype={dtype})"
        if array.size == 0 or array.size > _INLINE_MAX:
            self.state.update({name: array} if array.size else {})
            computed = array.size and raw_name not in self.graph.meta.get("source_keys", (raw_name,))
            self.computed = self.computed or bool(computed)
            kept = "" if array.size and not computed else ", persistent=False"
            self.init.line(f"self.register_buffer({literal(name)}, {zeros}{kept})")
        else:
            self.init.line(f"self.register_buffer({literal(name)}, torch.tensor({literal(plain(array))}, "
                           f"dtype={dtype}), persistent=False)")
        return f"self.{name}"

    def store(self, raw_name, array, trainable=False) -> str:
        """A source parameter used directly is an ``nn.Parameter``; other stored arrays are buffers (``buffer``)."""
        held = held_param(self, raw_name)  # Note [held parameters] in held.py
        if held is not None:
            return held
        if not trainable:
            return self.buffer(raw_name, array)
        array = np.asarray(array)
        tied = (self.graph.meta.get("tied") or {}).get(raw_name) or [raw_name]
        first, *others = (block_path(key, self.graph) for key in tied)  # Note [parts named alike] in blocks_siblings.py
        name = self.attrs.name(first, "param")
        self.state[name] = array
        self.paths[name] = first
        self.init.line(f"self.{name} = nn.Parameter(torch.zeros({literal(tuple(array.shape))}, "
                       f"dtype={self.dtype(str(array.dtype))}))")
        for other in others:  # one parameter under each of the source's keys: Note [the source's keys]
            alias = self.attrs.name(other, "param")
            self.state[alias], self.paths[alias] = array, other
            self.init.line(f"self.{alias} = self.{name}")
        return f"self.{name}"

    # -- writing ----------------------------------------------------------------------------
    def submodule(self, node, cls: str, args=(), kwargs=None, weights=None) -> str:
        """Declare ``self.NAME = nn.CLS(*args, **kwargs)`` holding ``weights``; return ``self.NAME``.

        ``weights`` maps state_dict suffixes (``"weight"``, ``"running_mean"``) to stored Values
        or arrays. A layer applied twice (same constructor, same stored weights) is declared once; one without
        weights once per source module (Note [weightless modules]).
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
        hint = self._module_hint(node, weights)
        if not ids and hint in self._containers():  # a function the source module calls: Note [weightless modules]
            hint = f"{hint}.{node.op.name}"
        tied = [(k, v) for k, v in weights.items() if hasattr(v, "type") and v in self.tied()]
        key = (cls, text, ids or hint) + ((hint,) if tied else ())  # Note [weightless modules]; [tied modules]
        if key in self._shared:
            return self._shared[key]
        hint = hint if ids else self._weightless_hint(hint, cls, text)
        for _, value in tied:  # the first key nothing reads holds the weight: Note [tied modules]
            if self._tied[value] is None and self._unread[value][:1] == [self.graph.meta["tied"][value.name][0]]:
                self._tied[value] = f"{self._unread_module(value, self._unread[value].pop(0))}.weight"
        name = self.attrs.name(hint, cls.lower(), cased=True)  # a Keras source's case: block_2_expand_BN
        self.paths[name] = hint
        self.init.line(f"self.{name} = nn.{cls}({text})")
        for suffix, array in arrays.items():
            self.state[f"{name}.{suffix}"] = array
        for suffix, value in tied:  # Note [tied modules]
            if self._tied[value]:
                self.init.line(f"self.{name}.{suffix} = {self._tied[value]}")
            else:
                self._tied[value] = f"self.{name}.{suffix}"
            for other in self._unread.pop(value, ()):
                self.init.line(f"{self._unread_module(value, other)}.weight = {self._tied[value]}")
        self._shared[key] = f"self.{name}"
        return f"self.{name}"

    def _unread_module(self, value, key) -> str:
        """An ``nn.Embedding`` holding the tied ``value`` at ``key`` (``shared.weight``), a key of it that no node
        reads (Note [tied modules]); returns ``self.<name>``."""
        array = np.asarray(self.param(value))
        hint = block_path(key.rpartition(".")[0], self.graph)
        name = self.attrs.name(hint, "embedding", cased=True)
        dtype = "" if str(array.dtype) == "float32" else f", dtype={self.dtype(str(array.dtype))}"
        self.paths[name], self.state[f"{name}.weight"] = hint, array
        self.init.line(f"self.{name} = nn.Embedding({', '.join(str(n) for n in array.shape)}{dtype})")
        return f"self.{name}"

    def ownable(self, value) -> bool:
        """``EmitterBase.ownable``, and a tied parameter each reader of which owns a module (Note [tied modules])."""
        return super().ownable(value) or (hasattr(value, "type") and value in self.tied())

    def tied(self) -> dict:
        """The tied parameters each of whose readers owns a module -> the weight expression of the module holding
        it, or None before it is written (Note [tied modules]); ``_unread``: their keys no node reads."""
        if self._tied is None:
            tied, reads = self.graph.meta.get("tied") or {}, {}
            for node in self.graph.nodes:
                for i, value in enumerate(node.inputs):
                    if value is not None and value.name in tied and self.is_param(value):
                        reads.setdefault(value, []).append((node, i))
            self._tied, self._unread = {}, {}
            for value, found in reads.items():
                scopes = {f"{node.scope}.weight" for node, _ in found}
                if all(_TIED_READERS.get(node.op) == i for node, i in found) and scopes <= set(tied[value.name]):
                    self._tied[value] = None
                    self._unread[value] = [k for k in tied[value.name] if k not in scopes]
        return self._tied

    def _containers(self) -> frozenset:
        """The source paths that hold other modules or weights (``blocks.0.se`` holds ``blocks.0.se.fc1``)."""
        if self._holders is None:
            paths = [n.scope for n in self.graph.nodes if n.scope] + list(self.graph.params)
            self._holders = frozenset(p.rsplit(".", k)[0] for p in paths for k in range(1, p.count(".") + 1))
        return self._holders

    def _weightless_hint(self, hint, cls, text) -> str:
        """Inside a repeated block, a weightless module's name as the first block of its kind wrote the module at the
        same position (Note [weightless modules]): Keras numbers the layers it names itself model-wide, so the
        attention's dropout is ``self_attention.dropout`` in one block and ``self_attention.dropout_1`` in the
        next, where the blocks' code must read the same."""
        blocks = {b["key"]: b for b in self.graph.meta.get("blocks") or []}
        parts = hint.split(".")
        key = next((k for k in (".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)) if k in blocks), None)
        if key is None:
            return hint
        block = blocks[key]
        mine = self._weightless.setdefault(key, [])
        first = next((self._weightless.get(b["key"]) for b in blocks.values() if b["kind"] == block["kind"]), None)
        rel = hint[len(key) + 1:]
        if first is not None and first is not mine and len(first) > len(mine) and first[len(mine)][:2] == (cls, text):
            rel = first[len(mine)][2]
        mine.append((cls, text, rel))
        return f"{key}.{rel}"

    def _module_hint(self, node, weights) -> str:
        """The source layer's name, or its name in a block cut from the graph (``conv2d_43`` -> ``mixed4.conv2d_3``,
        Note [auto names in cut blocks] in passes/blocks_cut.py)."""
        hint = block_path(self._source_hint(node, weights), self.graph)  # Note [parts named alike] in passes/
        return (self.graph.meta.get("block_names") or {}).get(hint, hint)  # blocks_siblings.py

    def _source_hint(self, node, weights) -> str:
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
        """A submodule and its call: ``NAME = self.NAME(inputs)``. Returns the attribute expression. A weight an
        ``nn.MultiheadAttention`` holds is read from it (Note [held parameters] in held.py)."""
        held = held_layer(self, node, weights, inputs)
        if held is not None:
            expr, hint, attr, module = held
            self._bind(node, expr, self.variables(node, hint))
            self.module_of.update({out: module for out in node.outputs} if module else {})
            return f"self.{attr}"
        module = self.submodule(node, cls, args, kwargs, weights)
        call = ", ".join(self.ref(v) for v in inputs)
        self._bind(node, f"{module}({call})", self.variables(node, module[len("self."):]))
        for out in node.outputs:
            self.module_of[out] = module[len("self."):]
        return module
