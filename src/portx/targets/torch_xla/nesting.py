"""The emitted submodules nested as the source nests them, at every depth: ``self.self_attn.q_proj`` rather than
``self.self_attn_q_proj``, ``self.downsample[0]`` rather than ``self.downsample_0``.

Note [nested paths]: the emitter names each submodule and parameter after its source path (``_module_hint``) and
keeps that path (``TorchEmitter.paths``). ``nest`` rewrites ``__init__`` and ``forward`` so that each attribute
sits at its source path: a path component that is a name is an ``nn.Module()`` holding its children, one that is
a number an item of an ``nn.Sequential`` or ``nn.ModuleList`` (whichever the source's container was,
``graph.meta["module_classes"]``; a number with no weights, ``mlp.1`` for a GELU, is an ``nn.Identity()``).
A numbered container is built directly with its items, as a person writes it (``nn.Sequential(nn.Conv2d(...),
nn.BatchNorm2d(...))``; ``nn.ModuleList([nn.Module() for _ in range(3)])`` where each item is a named container),
and a named one's children are assigned by name (``self.layers[0].conv1 = nn.Conv2d(...)``), never a list of
placeholders whose items are set afterwards; an ``nn.Parameter`` is no item of a numbered container. A buffer with
a source path (Note [the source's keys] in key_order.py) is registered on its module by its own name. The
state_dict keys, ``named_modules()`` and ``get_submodule`` then follow the source's paths (for a torch source, its
own state_dict keys). It runs twice: inside each block class (paths relative to the block, targets/torch_xla/
blocks.py) and on ``Model`` (what stays outside blocks, and the block containers). An attribute whose path would
clash (a leaf that is another's container, the same path twice, a reserved or mixed name/number container) keeps
its flat name, so nesting never changes what the code computes.

Example:
    >>> init, body, moved = nest(init_rows, body_rows, {"downsample_0": "downsample.0"}, taken={"conv1"})
    >>> moved
    {'downsample_0': 'downsample.0'}
"""
from __future__ import annotations

import ast
import keyword
import re

__all__ = ["nest", "access", "separable", "SEPARABLE"]

_SELF = re.compile(r"(?<![\w.])self\.(\w+)\b")
_DEFINE = re.compile(r"^self\.(\w+) = (.*)$")
_BUFFER = re.compile(r"^self\.register_buffer\('(\w+)'")


def access(parts) -> str:
    """The expression for a nested path: ``("layers", "0", "mlp")`` -> ``self.layers[0].mlp``."""
    return "self" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts)


def _usable(attr, path, defined, reserved) -> tuple | None:
    """The path's parts, when ``attr`` may move there: another name or two parts or more, names legal, the first not a
    number (``self_attention_dropout_1``, so named beside ``self_attention.dropout``, becomes its source's
    ``self_attention_dropout`` once the other has moved). Names are ASCII (Note [untrusted names]): Python reads
    ``self.aªlW`` as ``self.aalW`` (identifiers are NFKC-normalised), so the state_dict would not have the key
    written."""
    parts = tuple(path.split("."))
    if attr not in defined or (len(parts) < 2 and parts[0] == attr) or parts[0].isdigit():
        return None
    for p in parts:
        if not (p.isdigit() or (p.isascii() and p.isidentifier() and not keyword.iskeyword(p) and p not in reserved)):
            return None
    return parts


def _moves(paths, defined, taken, reserved, params=frozenset()) -> dict:
    """{attr: parts} for the attributes that can move (Note [nested paths]); the others keep their names. An
    ``nn.Parameter`` (``params``) is no item of a numbered container, which holds modules only."""
    found = {a: parts for a, path in paths.items() for parts in [_usable(a, path, defined, reserved)]
             if parts and not (a in params and parts[-1].isdigit())}
    counts = {}
    for parts in found.values():
        counts[parts] = counts.get(parts, 0) + 1
    leaves = set(counts)
    children = {}
    for parts in leaves:
        for i in range(1, len(parts)):
            children.setdefault(parts[:i], set()).add(parts[i])
    mixed = {c for c, kids in children.items() if len({k.isdigit() for k in kids}) > 1}
    flat = set(taken) - set(found)  # the attributes that stay: a container must not take their names

    def ok(parts):
        prefixes = [parts[:i] for i in range(1, len(parts))]
        return counts[parts] == 1 and parts[0] not in flat and parts not in children \
            and not any(p in leaves or p in mixed for p in prefixes)

    return {a: parts for a, parts in found.items() if ok(parts)}


