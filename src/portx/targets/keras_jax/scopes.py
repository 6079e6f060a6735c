"""Keras name scopes in emitted code: ``with keras.name_scope("cell"):`` around the layers the source built inside
one, so that their weights' paths (``cell/conv/kernel``) are the source's (Note [keras name scopes] in
frontends/keras/__init__.py).

Note [emitted name scopes]: a Keras layer takes its path from the scopes open where it is first called (built), so
the emitter writes each layer statement inside the scopes ``graph.meta["name_scopes"]`` records for its source layer.
The statements are written in the graph's order, not the source's, so scopes are closed and opened again where
the order interleaves two of them (the paths are what counts). A statement that creates no scoped layer (a
``keras.ops`` call, a weightless layer of another kind) stays in the scopes its neighbours share. This runs after
the blocks are written (targets/keras_jax/blocks.py), on build_model's rows and on each block function's rows; in
a function a scope that carries the block's id (NASNet's ``normal_A_block_0``) is written from its ``name``
argument (``f"normal_A_block_{name}"``), as the layer names are. Without recorded scopes nothing changes.

Note [nested models' scopes]: a ``Sequential`` used as a layer of a functional model (keras.applications' ConvNeXt
stem and downsampling blocks) builds its layers inside its own scope: ``convnext_tiny_stem/convnext_tiny_stem_conv/
kernel``. The frontend records those scopes as it does ``keras.name_scope``'s (Note [keras name scopes]), and a layer
whose IR scope is its model's path and its own name (``convnext_tiny_stem.convnext_tiny_stem_conv``) is written under
its own name (``local_scopes``: its variable and layer), inside ``with keras.name_scope("convnext_tiny_stem")``, not
flattened to ``convnext_tiny_stem_convnext_tiny_stem_conv``. Where such a model is a repeated block and its layers
carry the block's number after their name (``convnext_tiny_downsampling_block_0`` holds ``convnext_tiny_downsampling_
layernorm_0``), the block function writes that number as Keras' numbered names are written (``numbered_locals``,
Note [numbered names in block functions] in targets/auto_names.py): ``name=f"convnext_tiny_downsampling_conv_{n}"``
under ``with keras.name_scope(name)``. A name already taken in the model (two nested models each with a ``dense``)
is numbered by Namespace, so that path alone differs: a functional model's layer names are unique.

Example:
    >>> rows = open_scopes(emitter.body.rows, body_scopes(emitter.body.rows, layer_scopes(emitter)))
"""
from __future__ import annotations

import ast
import re

from ..auto_names import local_scopes, numbered_locals
from ..codegen import literal

__all__ = ["SOURCE_WEIGHT", "source_weight", "local_scopes", "numbered_locals", "layer_scopes", "body_scopes", "function_scopes", "open_scopes"]

_NAMED = re.compile(r"""name=(?:'(\w+)'|"(\w+)")""")
#: the name Keras gives a weight created without one: ``variable``, ``variable_3`` (a counter of the process)
_COUNTED = re.compile(r"^variable(?:_(\d+))?$")

