"""How the written ``model.py`` reads: layer arguments as keras.applications writes them, readable names.

A keyword equal to the layer's Keras default is left out, the leading arguments (``filters``,
``units``, ``kernel_size``, ``pool_size``...) are positional, and a tuple of equal entries is one
int, so ``Conv2D(filters=16, kernel_size=(3, 3), strides=(1, 1), padding='same', use_bias=True)``
reads ``Conv2D(16, 3, padding='same')``. ``data_format`` is left out where it is Keras's default
``channels_last``; the file then pins ``keras.config.set_image_data_format`` once.

Note [variable names]: a node's variable (and its layer, unless the layer is named after its
weight's module, ``attn.in_proj_weight`` -> ``attn_in_proj``) is named after its scope when it is
the last node of that scope (the module's result: ``layer1_0`` is the block's output ReLU);
after its scope and the input it feeds when it is the only reader's named input in the same scope
(``attn_q``, ``attn_k``, ``attn_v`` for attention), which the reshapes, transposes and slices
leading there share (``attn_q_reshape``), and a value split into such roles joins them
(``attn_qkv``); after its scope and op otherwise (``layer1_0_relu``, ``layer1_0_add``). A transpose
the layout pass added carries no scope (it belongs to no source layer, which per-layer checks rely
on; ``meta["layout_transposes"]`` names them); for naming it takes the scope of the node producing
its input. Nodes of no scope keep their value's name (``add``, ``relu_2``).

Note [layer names in the source's case]: a Keras layer keeps its source name's letter case (MobileNetV2's
``block_2_expand_BN``, ``Conv1``), so the emitted weights' paths are the source's (``block_2_expand_BN/gamma``);
Namespace lower-cased it with the identifier, and every such weight path differed. The variable holding the layer's
output is that name lower-cased (``block_2_expand_bn = layers.BatchNormalization(..., name='block_2_expand_BN')``),
as keras.applications writes a lower-case ``x`` beside its names: Namespace keeps names unique in lower case
(``Namespace.name(cased=True)``), so the variable is unique too. Layers without a source name (an input, a
``FreeShape``, a rule's sublayer) are named as their variable.

Note [weightless layers in blocks]: Keras numbers the layers it names itself model-wide, so keras-hub's attention
softmax is ``transformer_layer_0.self_attention.softmax`` in one block and ``...softmax_1`` in the next; the
blocks' code must read the same to be written once (Note [structured code] in targets/structure.py). The nodes of a
source layer without trainable weights in a repeated block (``graph.meta["blocks"]``) whose scope differs from the
node at the same position in the first block of its kind only in such numbers take that node's scope after their
own block's key (``_block_scopes``), as torch-xla names such modules (Note [weightless modules] in
torch_xla/modules.py). A layer with weights keeps its source name, so the layer names that hold weights follow the
source's (such a block stays flat).

Note [keywords that vary in blocks]: a layer leaves out a keyword at Keras' default, so keras.applications' first
block of a stage read ``Conv2D(4, 1, name=...)`` in ``conv2_block1`` and ``Conv2D(8, 1, strides=2, name=...)`` in
``conv3_block1``: one block kind (passes/blocks.py compares attribute names, not values) whose statements differed,
written flat. Where the nodes at one position of the blocks of a kind differ in their stride or dilation, each
writes the keyword, ``strides=1`` too, and the number becomes the block function's argument, as keras.applications
writes ``block1(x, filters, stride=1, ...)``.

Note [names in longer blocks]: Namespace cuts a name at 48 characters, so ``transformer_layer_0_self_attention_query_
reshape`` (48) kept its end and ``transformer_layer_10_...`` lost a letter: blocks 10 and later named their layers
differently from blocks 0 to 9 and were written by a second function; and a name cut from the whole path left the
block's function or class a stump (torchvision's ViT: ``self_attention_ou`` for ``encoder_layers_encoder_layer_0_
self_attention_out_proj``). A name that starts with a repeated block's prefix may run past the limit by that prefix's
length (``VariableNames.room``, ``structure.block_rooms``): it is cut, if at all, after the prefix, from the name the
block's code writes, so every block of a kind keeps the same name after its prefix.

Example:
    >>> layer_args("Conv2D", {"filters": 16, "kernel_size": (3, 3), "strides": (2, 2), "padding": "valid"})
    ['16', '3', 'strides=2']
"""
from __future__ import annotations