def nest(init_rows, body_rows, paths, taken=(), reserved=frozenset(), classes=None) -> tuple:
    """(init rows, body rows, {attr: nested path}) with each attribute of ``paths`` ({flat attr: source path})
    moved to its path where it can be (Note [nested paths]). ``taken``: other names of ``self`` to keep clear;
    ``classes``: {source path: class name}, for ``nn.Sequential`` versus ``nn.ModuleList``."""
    made = [(row, _DEFINE.match(row[1])) for row in init_rows]
    defined = {m.group(1) for _, m in made if m}
    params = {m.group(1) for _, m in made if m and m.group(2).startswith("nn.Parameter(")}
    buffers = {m.group(1) for _, text, _ in init_rows for m in [_BUFFER.match(text)] if m}
    moves = _moves(paths, defined | buffers, defined | buffers | set(taken), reserved, params | buffers)
    if not moves:
        return init_rows, body_rows, {}
    tree = _Tree(moves, classes or {})
    for (indent, _, comment), m in made:
        if m and m.group(1) in moves:
            tree.leaves[moves[m.group(1)]] = (_renamed(m.group(2), moves), comment)
    init = []
    for (indent, text, comment), m in made:
        buffer = None if m else _BUFFER.match(text)  # a source's buffer, registered on its module
        parts = moves.get((m or buffer).group(1)) if m or buffer else None
        if parts is None:
            init.append((indent, _renamed(text, moves), comment))
            continue
        for i in range(1, len(parts)):
            if parts[:i] not in tree.built:
                init += [(indent + d, f"{access(parts[:i])} = {t}" if not j else t, c)
                         for j, (d, t, c) in enumerate(tree.expression(parts[:i]))]
        if buffer:
            init.append((indent, f"{access(parts[:-1])}.register_buffer({parts[-1]!r}"
                                 f"{_renamed(text[buffer.end():], moves)}", comment))
        elif parts not in tree.inlined:
            init.append((indent, f"{access(parts)} = {tree.leaves[parts][0]}", comment))
    body = [(indent, _renamed(text, moves), comment) for indent, text, comment in body_rows]
    return init, body, {a: ".".join(parts) for a, parts in moves.items()}


def _renamed(text, moves) -> str:
    return _SELF.sub(lambda m: access(moves[m.group(1)]) if m.group(1) in moves else m.group(0), text)


class _Tree:
    """The containers the moved attributes need, each built once (Note [nested paths]): a named one is an
    ``nn.Module()`` whose children are assigned by name; a numbered one is built directly with its items
    (``nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))``: a leaf's constructor, ``nn.Module()`` for a named
    container, the expression of a numbered one, ``nn.Identity()`` for a number holding no weights)."""

    def __init__(self, moves, classes):
        self.kids, self.classes = {}, classes
        for parts in moves.values():
            for i in range(1, len(parts)):
                self.kids.setdefault(parts[:i], set()).add(parts[i])
        self.leaves = {}  # parts -> (constructor text, comment)
        self.built, self.inlined = set(), set()

    def expression(self, parts) -> list:
        """[(extra indent, text, comment)]: the rows of the expression that builds container ``parts``."""
        self.built.add(parts)
        kids = self.kids[parts]
        if not all(k.isdigit() for k in kids):
            return [(0, "nn.Module()", "")]
        listed = self.classes.get(".".join(parts)) == "ModuleList"
        count = max(int(k) for k in kids) + 1
        items = [self._item(parts + (str(i),)) for i in range(count)]
        if count > 1 and all(item == [(0, "nn.Module()", "")] for item in items):
            many = f"nn.Module() for _ in range({count})"  # children assigned by name below
            return [(0, f"nn.ModuleList([{many}])" if listed else f"nn.Sequential(*[{many}])", "")]
        rows = [(0, "nn.ModuleList([" if listed else "nn.Sequential(", "")]
        for item in items:
            rows += [(d + 1, t, c) for d, t, c in item[:-1]]
            rows.append((item[-1][0] + 1, item[-1][1] + ",", item[-1][2]))
        return rows + [(0, "])" if listed else ")", "")]

    def _item(self, child) -> list:
        if child in self.leaves:
            self.inlined.add(child)
            return [(0, *self.leaves[child])]
        if child in self.kids:
            return self.expression(child)
        return [(0, "nn.Identity()", f"{'.'.join(child)} holds no weights")]


# Note [separable convs as one module]: a Keras SeparableConv2D is one layer holding two kernels
# (``block2_sepconv1/depthwise_kernel``, ``.../pointwise_kernel``); torch-xla writes it as two ``nn.Conv2d`` at
# ``sepconv1.depthwise`` and ``sepconv1.pointwise`` (ops/conv/from_keras.py names the weights so), which nesting put
# under a bare ``nn.Module()`` called twice in a row. A person (and timm's Xception) writes one small module:
# ``SeparableConv2d(nn.Module)`` holding ``depthwise`` and ``pointwise``, emitted once above the classes, called as
# ``self.sepconv1(x)``. Its children keep their names, so the state_dict keys stay ``sepconv1.depthwise.weight``: the
# Keras path with its layer as the module and its kernels as the children, which is also how timm's keys read.
# The pair is fused only as written by that rule: the depthwise conv (groups = in = out channels, no bias) and a
# 1x1 pointwise conv on its output read by nothing else, the container holding just the two; anything else stays as
# it was. It is done inside block classes, whose ``forward`` the verification cutter calls whole (targets/
# forward_cut.py); ``Model.forward``'s statements are cut line by line, so its pairs keep their two lines. The
# keras-jax target needs nothing of the kind: it writes the pair back as one ``layers.SeparableConv2D`` (Note
# [separable convs] in ops/conv/to_keras.py), whose weight paths are the source's.