# Note [counter-named weights]: a weight a layer creates without a name (keras.applications' LayerScale:
# ``self.add_weight(shape=...)``) is named by a counter of the Python process (``variable``, ``variable_1``, ...), so
# its path (``convnext_tiny_stage_0_block_1_layer_scale/variable_1``) depends on what the process built before: the
# same source built twice differs. The emitted model names it as the source did at conversion, written out: a
# ``SourceWeight`` layer named after the source layer, its weight ``variable_{number}`` (``number=0``: ``variable``),
# the number a keyword that a block function takes as an argument, like a size. Building or loading the emitted model
# in another process therefore gives the same paths, which the source itself would not. Loading does not depend on
# them: model.py's ``load_weights`` reads Keras' weight files, which key each weight by the layer's place and class
# and the weight's index (``layers/source_weight/vars/0``), never by its path; so a source's own ``.weights.h5``
# (``layers/layer_scale/vars/0``, ``layers/sequential/...``) is not a file for the emitted model either way, and
# portx writes the emitted model's weights itself. The IR keeps the rule's name (``gamma``: the torch-xla key
# ``layer_scale_gamma``); ``graph.meta["param_sources"]`` (Note [gradient pairing]) gives the source's path.
#
# Note [source-named weights]: any stored source weight the emitted code holds in a layer of its own (a traced
# layer's weight used as it is: keras-hub's ``position_embedding/embeddings``, an attention's separate bias) is a
# ``SourceWeight`` named after its source layer, its weight after the source's (``weight='embeddings'``), where the
# frontend recorded the weight's Keras path (``param_sources``, ``graph.meta["weight_paths"]`` for traced layers):
# its path is the source's where the layer is not in a repeated block, and within one the source's path flattened to
# one layer, as the block's other layers are (a functional model's layer names are unique, so ``transformer_layer_0/
# .../attention_output`` cannot nest). A weight whose source layer holds others (an attention output's bias beside
# its kernel, which a Dense named after the layer holds) and other stored arrays stay ``Constant`` (``value``).
SOURCE_WEIGHT = '''
@keras.saving.register_keras_serializable(package="converted")
class SourceWeight(layers.Layer):
    """Holds one source weight under the source's name: ``weight``, or ``{weight}_{number}`` for a weight Keras named
    by its process-wide counter (``variable_3``; number 0: ``variable``), whatever this process built before.

    Registered serializable: after this file is imported, keras.saving.load_model reads a saved model.
    """

    def __init__(self, shape, dtype="float32", trainable=False, weight="variable", number=0, **kwargs):
        kwargs.pop("dtype_policy", None)
        super().__init__(trainable=trainable, **kwargs)
        self.value_shape, self.value_dtype, self.weight, self.number = tuple(shape), dtype, weight, number
        self.value = self.add_weight(shape=shape, dtype=dtype, initializer="zeros", trainable=trainable,
                                     name=f"{weight}_{number}" if number else weight)

    def call(self, anchor):
        return ops.convert_to_tensor(self.value)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "shape": self.value_shape,
                "dtype": self.value_dtype, "weight": self.weight, "number": self.number}
'''


def source_weight(graph, param) -> str | None:
    """The keywords a ``SourceWeight`` holding ``param`` takes (Note [source-named weights]), or None where the
    source's weight path is not known. Example: source ``block_layer_scale/variable_3`` -> ``", number=3"``."""
    path = (graph.meta.get("param_sources") or {}).get(param) or (graph.meta.get("weight_paths") or {}).get(param)
    name = str(path).rpartition("/")[2] if path else ""
    module = param.rpartition(".")[0] + "."
    if not name.isidentifier() or any(p.startswith(module) and p != param for p in graph.params):
        return None  # the layer's other weights are in a layer the emitter names after it (an EinsumDense's kernel)
    counted = _COUNTED.match(name)  # Note [counter-named weights]
    return f", number={int(counted[1] or 0)}" if counted else f", weight={literal(name)}"


def layer_scopes(emitter) -> dict:
    """{emitted layer name: its source layer's name scopes as a tuple}, for the layers that had some: a layer
    written under its source layer's name (weightless ones included), and one written from a scoped node's
    weights under another name."""
    recorded = emitter.graph.meta.get("name_scopes") or {}
    if not recorded:
        return {}
    producer = {out: node for node in emitter.graph.nodes for out in node.outputs}
    found = {name: tuple(path.split("/")) for name, path in recorded.items()}  # a layer written under its source name
    for value, name in emitter.layer_of.items():
        node = producer.get(value)
        path = recorded.get(node.scope) if node is not None else None
        if path:
            found[name] = tuple(path.split("/"))
    return found


def body_scopes(rows, scopes) -> list:
    """Per row of build_model: the scopes of the layer its statement creates (a tuple), or None."""
    own = []
    for _, text, _ in rows:
        names = [a or b for a, b in _NAMED.findall(text or "")]
        own.append(next((scopes[n] for n in names if n in scopes), None))
    return own


def open_scopes(rows, own, scope_text=literal) -> list:
    """``rows`` (indent, statement, comment) with ``with keras.name_scope(...):`` lines opened around each
    statement ``own`` gives scopes for (a tuple per row, None for none: Note [emitted name scopes]); ``scope_text``
    writes a scope's name as Python. Rows indented deeper than the first (a loop's body) follow the row above."""
    if not rows or not any(own):
        return rows
    base = min(indent for indent, _, _ in rows)
    own = [s if indent == base else None for (indent, _, _), s in zip(rows, own)]
    rows, own = _grouped(rows, own, base)  # Note [scopes kept open]
    known = [i for i, s in enumerate(own) if s is not None]
    filled, nxt = [], 0
    for i, (indent, _, _) in enumerate(rows):
        while nxt < len(known) and known[nxt] < i:
            nxt += 1
        if own[i] is not None or indent != base:
            filled.append(own[i] if own[i] is not None else filled[-1] if filled else ())
            continue
        before = own[known[nxt - 1]] if nxt else ()
        after = own[known[nxt]] if nxt < len(known) else ()
        filled.append(_common(before, after))
    out, opened = [], ()
    for (indent, text, comment), scope in zip(rows, filled):
        if indent == base:
            keep = _common(opened, scope)
            for depth, name in enumerate(scope[len(keep):], len(keep)):
                out.append((base + depth, f"with keras.name_scope({scope_text(name)}):", ""))
            opened = scope
        out.append((indent + len(opened), text, comment))
    return out