import ast
import re
import textwrap

from ..codegen import literal
from ..structure import block_rooms, room_of
from ..auto_names import block_path
from ..first_blocks import first_glue_names
from .scopes import local_scopes

__all__ = ["layer_args", "auto_names_in", "VariableNames", "layout_sentence"]

_CONV = {"strides": 1, "padding": "valid", "dilation_rate": 1, "groups": 1, "use_bias": True,
         "data_format": "channels_last", "depth_multiplier": 1}
_POOL = {"padding": "valid", "data_format": "channels_last"}
_GLOBAL_POOL = {"keepdims": False, "data_format": "channels_last"}
_NORM = {"axis": -1, "epsilon": 1e-3, "center": True, "scale": True}
#: layer family (the class without its ``1D``/``2D``/``3D``/``Transpose``) -> (positional arguments in
#: order, {keyword: Keras's default})
_SIGNATURES = {
    "Conv": (("filters", "kernel_size"), _CONV),
    "DepthwiseConv": (("kernel_size",), _CONV),
    "SeparableConv": (("filters", "kernel_size"), _CONV),
    "Dense": (("units",), {"use_bias": True}),
    "MaxPooling": (("pool_size",), _POOL),
    "AveragePooling": (("pool_size",), _POOL),
    "GlobalMaxPooling": ((), _GLOBAL_POOL),
    "GlobalAveragePooling": ((), _GLOBAL_POOL),
    "ZeroPadding": (("padding",), {"data_format": "channels_last"}),
    "UpSampling": (("size",), {"data_format": "channels_last", "interpolation": "nearest"}),
    "BatchNormalization": ((), {**_NORM, "momentum": 0.99}),
    "LayerNormalization": ((), _NORM),
    "GroupNormalization": ((), {**_NORM, "groups": 32}),
    "RMSNormalization": ((), {"axis": -1, "epsilon": 1e-6}),
    "Softmax": ((), {"axis": -1}),
    "Embedding": (("input_dim", "output_dim"), {}),
    "ReLU": (("max_value",), {"max_value": None, "negative_slope": 0.0, "threshold": 0.0}),
    "LeakyReLU": ((), {"negative_slope": 0.3}),
    "Activation": (("activation",), {}),
    "Flatten": ((), {"data_format": "channels_last"}),
    "Dropout": (("rate",), {"noise_shape": None}),
}
#: arguments that take one int for a tuple of equal ints
_COMPACT = {"kernel_size", "strides", "dilation_rate", "pool_size", "size", "output_padding"}


def _family(cls: str) -> str:
    return re.sub(r"\dD(Transpose)?$", "", cls)


def _compact(name, value, family):
    """``(3, 3)`` -> ``3``; ZeroPadding's ``((1, 1), (2, 2))`` -> ``(1, 2)`` and ``((1, 1), (1, 1))`` -> ``1``."""
    if family == "ZeroPadding" and name == "padding" and isinstance(value, tuple):
        if all(isinstance(p, tuple) and len(p) == 2 and p[0] == p[1] for p in value):
            value = tuple(p[0] for p in value)  # symmetric pads: one int per axis
        elif len(value) == 2 and all(isinstance(p, int) for p in value) and value[0] == value[1]:
            value = (value[0],)  # ZeroPadding1D's (begin, end)
    if (name in _COMPACT or family == "ZeroPadding") and isinstance(value, tuple) and value and \
            all(isinstance(v, int) and v == value[0] for v in value):
        return value[0]
    return value


def _is_default(value, default) -> bool:
    return value == default and isinstance(value, bool) == isinstance(default, bool) and \
        (value is None) == (default is None)


