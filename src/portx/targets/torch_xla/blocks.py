"""Repeated blocks as nested ``nn.Module`` classes, held in ``nn.Sequential`` / ``nn.ModuleList`` containers named
after the source's (Note [structured code] in targets/structure.py), as torchvision writes ResNet.

Note [nested torch modules]: the blocks ``layer1.0``, ``layer1.1``, ... of one source container become
``self.layer1 = nn.Sequential(Bottleneck(4, 4, 1, downsample=True), Bottleneck(16, 4, 1), ...)``; a submodule the
flat code named ``layer1_1_conv1`` is then ``layer1[1].conv1``, and its state_dict key ``layer1.1.conv1.weight``.
Named blocks (``encoder.layers.encoder_layer_0``) are held by name (Note [named block containers] in
containers.py). A class is named after the source's (``graph.meta["module_classes"]``, from torch's
``nn_module_stack``), the one with the most blocks first; another of the same source class is prefixed with its
container (``class_names`` in block_class.py). Blocks that differ only by an optional submodule share a class
(Note [optional submodules] in optional.py). Inside a class and on ``Model`` each submodule then moves to its
source path (Note [nested paths] in nesting.py). A container is nested only when every block in it can be (its
statements templated, its attributes its own, numbered 0, 1, ... in order) and at least two of them share a
class; otherwise it stays flat, as before. The emitter's ``state``, ``module_of`` and ``origins`` are renamed to
the nested paths, so the weights file, the tp_plan, the gradient pairing and every loader read the nested keys.

Example:
    >>> write_modules(emitter)   # emitter.init / emitter.body rewritten, emitter.classes holds the classes
"""
from __future__ import annotations

import keyword
import re

from ..auto_names import numbered_locals
from ..cell_inputs import input_roles
from ..codegen import LineWriter
from ..optional_parts import Layout
from ..optional_run import aligned, arrange, optional_params
from ..structure import assigned_names, block_lines, find_outputs, ident, instance, lines_of, pieces, render
from .block_args import is_own_buffer, named_child, own_constants
from .block_class import attr_name, class_names, own_attribute, relative, write_class
from .containers import EACH, chain, child, named_container, plain_names, write_call, write_container
from .choices import merge_layouts
from .key_order import in_source_order
from .nesting import nest
from .numbered import number_submodules
from .optional import optional_part, with_strides, without_strides

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
    found, numbered = {}, numbered_locals(emitter.graph)
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
        if ok:  # Note [submodules named after their block] in numbered.py
            number_submodules(init, body, numbered)
        found.setdefault(block["parent"], []).append((block["index"], block, init, body) if ok else None)
    found = {parent: [row[1:] for row in rows] for parent, rows in found.items()
             if None not in rows and _numbered([row[0] for row in rows])}
    held = {}
    for rows in found.values():
        each = rows[0][0].get("sibling") or rows[0][1].numbered  # Note [submodules named after their block]
        holder = None if each else _holder(emitter, rows, taken)
        if each:  # each at its own path (Note [sibling blocks] in passes/blocks_siblings.py)
            if plain_names([block["key"] for block, _, _ in rows], taken, top=True) is not None:
                held[(EACH, rows[0][0]["parent"])] = rows
        elif holder:
            held[holder] = rows
        elif named_child(rows[0][0]["key"]) and plain_names([block["key"] for block, _, _ in rows], taken):
            held[(EACH, rows[0][0]["parent"])] = rows  # Note [blocks held one by one] in containers.py
    return held


def _numbered(indices) -> bool:
    """True for blocks numbered 0, 1, ... (torch) or 1, 2, ... (Keras) in order."""
    return indices in (list(range(len(indices))), list(range(1, len(indices) + 1)))


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
    if not emitter.classes:
        emitter.init = saved[0]  # without the strides _write_classes wrote in
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
    keys = emitter.graph.meta.get("source_keys")
    emitter.init.rows = in_source_order(emitter.init.rows, keys)  # Note [the source's keys] in key_order.py


def _write_classes(emitter, taken) -> None:
    """The block classes and their containers (Note [nested torch modules])."""
    own_constants(emitter)  # Note [a block's own constants] in block_args.py
    _write_strides(emitter)  # Note [optional submodules] in optional.py
    if not _write_kinds(emitter, taken, layouts=True):  # a merge of optional parts that cannot be written: as before
        _write_kinds(emitter, taken, layouts=False)


def _write_kinds(emitter, taken, layouts) -> bool:
    """The classes of the blocks' kinds, with kinds that differ by optional parts joined where ``layouts`` (Note
    [optional parts]); False where a class joined so could not be written (nothing is then written)."""
    variables = _variables(emitter)
    reads = [{v for k, v in pieces(t, "\0", variables) if k == "v"} if t else set() for _, t, _ in emitter.body.rows]
    containers = _candidates(emitter, variables, reads, taken)
    classes = {}  # template -> [(init, body)]
    for rows in containers.values():
        for _, init, body in rows:
            classes.setdefault(_template(init, body), []).append((init, body))
    alias, parts = _merge(emitter, classes)
    if layouts:
        merge_layouts(classes, alias, parts)  # Note [optional parts] in targets/optional_parts.py

    def key_of(init, body):
        return alias.get(_template(init, body), _template(init, body))

    containers = {p: rows for p, rows in containers.items() if any(len(classes[key_of(i, b)]) > 1 for _, i, b in rows)}
    if not containers:
        return True
    chosen = {id(i) for r in containers.values() for _, i, _ in r}
    members = {key: [pair for pair in pairs if id(pair[0]) in chosen] for key, pairs in classes.items()}
    members = {key: pairs for key, pairs in members.items() if pairs}
    names, written = class_names(emitter, members), {}
    roles = dict(zip(members, input_roles([[b for _, b in pairs] for pairs in members.values()], emitter.body.rows,
                                          {emitter.names[v] for v in emitter.graph.inputs if v in emitter.names})))
    for rows in containers.values():
        for _, init, body in rows:
            key = key_of(init, body)
            if key not in written:
                part = parts.get(key)
                whole = part is None or isinstance(part, Layout) or id(members[key][0][0]) in part.members
                written[key] = write_class(emitter, members[key], names[key], taken, part, roles[key]) if whole \
                    else None
                if written[key] is None:
                    emitter.classes.clear()
                    emitter.block_inputs.clear()
                    return not isinstance(part, Layout)  # else too many varying numbers: everything stays flat
    _rewrite(emitter, containers, written, variables, key_of)
    return True


