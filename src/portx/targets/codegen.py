"""What every target's emitter shares: safe identifiers and literals, a line writer, the emitter base
that walks the graph, and importing the written ``model.py`` the way a user would.

Note [untrusted names]: every string that came from a model file (module paths, layer and
parameter names) is untrusted. It reaches generated code only through ``Namespace.name`` (an
ASCII identifier, never a keyword or builtin) or ``literal`` (``repr`` of plain data), so no
name can close a string, start a statement or call anything.

Note [emit-time unsupported]: an emit rule that meets a variant its target cannot express raises
``errors.Unsupported`` (never NotImplementedError, which would be reported as a portx bug).
``EmitterBase.emit_nodes`` catches it per node, binds the node's outputs to a stand-in so later rules
keep going, and after the walk raises one ``UnsupportedOps`` (exit 3) listing every such node with
its op, scope and reason, together with the ops that have no emit rule at all: the same
collect-then-fail as the frontends.

Example:
    >>> ns = Namespace(reserved={"keras"})
    >>> ns.name("layer1.0.conv1"), ns.name("__import__('os')")
    ('layer1_0_conv1', 'import_os')
"""
from __future__ import annotations

import builtins
import importlib.util
import keyword
import math
import re
import sys
import uuid
from pathlib import Path

import numpy as np

from ..errors import Unsupported, UnsupportedOps
from ..ir import FreeDimRefused, SymDim, lookup
from ..progress import step
from .block_sites import block_site
from .comments import comment_text, module_comment, module_sentences
from .linewrap import wrap_line
from .origins import record_origins

__all__ = ["Namespace", "literal", "LineWriter", "nested_outputs", "flatten_outputs", "import_by_path",
           "EmitterBase", "missing_emit_rules", "comment_text", "module_comment", "module_sentences"]

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")
_MAX_LEN = 48


class Namespace:
    """Hands out unique, legal, harmless Python identifiers for arbitrary strings.

    Example: ``Namespace().name("my layer")`` -> ``"my_layer"``.
    """

    def __init__(self, reserved=()):
        self._taken = set(reserved) | set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)

    def release(self, name: str) -> None:
        """Give back a name handed out but not used."""
        self._taken.discard(name)

    def name(self, raw: str, fallback: str = "v", room: int = 0, cased: bool = False) -> str:
        """A fresh identifier derived from ``raw`` (see Note [untrusted names]); ``room``: characters allowed past
        the usual length (a repeated block's longer prefix, Note [names in longer blocks] in keras_jax/style.py);
        ``cased``: in ``raw``'s letter case (a Keras layer's name, ``block_2_expand_BN``), unique in lower case,
        so that its ``.lower()`` is the identifier taken."""
        base = _NOT_IDENT.sub("_", str(raw)).strip("_")[:_MAX_LEN + room].strip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        if base.startswith("__"):
            base = base.lstrip("_") or fallback
        candidate, n = base.lower(), 1
        while candidate in self._taken:
            candidate = f"{base.lower()}_{n}"
            n += 1
        self._taken.add(candidate)
        written = base + candidate[len(base):]  # ``None`` or ``Exception`` in its case is a keyword or builtin
        return written if cased and written not in self._taken else candidate


def literal(value, free=None) -> str:
    """Python source for plain data (numbers, bools, None, str, tuples/lists of them).

    ``free(dim)`` writes a SymDim (Note [free dims] in ir/types.py); without it a SymDim raises FreeDimRefused.
    Example: ``literal((1, 2))`` -> ``"(1, 2)"``; anything else raises TypeError.
    """
    if isinstance(value, SymDim):
        if free is None:
            raise FreeDimRefused(f"dimension {value} is free at run time", value.symbols)
        return free(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(float(value))
    if isinstance(value, complex):  # complex(re, im): valid for inf/nan parts too, which repr is not
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v, free) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, free) for v in value) + "]"
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return literal(value.item())
    raise TypeError(f"cannot write {type(value).__name__} as a literal in generated code")