def layer_args(cls: str, kwargs: dict, keep=()) -> list:
    """The argument texts for ``layers.CLS(...)`` (without ``name``), Keras defaults left out but for the keywords in
    ``keep`` (Note [keywords that vary in blocks])."""
    family = _family(cls)
    positional, defaults = _SIGNATURES.get(family, ((), {}))
    kwargs = {k: _compact(k, v, family) for k, v in kwargs.items()}
    if family.endswith("Pooling") and kwargs.get("strides") == kwargs.get("pool_size"):
        kwargs.pop("strides", None)  # Keras's strides=None is the pool size
    args = []
    for name in positional:  # leading arguments in order, while each is given and not its default
        if name not in kwargs or (name in defaults and _is_default(kwargs[name], defaults[name])):
            break
        args.append(literal(kwargs.pop(name)))
    return args + [f"{k}={literal(v)}" for k, v in kwargs.items()
                   if k in keep or not (k in defaults and _is_default(v, defaults[k]))]


# Note [layer names] (emitter.py): the auto names Keras gives the operations a body creates. Keras
# names a keras.ops call, an operator or a subscript on a KerasTensor after its class; these
# keras.ops functions build a class of another name.
_OP_CLASSES = {"batch_normalization": "batch_norm", "layer_normalization": "layer_norm",
               "rms_normalization": "rms_norm", "swish": "silu", "hard_swish": "hard_silu"}
_OPERATORS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide",
              ast.FloorDiv: "floor_divide", ast.Mod: "mod", ast.Pow: "power", ast.MatMult: "matmul",
              ast.USub: "negative", ast.Gt: "greater", ast.GtE: "greater_equal", ast.Lt: "less",
              ast.LtE: "less_equal", ast.Eq: "equal", ast.NotEq: "not_equal", ast.Invert: "logical_not"}


