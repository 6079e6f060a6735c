"""Repeated blocks as nested ``nn.Module`` classes, held in ``nn.Sequential`` / ``nn.ModuleList`` containers named
after the source's (Note [structured code] in targets/structure.py), as torchvision writes ResNet.

Note [nested torch modules]: the blocks ``layer1.0``, ``layer1.1``, ... of one source container become
``self.layer1 = nn.Sequential(Layer1Bottleneck(), Bottleneck(16, 4), ...)``; a submodule the flat code named
``layer1_1_conv1`` is then ``layer1[1].conv1``, and its state_dict key ``layer1.1.conv1.weight``. A class is named
after the source's (``graph.meta["module_classes"]``, from torch's ``nn_module_stack``), the one with the most
blocks first; another of the same source class is prefixed with its container (``_class_names``). Inside a class
and on ``Model`` each submodule then moves to its source path (Note [nested paths] in nesting.py). A container
is nested only when every block in it can be (its statements templated, its attributes its own, numbered
0, 1, ... in order) and at least two of them share a class; otherwise it stays flat, as before. The emitter's
``state``, ``module_of`` and ``origins`` are renamed to the nested paths, so the weights file, the tp_plan,
the gradient pairing and every loader read the nested keys.

Example:
    >>> write_modules(emitter)   # emitter.init / emitter.body rewritten, emitter.classes holds the classes
"""
from __future__ import annotations

import builtins
import keyword
import re

from ..codegen import LineWriter, Namespace
from ..structure import assigned_names, block_lines, family_name, find_outputs, ident, instance, lines_of, \
    number_params, param_name, pieces, render, source_class
from .block_args import forward_order, forward_values, is_own_buffer, named_child, own_constants
from .containers import chain, child, named_container, write_call, write_container
from .nesting import nest

__all__ = ["write_modules"]


def _variables(emitter) -> set:
    """forward's variables, and the model's own attributes (``self.cos``): a block reads those as inputs."""
    own = {m.group(1) or m.group(2) for _, text, _ in emitter.init.rows
           for m in [_DEFINES.match(text)] if m}
    return assigned_names(emitter) | {f"self.{a}" for a in own}


_DEFINES = re.compile(r"^self\.(\w+) = |^self\.register_buffer\('(\w+)'")


def _hoist(init) -> None:
    """Leave in Model.__init__ the statements of ``init`` that define no attribute of the block's own (a buffer
    the block was the first to read: later blocks read it too); ``init.hoisted`` holds their lines."""
    kept, numbers = [], []
    init.hoisted = set()
    for j, (parts, comment) in enumerate(init.rows):
        if any(kind in "as" for kind, _ in parts[:3]):
            kept.append((parts, comment))
            numbers += [v for kind, v in parts if kind == "n"]
        else:
            init.hoisted.add(init.start + j)
    init.rows, init.numbers = kept, numbers


def _candidates(emitter, variables, reads, taken) -> dict:
    """{container: [(block, init Instance, forward Instance)]} for the containers that can be nested."""
    found = {}
    for block in emitter.graph.meta.get("blocks") or []:
        if any(emitter.spans.get(i) is None for i in range(block["start"], block["stop"])):
            continue
        init = instance(emitter.init.rows, *block_lines(emitter.spans, block, 1), block, variables)
        body = instance(emitter.body.rows, *block_lines(emitter.spans, block, 0), block, variables,
                        {emitter.names[v] for v in emitter.graph.inputs}, reads)
        ok = init is not None and body is not None and body.rows
        if ok:
            _hoist(init)
            ok = not any(kind == "v" for parts, _ in init.rows for kind, _ in parts)
        if ok:
            find_outputs(body, reads)
            ok = bool(body.outputs) and _own_attributes(init, body, taken)
        found.setdefault(block["parent"], []).append((block["index"], block, init, body) if ok else None)
    found = {parent: [row[1:] for row in rows] for parent, rows in found.items()  # numbered from 0 (torch) or 1
             if None not in rows and [row[0] for row in rows] in (list(range(len(rows))), list(range(1, len(rows) + 1)))}
    held = {}
    for rows in found.values():
        holder = _holder(emitter, rows, taken)
        if holder:
            held[holder] = rows
    return held


