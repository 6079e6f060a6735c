"""One block class written: its name, ``__init__`` with the numbers the blocks differ in as arguments, and ``forward``
with the hidden state first (Note [nested torch modules] in blocks.py; Note [forward's arguments] in block_args.py;
Note [optional submodules] in optional.py).

Example:
    >>> names = class_names(emitter, members)          # {template: "Bottleneck", ...}
    >>> cls, columns, moved, order, flagged = write_class(emitter, members[key], names[key], reserved)
"""
from __future__ import annotations

import builtins
import keyword
import re

from ..arg_names import param_names
from ..auto_names import cut_family
from ..codegen import LineWriter, Namespace
from ..comments import source_blocks
from ..optional_parts import Layout
from ..optional_run import optional_params
from ..structure import family_name, ident, number_params, render, source_class
from .block_args import forward_order, forward_values
from .choices import layout_lines
from .key_order import in_source_order, relative_keys
from .nesting import SEPARABLE, nest, separable
from .numbered import add_modules, module_name, numbered_column, unnumbered
from .optional import guard_each, guard_init, without_strides
from .sequential_class import as_sequential, numbered_blocks

__all__ = ["attr_name", "class_names", "own_attribute", "own_path", "relative", "write_class"]


def attr_name(rest: str) -> str:
    """A block's submodule name: the flat name without the block's prefix; ``_1_conv`` for keras.applications'
    ``conv2_block1_1_conv``, whose rest starts with a digit."""
    rest = "".join(rest) if isinstance(rest, tuple) else rest  # a block named by a suffix: (head, tail)
    return f"_{rest}" if rest[:1].isdigit() else rest


def own_attribute(inst, value) -> str:
    """The flat attribute of an ("a", value) piece of ``inst`` (``pieces``): ``layer1_0_conv1``; for a block named
    by a suffix, ``separable_conv_1_normal_left1_0_depthwise`` from ``("separable_conv_1_normal_left1", "_depthwise")``.
    """
    if isinstance(value, tuple):
        return f"{value[0]}_{inst.suffix}{value[1]}"
    return inst.flat("a", inst.numbered.get(value, value))  # Note [submodules named after their block]


def own_path(inst, path) -> str | None:
    """A source ``path`` relative to ``inst``'s block, or None outside it: ``layer1.0.conv1`` -> ``conv1``; for a block
    named by a suffix, ``separable_conv_1_normal_left1_0.depthwise`` -> ``separable_conv_1_normal_left1.depthwise``."""
    if path.startswith(inst.key + "."):
        return path[len(inst.key) + 1:]
    if not inst.suffix and "." in path and path.lower().startswith(inst.prefix + "_"):
        return path[len(inst.prefix) + 1:]  # block2_sepconv1.depthwise (Note [separable convs as one module])
    head, dot, rest = path.partition(".")
    if inst.suffix and head.endswith(f"_{inst.suffix}"):
        return head[:-len(inst.suffix) - 1] + dot + rest
    return None


def class_names(emitter, members) -> dict:
    """{template: class name}: the source's class (``Bottleneck``, ``LlamaDecoderLayer``), given first to the
    class with the most blocks; another class of the same source class is prefixed with its container
    (``Layer2Bottleneck``), then numbered. Without a source class: the container's name (``Layer``, ``Block``)."""
    used = set(dir(builtins)) | set(keyword.kwlist) | _MODULE_NAMES
    found = {}
    for key, pairs in sorted(members.items(), key=lambda item: -len(item[1])):
        group = _Group([b for _, b in pairs])
        cut = cut_family([b.key for b in group.instances], emitter.graph)  # Note [names of cut blocks' kinds]
        source = "" if cut or group.instances[0].family else \
            source_class([b.key for b in group.instances], emitter.graph.meta.get("module_classes"))
        family = _camel(cut or family_name(group))
        base = source or family
        options = [base] + ([_camel(ident(group.instances[0].parent)) + source] if source else [])
        name = next((o for o in options if o not in used), None)
        n = 1
        while name is None or name in used:
            name, n = f"{base}{n}", n + 1
        used.add(name)
        found[key] = name
    return found