class LineWriter:
    """Collects indented source lines; with a ``width``, wraps longer statements (``linewrap.py``)
    and puts a trailing comment that does not fit on its own line above. Example:
    ``w.line("x = 1"); w.text()``."""

    def __init__(self, width=None):
        self.rows = []  # (indent, statement, trailing comment); targets/structure.py rewrites them
        self.indent = 0
        self.width = width

    def line(self, text: str = "", comment: str = "") -> None:
        """Append one line at the current indent, with an optional trailing ``# comment``."""
        self.rows.append((self.indent, text, comment))

    def comment_last(self, comment: str) -> None:
        """Give the last line the trailing ``# comment`` (after the one it has, if any)."""
        indent, text, old = self.rows[-1]
        self.rows[-1] = (indent, text, f"{old}; {comment}" if old else comment)

    def __len__(self) -> int:
        return len(self.rows)

    def text(self) -> str:
        """All lines joined, ending in a newline."""
        return "\n".join(row for line in self.rows for row in self._render(*line)) + "\n"

    def _render(self, indent, text, comment) -> list:
        pad = "    " * indent
        if comment and text and (self.width is None or len(f"{pad}{text}  # {comment}") <= self.width):
            return [f"{pad}{text}  # {comment}"]
        above = [f"{pad}# {comment}"] if comment else []
        if not text:
            return above or [""]
        return above + (wrap_line(pad + text, self.width) if self.width else [pad + text])


# Note [output structure]: a source may return nested dicts, tuples and lists of tensors. The IR
# keeps a flat output list; graph.meta["output_structure"] records the nesting as plain data
# (a leaf is the output's index; {"tuple": [...]}, {"list": [...]}, {"dict": [[key, child], ...]}),
# the emitters write the same nesting back, and ``flatten_outputs`` reads it in the IR's order
# (dict values in insertion order, as torch.export and Keras both keep it).
def nested_outputs(spec, refs) -> str:
    """Python source for the nested output ``spec`` over the flat output expressions ``refs``."""
    if isinstance(spec, int):
        return refs[spec]
    (kind, items), = spec.items()
    if kind == "dict":
        return "{" + ", ".join(f"{literal(key)}: {nested_outputs(child, refs)}" for key, child in items) + "}"
    inner = ", ".join(nested_outputs(child, refs) for child in items)
    return f"[{inner}]" if kind == "list" else f"({inner}{',' if len(items) == 1 else ''})"


def flatten_outputs(out) -> list:
    """The leaves of a model's (possibly nested) outputs in order: dict values in insertion order."""
    if isinstance(out, dict):
        return [leaf for value in out.values() for leaf in flatten_outputs(value)]
    if isinstance(out, (list, tuple)):
        return [leaf for value in out for leaf in flatten_outputs(value)]
    return [out]


def import_by_path(path, module_name=None):
    """Import a generated ``model.py`` by path, as a user would, under a unique module name.

    Example: ``import_by_path("out/model.py").load_model()``.
    """
    path = Path(path)
    name = module_name or f"portx_emitted_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def missing_emit_rules(graph, target: str) -> list:
    """(op, scopes, reason) for every op of ``graph`` that has no emit rule for ``target``."""
    found = {}
    for node in graph.nodes:
        if target not in node.op.emit_rules:
            found.setdefault(node.op.name, []).append(node.scope)
    return [(op, scopes, _no_emitter(lookup(op), target)) for op, scopes in found.items()]


def _no_emitter(op, target) -> str:
    """Why a node of ``op`` has no ``target`` code: an op the legalize pass decomposes says so."""
    if op.has("decomposed"):
        return (f"no {target} emitter: {op.name} is written as other IR ops by the legalize pass "
                "(passes/legalize/decompose.py); run the target's pass pipeline before emitting")
    return f"no {target} emitter"