def _holder(emitter, rows, taken) -> str | None:
    """The source path of the module that holds ``rows``' blocks: their parent, or for named children (torchvision
    ViT's ``encoder.layers.encoder_layer_0``) the module they are children of, where they can be held by name
    (Note [named block containers] in containers.py); None where they cannot."""
    keys = [block["key"] for block, _, _ in rows]
    if not named_child(keys[0]):
        return rows[0][0]["parent"]
    return named_container(keys, emitter.paths, emitter.graph.meta.get("module_classes"), taken)


def _own_attributes(init, body, taken) -> bool:
    """True when every ``self.`` attribute the block reads is its own (``self.<prefix>_<name>``) or ``self.training``,
    and each of its own names is a plain attribute name there."""
    for inst in (init, body):
        for parts, _ in inst.rows:
            for j, (kind, value) in enumerate(parts):
                own = j + 1 < len(parts) and parts[j + 1][0] == "a" and value.endswith("self.") or \
                    is_own_buffer(parts)
                if kind == "t" and len(_OTHER.findall(value)) > own:
                    return False
                if kind == "a" and (not _ascii_ident(attr_name(value)) or keyword.iskeyword(value) or value in taken):
                    return False
    return True


#: ``self.`` before anything but ``training`` (every nn.Module's own flag: ``dropout_p=0.1 if self.training else 0.0``
#: in a keras-hub layer's attention reads no attribute of the model's)
_OTHER = re.compile(r"\bself\.(?!training\b)")


def attr_name(rest: str) -> str:
    """A block's submodule name: the flat name without the block's prefix; ``_1_conv`` for keras.applications'
    ``conv2_block1_1_conv``, whose rest starts with a digit."""
    return f"_{rest}" if rest[:1].isdigit() else rest


def _template(init, body) -> tuple:
    return init.template()[0], body.template()


def write_modules(emitter, taken) -> None:
    """Nest the containers whose blocks repeat (Note [nested torch modules]), then every submodule at its source
    path (Note [nested paths] in nesting.py); ``taken``: the names a submodule must not shadow. The classes are
    dropped where the flat form is shorter (Note [structured only where shorter] in structure.py). Rewrites
    ``emitter.init``, ``emitter.body``, ``state``, ``module_of`` and ``origins``."""
    classes = emitter.graph.meta.get("module_classes")
    flat = nest(emitter.init.rows, emitter.body.rows, emitter.paths, (), taken, classes)
    saved = (emitter.init, emitter.body, dict(emitter.paths), set(emitter.hidden), emitter.state, emitter.origins,
             emitter.module_of)
    _write_classes(emitter, taken)
    init, body, moved = nest(emitter.init.rows, emitter.body.rows, emitter.paths, (), taken, classes) \
        if emitter.classes else flat
    longer = (lines_of(emitter.classes, init, body), lines_of([], *flat[:2])) if emitter.classes else (0, 0)
    if longer[0] > longer[1]:
        emitter.longer = longer
        emitter.classes.clear()  # Note [structured only where shorter]
        emitter.block_inputs.clear()
        emitter.init, emitter.body, emitter.paths, emitter.hidden, emitter.state, emitter.origins, \
            emitter.module_of = saved
        init, body, moved = flat
    if moved:
        emitter.init.rows, emitter.body.rows = init, body
        _rename_paths(emitter, moved)


def _write_classes(emitter, taken) -> None:
    """The block classes and their containers (Note [nested torch modules])."""
    own_constants(emitter)  # Note [a block's own constants] in block_args.py
    variables = _variables(emitter)
    reads = [{v for k, v in pieces(t, "\0", variables) if k == "v"} if t else set() for _, t, _ in emitter.body.rows]
    containers = _candidates(emitter, variables, reads, taken)
    classes = {}  # template -> [(init, body)]
    for rows in containers.values():
        for _, init, body in rows:
            classes.setdefault(_template(init, body), []).append((init, body))
    containers = {p: rows for p, rows in containers.items()
                  if any(len(classes[_template(i, b)]) > 1 for _, i, b in rows)}
    if not containers:
        return
    chosen = {id(i) for r in containers.values() for _, i, _ in r}
    members = {key: [pair for pair in pairs if id(pair[0]) in chosen] for key, pairs in classes.items()}
    members = {key: pairs for key, pairs in members.items() if pairs}
    names, written = _class_names(emitter, members), {}
    for rows in containers.values():
        for _, init, body in rows:
            key = _template(init, body)
            if key not in written:
                written[key] = _class(emitter, members[key], names[key], taken)
                if written[key] is None:
                    emitter.classes.clear()
                    emitter.block_inputs.clear()
                    return  # too many varying numbers: everything stays flat
    _rewrite(emitter, containers, written, variables)