def _camel(snake: str) -> str:
    """``layers_block`` -> ``LayersBlock``."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_")) or "Block"


_MODULE_NAMES = {"Model", "torch", "nn", "F", "os", "math", "json", "load_file", "WEIGHTS", "build_model",
                 "load_model", "tp_plan", "OrderedDict", "SeparableConv2d"}


def write_class(emitter, members, cls, reserved, optional=None, role=(None, None)):
    """Write one block class into ``emitter.classes``; returns (class name, columns, moved paths, forward's order,
    (flag, the init Instances that set it)) or None. ``optional``: the part the first members have and the others
    lack (Note [optional submodules] in optional.py); their numbers are laid out alike (``aligned``); or a Layout
    of ``forward``'s optional parts (Note [optional parts] in targets/optional_parts.py), a flag each. ``role``: the
    places of its inputs ``x`` and ``p`` (Note [a cell's two inputs] in targets/cell_inputs.py)."""
    layout, optional = (optional, None) if isinstance(optional, Layout) else (None, optional)
    numbers = [init.numbers + body.numbers for init, body in members]
    found = (layout.params, layout.columns) if layout else \
        (optional_params(numbers, optional.positions) if optional else number_params(numbers)) \
        if len(members) > 1 else ({}, [])
    if found is None:
        return None
    params, columns = found
    init, body = members[0]
    init, body = (layout.init, layout.ref) if layout else (init, body)
    local = Namespace({"self", "torch", "nn", "F", "math"})
    bases = param_names(_Joined(init, layout or body), columns, params)
    at = numbered_column(init)  # Note [submodules named after their block] in numbered.py
    args = [local.name("n" if c == at else name, "size") for c, name in zip(columns, bases)]
    modules = {stem: local.name(module_name(stem, init.parent)) for stem in init.numbered}
    split = len(init.numbers)
    # forward tests a flag by its part's first submodule where its count is __init__'s alone (``self.fc1 is not None``)
    firsts = {part: attr_name(attr) for attr, part in reversed(layout.guards.items())} if layout else {}
    if layout:  # Note [a flag its keyword stands for] in tested_flags.py
        layout.counted(lambda c: args[params[c][0]], lambda f, c: c >= split or f in firsts)
    flags = {f: local.name(_flag(f, layout, relative(emitter, members)[0])) for f in layout.flags
             if f not in layout.tested} if layout else {}
    flag = local.name(optional.name) if optional else None
    if flag:
        local.release(flag)  # an __init__ argument: forward may name the part's output so
    order = forward_order([b for _, b in members], _model_inputs(emitter), role[0])  # Note [forward's arguments]
    inputs = {body.inputs[i]: local.name("x" if i == order[0] else "p" if i == role[1] else  # Note [a cell's two
                                         body.inputs[i].replace("self.", ""), "x") for i in order}  # inputs]
    prefix = (layout.prefix_of if layout else {}).get
    locals_ = {v: local.name(unnumbered(v[len(prefix(v, body.prefix)) + 1:], init.numbered)
                             if v.startswith(prefix(v, body.prefix) + "_") else re.sub(r"_+\d+$", "", v), "v")
               for v in (layout.made if layout else body.locals)}

    def number(i, text, forward=False):
        if i not in params:
            return text
        p, multiple = params[i]
        name = f"self.{args[p]}" if forward else args[p]
        return name if multiple == 1 else f"{multiple} * {name}"

    w = LineWriter()
    w.line(f"class {cls}(nn.Module):")
    w.indent = 1
    w.line(f'"""{source_blocks([b.key for _, b in sorted(members, key=lambda m: m[1].start)])}"""')
    w.line("")
    keywords = layout.keywords if layout else {}  # Note [optional parts]: a number only some blocks pass
    flag_args = [f"{args[p]}={keywords[c]}" for c, (p, _) in params.items() if c in keywords] + \
        [f"{name}={layout.default(f)}" for f, name in flags.items()] + ([f"{flag}=False"] if flag else [])
    named = {args[p] for c, (p, _) in params.items() if c in keywords}
    w.line(f"def __init__({', '.join(['self'] + [a for a in args if a not in named] + flag_args)}):")
    w.indent = 2
    w.line("super().__init__()")
    used = {params[c][0] for c in params if c >= split}
    for p in sorted(used):
        w.line(f"self.{args[p]} = {args[p]}")
    for f in flags.values():
        w.line(f"self.{f} = {f}")
    own, forward = LineWriter(), LineWriter()
    own.indent = forward.indent = 2
    if optional:
        locals_[optional.run.output] = local.name(optional.name, "v")
    _lines(own, init.rows, {}, number, 0)
    own.rows = [(indent, without_strides(text), comment) for indent, text, comment in own.rows]
    # a flag its keyword stands for (Note [a flag its keyword stands for]): __init__ guards ``... if pad is not None
    # else None``, forward tests ``self.pad is not None``, or the part's first submodule where forward keeps no value
    guards = {**flags, **{f: layout.test(f, args[params[c][0]]) for f, c in layout.tested.items()}} if layout else {}
    tests = {f: f"{firsts[f]} is not None" if layout.tested.get(f, split) < split else test
             for f, test in guards.items()}
    if layout:
        layout_lines(forward, layout, tests, {**locals_, **inputs}, lambda i, t: number(split + i, t, True),
                     attr_name)
    else:
        _lines(forward, body.rows, {**locals_, **inputs}, lambda i, t: number(i, t, True), split, optional)
    forward.line(f"return {', '.join(locals_[v] for v in (layout.outputs if layout else body.outputs))}")
    paths, classes = relative(emitter, members)
    rows, forward.rows, moved = nest(own.rows, forward.rows, paths, set(args), reserved, classes)
    keys = relative_keys(emitter.graph.meta.get("source_keys"), members[0][0].key)
    rows = in_source_order(rows, keys)  # Note [the source's keys] in key_order.py
    sources = {(emitter.graph.meta.get("module_classes") or {}).get(i.key) or
               ("Sequential" if i.key in numbered_blocks(emitter.graph) else None) for i, _ in members}
    numbered = None if optional or moved or sources != {"Sequential"} else \
        as_sequential(w.rows, rows, forward.rows, paths)
    if numbered:  # Note [blocks of numbered parts] in sequential_class.py
        w.rows, rows, forward.rows, moved = numbered
    if optional and optional.guard != optional.name:  # several submodules, each built where it is
        rows = guard_each(rows, [attr_name(a) for a in optional.attrs], flag)
        if rows is None:
            return None
    elif optional:
        rows = guard_init(rows, optional.name, flag)
    for attr, part in (layout.guards if layout else {}).items():  # Note [optional parts]: submodules of a part
        rows = rows and guard_each(rows, [moved.get(attr_name(attr), attr_name(attr))], guards[part])  # nested
    if rows is None:
        return None
    rows, forward.rows = separable(rows, forward.rows)  # Note [separable convs as one module] in nesting.py
    if modules:
        numbered = add_modules(rows, forward.rows, modules, args[columns.index(at)] if at in columns else "", modules)
        if numbered is None or at not in columns:
            return None
        rows, forward.rows = numbered
    if any("SeparableConv2d(" in text for _, text, _ in rows) and SEPARABLE not in emitter.classes:
        emitter.classes.insert(0, SEPARABLE)
    w.rows += rows
    w.indent = 1
    w.line("")
    w.line(f"def forward({', '.join(['self'] + [inputs[body.inputs[i]] for i in order])}):")
    w.rows += forward.rows
    emitter.classes.append(w.text())
    for _, b in members:  # the block-rows cutter calls the class with these (targets/forward_cut.py)
        emitter.block_inputs[b.key] = forward_values(emitter, b, order)
    flagged = {id(i) for i, _ in members if optional and len(i.rows) == len(init.rows)}  # the first have the part
    if layout:
        flag, flagged = None, {id(i): [f"{args[params[c][0]]}={(i.numbers + b.numbers)[c]}" for c in keywords
                                       if (i.numbers + b.numbers)[c] is not None] +
                               [f"{flags[f]}={v}" for f, v in layout.flags_of(b)] for i, b in members}
        columns = [c for c in columns if c not in keywords]
    return cls, columns, moved, order, (flag, flagged)


def _model_inputs(emitter) -> set:
    return {emitter.names[v] for v in emitter.graph.inputs if v in emitter.names}


def _flag(flag, layout, paths) -> str:
    """A part's flag, or where that names a submodule (the part's layers all lie inside it: MiT's spatial reduction
    in ``seg_former_multihead_attention``) the first such layer's name inside it (``conv2d``)."""
    if flag not in {p.split(".")[0] for p in paths.values()}:
        return flag
    inner = [a[len(flag) + 1:] for a, f in layout.guards.items() if f == flag and a.startswith(flag + "_")]
    return inner[0] if inner else f"with_{flag}"


def relative(emitter, members) -> tuple:
    """(paths, classes) for ``nest`` inside a block class: each attribute's source path after
    the block's own, where every block of the class has the same one (Note [nested paths] in nesting.py)."""
    found, numbered = {}, numbered_blocks(emitter.graph)
    for init, _ in members:
        for parts, _ in init.rows:
            for value in (v for kind, v in parts if kind == "a"):
                path = emitter.paths.get(own_attribute(init, value), "")
                rel = own_path(init, path)
                if rel is None and init.key in numbered and path == f"{init.key}_{value}":
                    rel = value  # Note [blocks of numbered parts] in sequential_class.py: enc1_0 is enc1's 0
                found.setdefault(attr_name(value), set()).add(rel)
    paths = {a: rels.pop() for a, rels in found.items() if len(rels) == 1 and None not in rels}
    key = members[0][0].key + "."
    classes = {k[len(key):]: v for k, v in (emitter.graph.meta.get("module_classes") or {}).items()
               if k.startswith(key)}
    return paths, classes


def _lines(w, rows, names, number, offset, optional=None) -> None:
    """Each row rendered; the rows of an ``optional`` part under ``if self.<part> is not None:``, its output begun
    at the input it stands in for (Note [optional submodules] in optional.py)."""
    for i, (parts, comment) in enumerate(rows):
        if optional and i == optional.run.rows.start:
            w.line(f"{names[optional.run.output]} = {names[optional.run.input]}")
            w.line(f"if self.{attr_name(optional.guard)} is not None:")
            w.indent += 1
        w.line(render(parts, lambda v: names[v], lambda i, t: number(offset + i, t),
                      lambda s: repr(attr_name(s.lstrip("_"))), attr_name), comment)
        offset += sum(kind == "n" for kind, _ in parts)
        if optional and i == optional.run.rows.stop - 1:
            w.indent -= 1


class _Group:
    def __init__(self, instances):
        self.instances = instances


class _Joined:
    """An init and a forward Instance read as one, for ``param_names``' column count."""

    def __init__(self, init, body):
        self.rows, self.prefix = init.rows + body.rows, body.prefix