def auto_names_in(body: str) -> set:
    """The name prefixes Keras may give the operations that the statements in ``body`` create.

    Over-approximates: an operator between plain numbers counts too.
    Example: ``auto_names_in("y = ops.softmax(x[:, 0] * 2)")`` -> ``{"softmax", "get_item", "multiply"}``.
    """
    found = set()
    for node in ast.walk(ast.parse(textwrap.dedent(body))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "ops":
            found.add(_OP_CLASSES.get(node.func.attr, node.func.attr))
        elif isinstance(node, ast.Subscript):
            found.add("get_item")
        elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
            found.add(_OPERATORS.get(type(node.op), "operator"))
        elif isinstance(node, ast.Compare):
            found.update(_OPERATORS.get(type(op), "operator") for op in node.ops)
    return found


#: input names too generic to name a value after
_GENERIC_INPUTS = {"x", "a", "b", "xs"}


class VariableNames:
    """Raw names for the nodes' variables and layers (Note [variable names]).

    Example: ``VariableNames(graph).raw(node)`` -> ``"attn_q"``.
    """

    def __init__(self, graph):
        producer, users = graph.producers(), graph.users()
        self.local = local_scopes(graph)  # Note [nested models' scopes] in scopes.py
        added = graph.meta.get("layout_transposes", ())
        self.scope, local = {}, self.local  # a nested model's layer: named as in its model
        for node in graph.nodes:
            source = producer.get(node.inputs[0]) if node.inputs and node.inputs[0] is not None else None
            moved = not node.scope and node.outputs[0].name in added and source is not None
            self.scope[node] = self.scope[source] if moved else local.get(node.scope, block_path(node.scope, graph))
        self.scope.update(_block_scopes(graph, self.scope))
        self._glue = _glue_layers(graph, self.scope)
        self._kept = _varying(graph)
        self._room = block_rooms(graph.meta.get("blocks"))
        self.last = set({self.scope[n]: n for n in graph.nodes if self.scope[n]}.values())
        # the emitter writes a node with free dims as a copy (``node.replace(attrs=...)``, codegen.emit_nodes):
        # found again by its outputs, or it would be named from its source scope, not its block's
        self._own = {n.outputs: n for n in graph.nodes}
        self.role, self._base = {}, {}  # Value -> its name after the scope; -> the input name it leads to
        self._producer, self._users = producer, users
        for node in reversed(graph.nodes):
            self._join_roles(node)
            for slot, value in zip(node.op.input_names, node.inputs):
                if slot.strip("*?") not in _GENERIC_INPUTS and self._private(value, node):
                    self.role[value] = self._base[value] = slot.strip("*?")
            self._pass_role_up(node)

    def _private(self, value, node) -> bool:
        """True when ``value`` is computed in ``node``'s scope and read by ``node`` alone."""
        return value is not None and value in self._producer and len(self._users.get(value, ())) == 1 and \
            self.scope[self._producer[value]] == self.scope[node]

    def _pass_role_up(self, node):
        """The input of a reshape, transpose or slice whose output leads to an input name leads there too:
        ``attn_q_reshape`` feeds the transpose that is ``attn_q``."""
        inputs = [v for v in node.inputs if v is not None and v in self._producer]
        out = node.outputs[0]
        if node.op.family != "shape" or len(node.outputs) != 1:
            return
        if out in self._base and len(inputs) == 1 and inputs[0] not in self._base \
                and self._private(inputs[0], node) and len(self._producer[inputs[0]].outputs) == 1:
            self._base[inputs[0]] = self._base[out]
            self.role[inputs[0]] = f"{self._base[out]}_{self._producer[inputs[0]].op.word}"

    def _join_roles(self, node):
        """An output that several same-scope nodes split into roles is named by them all: ``attn_qkv``."""
        out, readers = node.outputs[0], self._users.get(node.outputs[0], [])
        if len(node.outputs) != 1 or out in self._base or len(readers) < 2 or \
                any(len(r.outputs) != 1 or r.outputs[0] not in self._base or self.scope[r] != self.scope[node]
                    for r in readers):
            return
        roles = [self._base[r.outputs[0]] for r in readers]
        if len(set(roles)) == len(roles):
            joined = "".join(roles) if all(len(r) == 1 for r in roles) else "_".join(roles)
            self.role[out] = self._base[out] = joined

    def room(self, raw: str) -> int:
        """Characters a name starting with a repeated block's prefix may run past the usual length: as many as that
        prefix is longer than the first of its kind's (Note [names in longer blocks])."""
        return room_of(self._room, raw)

    def layer(self, node) -> str:
        """The name for ``node``'s layer: ``raw``, or after its block where Keras named it model-wide (Note [layers
        Keras names in blocks])."""
        node = self._own.get(node.outputs, node)
        return self._glue.get(node) or self.raw(node)

    def kept(self, node) -> frozenset:
        """The Keras keywords ``node``'s layer writes even at their default (Note [keywords that vary in blocks])."""
        return self._kept.get(self._own.get(node.outputs, node), frozenset())

    def raw(self, node) -> str:
        """The name for ``node``'s (first) output, before Namespace makes it a unique identifier."""
        node = self._own.get(node.outputs, node)
        scope, out = self.scope.get(node, node.scope), node.outputs[0]
        if out in self.role:
            return f"{scope}_{self.role[out]}" if scope else self.role[out]
        if not scope:
            return out.name
        if node in self.last or re.sub(r"\W", "_", f"_{scope}").endswith(f"_{node.op.word}"):
            return scope  # a module called twice (``layer1.0.relu``): Namespace numbers the calls
        return f"{scope}_{node.op.word}"  # ops/traits.py WORDS



#: Keras' own numbering of a layer it names itself (``softmax_1``), in a path component
_AUTO_NUMBER = re.compile(r"_\d+(?=\.|$)")


def _block_scopes(graph, scope) -> dict:
    """{node: scope} for the nodes of repeated blocks whose source layer holds no weights and names itself as the
    first block of its kind named the layer at the same position (Note [weightless layers in blocks]).

    Example: ``transformer_layer_1.self_attention.softmax_1`` -> ``transformer_layer_1.self_attention.softmax``.
    """
    found, first = {}, {}
    for block in graph.meta.get("blocks") or []:
        base = first.setdefault(block["kind"], block)
        if base is block:
            continue
        nodes = graph.nodes[block["start"]:block["stop"]]
        renamed, weighted = {}, set()
        for node, model in zip(nodes, graph.nodes[base["start"]:base["stop"]]):
            mine, theirs = scope.get(node) or "", scope.get(model) or ""
            if any(v is not None and graph.is_param(v) and graph.is_trainable(v.name) for v in node.inputs):
                weighted.add(mine)
            if mine.startswith(block["key"]) and theirs.startswith(base["key"]):
                rel, rel0 = mine[len(block["key"]):], theirs[len(base["key"]):]
                if rel != rel0 and _AUTO_NUMBER.sub("", rel) == _AUTO_NUMBER.sub("", rel0):
                    renamed.setdefault(mine, set()).add(block["key"] + rel0)
        renamed = {s: new.pop() for s, new in renamed.items() if len(new) == 1 and s not in weighted}
        found.update({node: renamed[scope[node]] for node in nodes if scope.get(node) in renamed})
    return found


# Note [layers Keras names in blocks]: keras.applications names a block's layers after the block but leaves some to
# Keras (MobileNetV3's ``activation_95`` and ``re_lu_2`` between ``expanded_conv_3_expand_bn`` and the depthwise
# conv): Keras numbers those model-wide, so each block wrote another name and no two blocks read the same. Such a
# layer, inside a block whose kind repeats, holding no weights and named as the layer at the same position of the
# first block of its kind up to Keras' number, is named after its block: ``expanded_conv_3_activation``. A layer with
# weights keeps its source name; an operation (``ops.split``) is a variable only, which blocks rename anyway. A block
# of a kind of its own among blocks of its family that repeat (``expanded_conv_6``, the only one not adding its
# input) names them so too: it may join their function (Note [optional parts] in targets/optional_parts.py).


def _glue_layers(graph, scope) -> dict:
    """{node: its layer's name} for the layers Keras named model-wide inside repeated blocks (Note [layers Keras
    names in blocks]). Example: ``activation_95`` in block ``expanded_conv_3`` -> ``expanded_conv_3_activation``."""
    blocks = graph.meta.get("blocks") or []
    counts, first, found = {}, {}, {}
    for block in blocks:
        counts[block["kind"]] = counts.get(block["kind"], 0) + 1
    families = {(b["parent"], b["stem"]) for b in blocks if counts[b["kind"]] > 1}  # a lone kind may join one
    for block in (b for b in blocks if counts[b["kind"]] > 1 or (b["parent"], b["stem"]) in families):
        base = first.setdefault(block["kind"], block)
        nodes, seen = graph.nodes[block["start"]:block["stop"]], {}
        for node, model in zip(nodes, graph.nodes[base["start"]:base["stop"]]):
            mine, theirs = scope.get(node) or "", scope.get(model) or ""
            stem = _AUTO_NUMBER.sub("", mine)
            if mine and "." not in mine and not mine.startswith(block["key"]) and stem == _AUTO_NUMBER.sub("", theirs) \
                    and not any(v is not None and graph.is_param(v) for v in node.inputs):
                seen[stem] = seen.get(stem, 0) + 1  # Note [blocks named by a suffix]: ``normal_activation2_0``
                found[node] = f"{block['parent']}_{stem}{seen[stem]}_{block['suffix']}" if block.get("suffix") \
                    else f"{block['key']}_{stem}"
    return {**found, **first_glue_names(graph, scope, found)}  # Note [Keras' names in a first block]


#: IR attributes whose Keras keyword a block writes at its default where blocks of its kind differ in it
_KEPT = {"stride": "strides", "dilation": "dilation_rate"}


def _varying(graph) -> dict:
    """{node: the Keras keywords its layer writes at their default} (Note [keywords that vary in blocks])."""
    kinds, found = {}, {}
    for block in graph.meta.get("blocks") or []:
        kinds.setdefault(block["kind"], []).append(graph.nodes[block["start"]:block["stop"]])
    for members in kinds.values():
        for column in zip(*members):
            keys = frozenset(kw for attr, kw in _KEPT.items() if len({repr(n.attrs.get(attr)) for n in column}) > 1)
            if keys:
                found.update(dict.fromkeys(column, keys))
    return found


def layout_sentence(graph) -> str:
    """The docstring's line on input/output layouts, from the layout pass's record (graph.meta).

    Example: ``layout_sentence(graph) == "Inputs and outputs keep the source model's layout."``.
    """
    changed = [row for rows in graph.meta.get("io_layout", {}).values() for row in rows
               if row.get("layout") and row.get("layout") != row.get("source_layout")]
    if not changed:
        return "Inputs and outputs keep the source model's layout."
    return "Layouts differ from the source: " + ", ".join(
        f"{row['name']} {row['layout']} (source {row['source_layout']})" for row in changed) + "."