# Note [scopes kept open]: the graph's order interleaves scopes where the source built two branches side by side
# (NASNet's ``normal_A_block_0/block_1`` and ``.../block_2``), and each change of scope closed one ``with`` block and
# opened another. A statement that creates a layer in some scopes therefore moves up to just after the last statement
# in the same scopes when nothing between them computes what it reads or reads what it assigns (a statement of
# another form, a loop or a comment line stays where it is, and nothing moves past it). What the code computes is the
# same, and so are the weights' order and paths: a functional model orders its layers by the graph, not by the
# statements that made them.


def _grouped(rows, own, base) -> tuple:
    """``rows`` and ``own`` with each scoped statement moved up next to the last one in its scopes (Note [scopes
    kept open])."""
    names = [_names(text) if indent == base else None for indent, text, _ in rows]
    order = []
    for i in range(len(rows)):
        at = len(order)
        if own[i] is not None and names[i] is not None:
            reads, writes = names[i]
            k = len(order)
            while k and own[order[k - 1]] != own[i]:
                other = names[order[k - 1]]
                if other is None or other[1] & (reads | writes) or other[0] & writes:
                    break
                k -= 1
            if 0 < k < len(order) and own[order[k - 1]] == own[i]:
                at = k
        order.insert(at, i)
    return [rows[i] for i in order], [own[i] for i in order]


def _names(text) -> tuple | None:
    """(names read, names assigned) by one statement, or None for a line that is not one whole statement."""
    try:
        tree = ast.parse(text.strip()) if text.strip() else None
    except SyntaxError:
        return None
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Assign, ast.Expr)):
        return None
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    return ({n.id for n in found if isinstance(n.ctx, ast.Load)}, {n.id for n in found if isinstance(n.ctx, ast.Store)})


def _common(a, b) -> tuple:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return tuple(a[:n])


def function_scopes(instances, scopes) -> list:
    """Per row of a block function (one per ``instances[0].rows``): the scopes, written as Python, that the
    blocks' layer on that row was built in; a scope that differs between the blocks by their id is written from
    ``name`` (Note [emitted name scopes]), one that does not is a constant even where it holds the id (NASNet's
    ``block_1`` in cell 1)."""
    per = [_instance_scopes(inst, scopes) for inst in instances]
    own = []
    for k, first in enumerate(per[0]):
        # blocks merged around an optional part (Note [an optional shortcut] in optional.py) have rows of their own:
        # a row another block lacks opens no scope
        rows = [found[k] if k < len(found) else None for found in per]
        if first is None or any(r is None or len(r) != len(first) for r in rows):
            own.append(None)
            continue
        own.append(tuple(literal(part) if len({r[i] for r in rows}) == 1 and len(rows) > 1
                         else _named(part, instances[0]) for i, part in enumerate(first)))
    return own


def _instance_scopes(inst, scopes) -> list:
    """Per row of ``inst``: the scopes of the layer it creates, or None."""
    own, firsts = [], dict(zip(inst.stems, inst.numbers[len(inst.numbers) - len(inst.stems):]))
    for parts, _ in inst.rows:
        names = [inst.flat(kind, v) if kind == "s" else f"{v[0]}_{inst.suffix}{v[1]}" if kind == "e" else
                 f"{v[0]}_{int(firsts[v[0]]) + v[1]}" for kind, v in parts if kind in "sek"]  # k: auto_names.py
        own.append(next((scopes[n] for n in names if n in scopes), None))
    return own


def _named(scope, first) -> str:
    """A scope's name in a block function: ``f"normal_A_block_{name}"`` where it holds the block's id."""
    ident = first.suffix or first.call_name()
    pattern = rf"(?:^|(?<=_)){re.escape(ident)}(?=_|$)"
    if ident and re.search(pattern, scope):
        text = re.sub(pattern, "{name}", scope.replace("{", "{{").replace("}", "}}"))
        if text == "{name}":
            return "name"
        return f'f"{text}"' if text.isprintable() and not set(text) & set("\"\\'") else "f" + repr(text)
    return literal(scope)