#: the module ``separable`` writes calls to, emitted once (targets/torch_xla/blocks.py)
SEPARABLE = '''class SeparableConv2d(nn.Module):
    """A Keras SeparableConv2D: a depthwise conv, then a pointwise (1x1) conv with the layer's bias."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=True):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                   dilation=dilation, groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=bias)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))
'''
_CHILD = re.compile(r"^(self(?:\.\w+)+)\.(depthwise|pointwise) = nn\.Conv2d\((.*)\)$")
_CALL = re.compile(r"^(\w+) = (self(?:\.\w+)+)\.(depthwise|pointwise)\((\w+)\)$")
_DEPTHWISE_KEYS = ("kernel_size", "stride", "padding", "dilation")
_LOCAL = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def separable(init_rows, body_rows) -> tuple:
    """(init rows, body rows) with each depthwise/pointwise pair under one container written as ``SeparableConv2d``
    (Note [separable convs as one module]); the rows unchanged where there is none."""
    children = {}
    for row in init_rows:
        found = _CHILD.match(row[1])
        if found:
            children.setdefault(found.group(1), {})[found.group(2)] = found.group(3)
    fused = {}
    for holder, kids in children.items():
        text = _constructor(kids.get("depthwise"), kids.get("pointwise"))
        calls = _paired_calls(body_rows, holder)
        if text and calls and sum(t.startswith(f"{holder}.") for _, t, _ in init_rows) == 2:
            fused[holder] = (text, calls)
    if not fused:
        return init_rows, body_rows
    init = []
    for indent, text, comment in init_rows:
        found = _CHILD.match(text)
        if found and found.group(1) in fused:
            continue
        holder = text.partition(" = nn.Module()")[0] if text.endswith(" = nn.Module()") else None
        init.append((indent, f"{holder} = {fused[holder][0]}", comment) if holder in fused else (indent, text, comment))
    pairs = {second: (holder, first) for holder, (_, (first, second)) in fused.items()}
    body, renamed = [], {}
    for line, (indent, text, comment) in enumerate(body_rows):
        text = _LOCAL.sub(lambda m: renamed.get(m.group(0), m.group(0)), text)
        if line in pairs:  # the pointwise call: the module's, on the depthwise call's input
            holder, first = pairs[line]
            out, name = _CALL.match(body_rows[line][1]).group(1), holder.rpartition(".")[2]
            if not any(re.search(rf"(?<![\w.]){name}\b", t) for _, t, _ in body_rows):
                renamed[out] = name  # the module's output named as the module: sepconv1 = self.sepconv1(x)
            text = f"{renamed.get(out, out)} = {holder}({_CALL.match(body_rows[first][1]).group(4)})"
        if line not in {first for _, first in pairs.values()}:
            body.append((indent, text, comment))
    return init, body


def _constructor(depthwise, pointwise) -> str | None:
    """``SeparableConv2d(...)`` for a depthwise conv's and a pointwise conv's arguments, or None where they are not
    such a pair."""
    if depthwise is None or pointwise is None:
        return None
    try:
        dw, pw = (ast.parse(f"f({text})", mode="eval").body for text in (depthwise, pointwise))
    except (SyntaxError, TypeError):
        return None
    dk, pk = ({k.arg: ast.unparse(k.value) for k in call.keywords} for call in (dw, pw))
    if len(dw.args) != 2 or len(pw.args) != 2 or None in dk or None in pk:
        return None
    channels = ast.unparse(dw.args[0])
    if ast.unparse(dw.args[1]) != channels or dk.pop("groups", None) != channels or dk.pop("bias", None) != "False" \
            or set(dk) - set(_DEPTHWISE_KEYS) or "kernel_size" not in dk:
        return None
    if ast.unparse(pw.args[0]) != channels or pk.pop("kernel_size", None) != "1" or set(pk) - {"bias"}:
        return None
    args = [channels, ast.unparse(pw.args[1]), dk.pop("kernel_size")]
    return f"SeparableConv2d({', '.join(args + [f'{k}={v}' for k, v in {**dk, **pk}.items()])})"


def _paired_calls(body_rows, holder):
    """(depthwise line, pointwise line) where ``holder``'s two convs are called one after the other, the first's
    output read only by the second; else None."""
    lines = {}
    for line, (_, text, _) in enumerate(body_rows):
        found = _CALL.match(text)
        if found and found.group(2) == holder:
            lines.setdefault(found.group(3), []).append((line, found))
        elif f"{holder}." in text:
            return None
    (dw, pw) = (lines.get("depthwise", []), lines.get("pointwise", []))
    if len(dw) != 1 or len(pw) != 1 or pw[0][0] != dw[0][0] + 1 or pw[0][1].group(4) != dw[0][1].group(1):
        return None
    used = re.compile(rf"\b{re.escape(dw[0][1].group(1))}\b")
    if any(used.search(text) for line, (_, text, _) in enumerate(body_rows) if line not in (dw[0][0], pw[0][0])):
        return None
    return dw[0][0], pw[0][0]