def _write_strides(emitter) -> None:
    """``emitter.init`` anew, with ``stride=1`` in the convs inside blocks (Note [optional submodules])."""
    blocks = [b for b in emitter.graph.meta.get("blocks") or []
              if all(emitter.spans.get(i) is not None for i in range(b["start"], b["stop"]))]
    init = LineWriter()
    init.indent, init.rows = emitter.init.indent, with_strides(emitter.init.rows,
                                                               [block_lines(emitter.spans, b, 1) for b in blocks])
    emitter.init = init


def _merge(emitter, classes) -> tuple:
    """({template: the template it joined}, {template: its Optional}): each class whose blocks are another's with an
    optional submodule joins it, its blocks first; the other's numbers laid out as theirs (Note [optional
    submodules] in optional.py). Rewrites ``classes``."""
    alias, parts = {}, {}
    for ka in list(classes):
        for kb in [k for k in classes if k != ka and k not in parts and ka not in parts]:
            if ka not in classes or not classes[ka]:
                break
            paths = relative(emitter, classes[ka])[0]
            found = optional_part(classes[ka][0], classes[kb][0], lambda x: paths.get(attr_name(x), ""))
            if found is None:
                continue
            bodies = [arrange(found.run, b) for _, b in classes[ka]]  # the run gathered, operands swapped as kb's
            split, size = len(classes[ka][0][0].numbers), sum(map(len, (classes[ka][0][0].numbers,
                                                                     classes[ka][0][1].numbers)))
            laid = [aligned(i.numbers + b.numbers, size, found.positions) for i, b in classes[kb]]
            if None in laid or optional_params([i.numbers + b[1] for (i, _), b in zip(classes[ka], bodies)] + laid,
                                               found.positions) is None:
                continue
            for (_, body), (rows, numbers) in zip(classes[ka], bodies):
                body.rows, body.numbers = rows, numbers
            for (init, body), numbers in zip(classes[kb], laid):
                init.numbers, body.numbers = numbers[:split], numbers[split:]
            found.members = {id(i) for i, _ in classes[ka]}
            alias[_template(*classes[ka][0])] = kb
            classes[kb] = classes.pop(ka) + classes[kb]
            alias[ka], parts[kb] = kb, found
            break
    return alias, parts


def _rewrite(emitter, containers, written, variables, key_of) -> None:
    """Replace each nested container's lines by one submodule and its calls; rename the state keys."""
    init_at, body_at, paths, rename = {}, {}, {}, {}
    for parent, rows in containers.items():
        made = [(written[key_of(i, b)], i, b) for _, i, b in rows]
        if isinstance(parent, tuple):  # Note [blocks held one by one] in containers.py
            _each(emitter, made, init_at, body_at, paths)
            continue
        attr = emitter.attrs.name(ident(parent, cased=True), "blocks", cased=True)
        pos, named = chain(made), named_child(rows[0][2].key)
        init_at[rows[0][1].start] = (attr, made, pos is not None and len(rows[0][2].inputs) == 1, named)
        emitter.paths[attr] = parent
        for index, (_, init, body) in enumerate(rows):
            body_at[body.start] = (attr, index, body, made, pos, named)
            slot = child(body.key) if named else index
            moved = written[key_of(init, body)][2]
            for flat, name in _own_names(init):
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
            init.line(without_strides(text), comment)
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


def _own_names(init):
    """(flat attribute, name in its block) of each submodule or buffer a block's ``__init__`` lines make."""
    for parts, _ in init.rows:
        for kind, value in parts:
            if kind == "a" or kind == "s" and is_own_buffer(parts):  # self.<prefix>_<name>, or its buffer
                yield (own_attribute(init, value) if kind == "a" else init.flat(kind, value),
                       attr_name(init.numbered.get(value, value) if kind == "a" else value.lstrip("_")))


def _each(emitter, made, init_at, body_at, paths) -> None:
    """Each block of ``made`` an attribute of its own at its source path, called by name (Note [blocks held one by
    one] in containers.py); fills ``_rewrite``'s ``init_at``, ``body_at`` and state ``paths``."""
    for row in made:
        written, init, body = row
        attr = emitter.attrs.name(ident(body.key, cased=True), "block", cased=True)
        emitter.paths[attr] = body.key
        init_at[init.start] = (attr, [row], False, EACH)
        body_at[body.start] = (attr, 0, body, [row], None, EACH)
        for flat, name in _own_names(init):
            paths[flat] = f"{attr}.{written[2].get(name, name)}"


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