class EmitterBase:
    """What the emitters of every target share: value references, statements and the walk over the graph.

    A subclass sets ``TARGET`` (the emit-rule key), ``self.ns`` (a Namespace), ``self.body`` (a
    LineWriter) and implements ``store(raw_name, array)`` (how a stored array is referenced) and
    ``variables(node, hint)`` (the names a node's outputs are bound to).
    Example: ``KerasEmitter(graph).emit_graph()`` -> the text of ``model.py``.
    """

    TARGET = ""
    TEMP_FROM_SCOPE = True  # temporaries are named after the node's scope (else after its first output)

    def __init__(self, graph):
        self.graph = graph
        self.names = {}  # Value -> the expression that holds it in the generated code
        self._readers = None  # Value -> how many nodes read it (``ownable``), counted on first use
        self.clobbered = set()  # values a later node overwrote in place: their variables no longer hold them
        self.spans = {}  # node index -> (``marks`` before, after) its rule (Note [structured code] in structure.py)
        self.origins = {}  # a key of the ``HELD`` dict -> the trainable params its weights came from (origins.py)

    def var_of(self) -> dict:
        """Value -> variable for the values a trace may read after the run (the overwritten ones left out)."""
        return {v: n for v, n in self.names.items() if v not in self.clobbered}

    # -- values ---------------------------------------------------------------------------
    def is_param(self, value) -> bool:
        """True for stored arrays (weights and folded constants)."""
        return self.graph.is_param(value)

    #: True where the emitter makes nodes of one op with the same weights one layer (torch-xla's submodules)
    SHARES_LAYERS = False

    def ownable(self, value) -> bool:
        """True when a layer or submodule may own ``value`` (None counts): a stored array that one node reads,
        or, where the target shares layers (``SHARES_LAYERS``), that nodes of one op read.

        A weight nodes of different ops read (an embedding tied to the LM head) stays one stored array that
        each reads (``ref``), so that it is one trainable variable, as in the source.
        """
        if value is None:
            return True
        if self._readers is None:
            self._readers = {}
            for node in self.graph.nodes:
                for v in set(node.inputs) - {None}:
                    self._readers.setdefault(v, []).append(node.op)
        readers = self._readers.get(value, [])
        return self.is_param(value) and (len(readers) <= 1 or (self.SHARES_LAYERS and len(set(readers)) == 1))

    def param(self, value) -> np.ndarray:
        """The stored array behind a parameter value."""
        return self.graph.params[value.name]

    def ref(self, value) -> str:
        """A code expression for ``value``: its variable, or the target's form of a stored array."""
        if isinstance(value, str):  # already an expression (from temp, sublayer, ...)
            return value
        if value in self.names:
            return self.names[value]
        if not self.is_param(value):
            raise KeyError(f"value %{value.name} is used before it is defined")
        trainable = self.graph.is_trainable(value.name)
        self.names[value] = expr = self.store(value.name, self.param(value), trainable=trainable)
        return expr

    def const(self, node, array, hint="const") -> str:
        """An expression for an array a rule computed (an interpolation matrix, an index table), named
        ``<node scope>_<hint>`` so the generated code says what the table is."""
        return self.store(f"{node.scope or node.outputs[0].name}_{hint}", np.asarray(array))

    def store(self, raw_name: str, array, trainable=False) -> str:
        """An expression for a stored array (subclasses: an inline literal, a Constant layer, a buffer);
        ``trainable`` for a source parameter used directly, which must train in the target too."""
        raise NotImplementedError

    def lit(self, value) -> str:
        """Python source for plain attribute data; free dims as the target writes them (``free_dim``)."""
        return literal(value, self.free_dim)

    def free_dim(self, dim) -> str:
        """A free dimension (SymDim) as code; here refused (FreeDimRefused): a target that can, overrides."""
        raise FreeDimRefused(f"dimension {dim} is free at run time", dim.symbols)

    def site(self, symbol):
        """(Value, axis) where ``symbol`` is read at run time: in a repeated block, from a value the block has (Note
        [a block reads its own batch] in block_sites.py), else the model input of its first site."""
        found = block_site(self, symbol)
        if found is not None:
            return found
        index, axis = self.graph.meta["free"]["dims"][symbol]["sites"][0]
        return self.graph.inputs[index], axis

    # -- writing ----------------------------------------------------------------------------
    def temp(self, node, expr: str, hint: str = "t") -> str:
        """Write ``tmp = EXPR`` and return the temporary's name."""
        base = (node.scope or node.outputs[0].name) if self.TEMP_FROM_SCOPE else node.outputs[0].name
        name = self.ns.name(f"{base}_{hint}", node.op.name)
        self.body.line(f"{name} = {expr}")
        return name

    def assign(self, node, expr: str) -> None:
        """Write ``out = EXPR`` (or ``a, b = EXPR`` for several outputs)."""
        self._bind(node, expr, self.variables(node, None))

    def variables(self, node, hint) -> list:
        """Fresh variable names for ``node``'s outputs (``hint``: a layer's or submodule's name)."""
        raise NotImplementedError

    def _bind(self, node, expr, targets):
        for value, var in zip(node.outputs, targets):
            self.names[value] = var
        self.body.line(f"{', '.join(targets)} = {expr}")

    # -- the walk ---------------------------------------------------------------------------
    def marks(self) -> tuple:
        """How far each line writer has got (``spans``: the lines each node wrote); torch adds ``__init__``'s."""
        return (len(self.body),)

    def check(self, node) -> None:
        """Refuse IR this target cannot print (a bug upstream, not the user's model); subclasses override."""

    def emit_nodes(self) -> None:
        """Run every node's emit rule in graph order; collect, then fail (Note [emit-time unsupported])."""
        failures, refused = {}, None
        for done, node in enumerate(self.graph.nodes):
            step(done, len(self.graph.nodes), f"{node.scope or '<top>'} ({node.op.name})")  # progress.py display
            self.at = done  # the node being written (block_sites.py)
            self.check(node)
            rule = node.op.emit_rules.get(self.TARGET)
            plain, free = node.attrs, self.graph.free_attrs(node)
            node = node.replace(attrs=free) if free is not plain else node
            try:
                if rule is None:
                    raise Unsupported(_no_emitter(node.op, self.TARGET))
                written, held, marks = len(self.body), len(getattr(self, self.HELD)), self.marks()
                try:
                    rule(node, self)
                    self.spans[done] = (marks, self.marks())
                    record_origins(self, node, held)  # targets/origins.py: the weights it wrote came from node
                except (FreeDimRefused, TypeError, ValueError) as exc:
                    if free is plain and not isinstance(exc, FreeDimRefused):
                        raise
                    symbols = getattr(exc, "symbols", None) or {s for d in _sym_dims(free) for s in d.symbols}
                    if refused is None:
                        refused = FreeDimRefused(f"{node.where()}: {exc}", symbols, node.where())
                    refused.symbols |= symbols
                    for value in node.outputs:
                        self.names.setdefault(value, f"refused_{len(self.names)}")
                    continue
                comment = module_comment(self.graph, node)
                if comment and len(self.body) > written:
                    self.body.comment_last(comment)
            except Unsupported as exc:
                failures.setdefault((node.op.name, str(exc)), []).append(node.scope or node.outputs[0].name)
                for value in node.outputs:  # a stand-in, so that later rules keep going
                    self.names.setdefault(value, f"unsupported_{len(self.names)}")
        self.at = None
        if failures:
            raise UnsupportedOps([(op, scopes, reason) for (op, reason), scopes in failures.items()],
                                 where=f"target {self.TARGET}")
        if refused:
            raise refused


def _sym_dims(data):
    """Every SymDim inside attribute data."""
    if isinstance(data, SymDim):
        yield data
    elif isinstance(data, dict):
        for v in data.values():
            yield from _sym_dims(v)
    elif isinstance(data, (tuple, list)):
        for v in data:
            yield from _sym_dims(v)