def _class_names(emitter, members) -> dict:
    """{template: class name}: the source's class (``Bottleneck``, ``LlamaDecoderLayer``), given first to the
    class with the most blocks; another class of the same source class is prefixed with its container
    (``Layer2Bottleneck``), then numbered. Without a source class: the container's name (``Layer``, ``Block``)."""
    used = set(dir(builtins)) | set(keyword.kwlist) | _MODULE_NAMES
    found = {}
    for key, pairs in sorted(members.items(), key=lambda item: -len(item[1])):
        group = _Group([b for _, b in pairs])
        source = source_class([b.key for b in group.instances], emitter.graph.meta.get("module_classes"))
        family = _camel(family_name(group))
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
                 "load_model", "tp_plan", "OrderedDict"}


def _class(emitter, members, cls, reserved):
    """Write one block class into ``emitter.classes``; returns (class name, params, columns) or None."""
    numbers = [init.numbers + body.numbers for init, body in members]
    found = number_params(numbers) if len(members) > 1 else ({}, [])
    if found is None:
        return None
    params, columns = found
    init, body = members[0]
    local = Namespace({"self", "torch", "nn", "F", "math"})
    args = [local.name(param_name(_Joined(init, body), col), "size") for col in columns]
    split = len(init.numbers)
    order = forward_order([b for _, b in members], _model_inputs(emitter))  # Note [forward's arguments]
    inputs = {body.inputs[i]: local.name("x" if i == order[0] else body.inputs[i].replace("self.", ""), "x")
              for i in order}
    locals_ = {v: local.name(v[len(body.prefix) + 1:] if v.startswith(body.prefix + "_") else
                             re.sub(r"_+\d+$", "", v), "v") for v in body.locals}

    def number(i, text, forward=False):
        if i not in params:
            return text
        p, multiple = params[i]
        name = f"self.{args[p]}" if forward else args[p]
        return name if multiple == 1 else f"{multiple} * {name}"

    w = LineWriter()
    w.line(f"class {cls}(nn.Module):")
    w.indent = 1
    keys = ", ".join(b.key for _, b in members)
    w.line(f'"""Source blocks {keys if len(keys) <= 70 else body.key + ", ..."}."""')
    w.line("")
    w.line(f"def __init__({', '.join(['self'] + args)}):")
    w.indent = 2
    w.line("super().__init__()")
    used = {params[c][0] for c in params if c >= split}
    for p in sorted(used):
        w.line(f"self.{args[p]} = {args[p]}")
    own, forward = LineWriter(), LineWriter()
    own.indent = forward.indent = 2
    _lines(own, init.rows, {}, number, 0)
    _lines(forward, body.rows, {**locals_, **inputs}, lambda i, t: number(i, t, True), split)
    forward.line(f"return {', '.join(locals_[v] for v in body.outputs)}")
    paths, classes = _relative(emitter, members)
    rows, forward.rows, moved = nest(own.rows, forward.rows, paths, set(args), reserved, classes)
    w.rows += rows
    w.indent = 1
    w.line("")
    w.line(f"def forward({', '.join(['self'] + [inputs[body.inputs[i]] for i in order])}):")
    w.rows += forward.rows
    emitter.classes.append(w.text())
    for _, b in members:  # the block-rows cutter calls the class with these (targets/forward_cut.py)
        emitter.block_inputs[b.key] = forward_values(emitter, b, order)
    return cls, columns, moved, order


def _model_inputs(emitter) -> set:
    return {emitter.names[v] for v in emitter.graph.inputs if v in emitter.names}


def _relative(emitter, members) -> tuple:
    """(paths, classes) for ``nest`` inside a block class: each attribute's source path after
    the block's own, where every block of the class has the same one (Note [nested paths] in nesting.py)."""
    found = {}
    for init, _ in members:
        for parts, _ in init.rows:
            for value in (v for kind, v in parts if kind == "a"):
                path = emitter.paths.get(f"{init.prefix}_{value}", "")
                rel = path[len(init.key) + 1:] if path.startswith(init.key + ".") else None
                found.setdefault(attr_name(value), set()).add(rel)
    paths = {a: rels.pop() for a, rels in found.items() if len(rels) == 1 and None not in rels}
    key = members[0][0].key + "."
    classes = {k[len(key):]: v for k, v in (emitter.graph.meta.get("module_classes") or {}).items()
               if k.startswith(key)}
    return paths, classes


def _lines(w, rows, names, number, offset) -> None:
    for parts, comment in rows:
        w.line(render(parts, lambda v: names[v], lambda i, t: number(offset + i, t),
                      lambda s: repr(attr_name(s.lstrip("_"))), attr_name), comment)
        offset += sum(kind == "n" for kind, _ in parts)


class _Group:
    def __init__(self, instances):
        self.instances = instances


class _Joined:
    """An init and a forward Instance read as one, for ``param_name``'s column count."""

    def __init__(self, init, body):
        self.rows = init.rows + body.rows


def _rewrite(emitter, containers, written, variables) -> None:
    """Replace each nested container's lines by one submodule and its calls; rename the state keys."""
    init_at, body_at, paths, rename = {}, {}, {}, {}
    for parent, rows in containers.items():
        attr = emitter.attrs.name(ident(parent), "blocks")
        made = [(written[_template(i, b)], i, b) for _, i, b in rows]
        pos, named = chain(made), named_child(rows[0][2].key)
        init_at[rows[0][1].start] = (attr, made, pos is not None and len(rows[0][2].inputs) == 1, named)
        emitter.paths[attr] = parent
        for index, (_, init, body) in enumerate(rows):
            body_at[body.start] = (attr, index, body, made, pos, named)
            slot = child(body.key) if named else index
            moved = written[_template(init, body)][2]
            for parts, _ in init.rows:
                for kind, value in parts:
                    if kind == "a" or kind == "s" and is_own_buffer(parts):  # self.<prefix>_<name>, or its buffer
                        name = attr_name(value if kind == "a" else value.lstrip("_"))
                        flat = f"{init.prefix}_{value}" if kind == "a" else f"{init.prefix}{value}"
                        paths[flat] = f"{attr}.{slot}.{moved.get(name, name)}"
    skip_init = {i for rows in containers.values() for _, init, _ in rows
                 for i in range(init.start, init.stop) if i not in init.hoisted}
    skip_body = {i for rows in containers.values() for _, _, body in rows for i in range(body.start, body.stop)}
    init = LineWriter()
    for i, (indent, text, comment) in enumerate(emitter.init.rows):
        if i in init_at:
            write_container(init, indent, *init_at[i])
        if i not in skip_init:
            init.indent = indent
            init.line(text, comment)
    body = LineWriter()
    for i, (indent, text, comment) in enumerate(emitter.body.rows):
        if i in body_at:
            _, index, inst, made, pos, _ = body_at[i]
            hoisted = inst.hoisted if pos is None else [n for _, _, b in made for n in b.hoisted] if not index else []
            for line in hoisted:  # before the call (or the loop) that reads them
                body.indent = indent
                body.line(emitter.body.rows[line][1], emitter.body.rows[line][2])
            write_call(emitter, body, indent, *body_at[i][:5], rename, body_at[i][5])
        if i not in skip_body:
            body.indent = indent
            body.line(render(pieces(text, "\0", variables), lambda v: rename.get(v, v)) if text else text, comment)
    emitter.init, emitter.body = init, body
    _rename_paths(emitter, paths)


def _rename_paths(emitter, paths) -> None:
    """State keys, submodule paths and origins from the flat attribute names to the nested paths."""
    def moved(key):
        attr, dot, rest = key.partition(".")
        return paths[attr] + dot + rest if attr in paths else key

    emitter.state = {moved(k): v for k, v in emitter.state.items()}
    emitter.origins = {moved(k): v for k, v in emitter.origins.items()}
    emitter.module_of = {v: moved(m) for v, m in emitter.module_of.items()}


def _ascii_ident(name) -> bool:
    """An identifier Python reads as written: ASCII (non-ASCII ones are NFKC-normalised; Note [untrusted names])."""
    return name.isascii() and name.isidentifier()
