"""Repeated blocks as Keras functions: ``def block(x, filters, name):`` called per block, in a loop where the
source stacks them (Note [structured code] in targets/structure.py), as keras.applications writes ResNet.

The function creates the same layers, under the same names (``f"{name}_conv1"`` is ``'layer1_0_conv1'``), as
the flat code would: the weights files, the layout map and every check that reads layer names are unchanged.

Example:
    >>> outs = write_blocks(emitter, outs)   # emitter.body rewritten, emitter.functions holds the defs
"""
from __future__ import annotations

import re

from ..arg_names import param_names
from ..auto_names import auto_names, cut_family, local_name, numbered_name
from ..cell_inputs import cell_chains, input_roles
from ..codegen import LineWriter, Namespace, literal
from ..comments import source_blocks
from ..joinable import as_written, restored
from ..optional_parts import Layout
from ..structure import assigned_names, block_groups, block_lines, family_name, ident, lines_of, loops, \
    pieces, render, source_class
from .choices import flag_test, merge_parts
from .optional import merge_optional
from .scopes import function_scopes, layer_scopes, numbered_locals, open_scopes

__all__ = ["write_blocks"]


def _reads(rows, variables, outs) -> list:
    """Per body line, the variables it reads; plus the output expressions' as a last row."""
    return [{v for k, v in pieces(text, "\0", variables) if k == "v"} if text else set()
            for _, text, _ in rows] + [set(outs)]


# Note [glue a block owns]: free dims write some of a block's nodes before every block (keras-hub Llama's attention
# mask, ``transformer_layer_1_self_attention_expand``, grown from the padding mask; Note [a block's own nodes] in
# passes/blocks.py), so each block read its own copy as an argument and the calls could not share a loop. A
# statement outside every block whose variables all carry one block's prefix, that reads nothing but the model's
# inputs (and such statements of the same block) and that only that block reads, is moved to just before the block
# and written in its function; it creates no layer with weights, so the layers holding weights keep their order.


def _absorb(emitter, blocks, inputs, reads) -> tuple:
    """(rows, spans) of the body with the statements each block owns moved into it (Note [glue a block owns]);
    ``spans`` as ``block_groups`` reads them: each node of a block -> the block's (first line, end line)."""
    rows, spans = emitter.body.rows, emitter.spans
    ranges = [(block, *block_lines(spans, block)) for block in blocks
              if all(spans.get(i) is not None for i in range(block["start"], block["stop"]))]
    owned = _owned(emitter, rows, ranges, inputs, reads)
    if not owned:
        return rows, spans
    order = []
    starts = {lo: k for k, (_, lo, hi) in enumerate(ranges) if hi > lo}
    for i in range(len(rows)):
        if i in starts:
            order += sorted(j for j, k in owned.items() if k == starts[i])
        if i not in owned:
            order.append(i)
    at = {old: new for new, old in enumerate(order)}
    moved = {}
    for k, (block, lo, hi) in enumerate(ranges):
        first = min([j for j, o in owned.items() if o == k] + [lo])
        for i in range(block["start"], block["stop"]):
            moved[i] = ((at[first],), (at[hi - 1] + 1,)) if hi > lo else spans[i]
    return [rows[i] for i in order], moved


def _owned(emitter, rows, ranges, inputs, reads) -> dict:
    """{line: the index in ``ranges`` of the block that owns it} (Note [glue a block owns])."""
    inside = {i for _, lo, hi in ranges for i in range(lo, hi)}
    readers, weighted = {}, set(emitter.weights)
    for i, names in enumerate(reads):
        for v in names:
            readers.setdefault(v, set()).add(i)
    owned, made = {}, {}
    for k, (block, lo, hi) in enumerate(ranges):
        prefix = ident(block["key"]) + "_"
        for i in range(lo if hi > lo else 0):
            names = _made(rows[i][1]) if i not in inside and rows[i][0] == rows[lo][0] else None
            if names and all(n.startswith(prefix) for n in names) \
                    and not (set(names) | set(_NAMED.findall(rows[i][1]))) & weighted:
                owned[i], made[i] = k, names
    changed = True
    while changed:  # drop a statement read outside its block, or reading what is not an input or owned with it
        mine = {k: {n for i, o in owned.items() if o == k for n in made[i]} for k in set(owned.values())}
        keep = {i: k for i, k in owned.items() if reads[i] <= inputs | mine[k] and all(
            owned.get(j) == k or ranges[k][1] <= j < ranges[k][2] for n in made[i] for j in readers.get(n, ()))}
        changed, owned = keep != owned, keep
    return owned


def _made(text) -> list:
    """The variables a statement binds (``a, b = ...``), or []."""
    found = _LHS.match(text or "")
    return found.group(1).split(", ") if found else []


_LHS = re.compile(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) = ")
_NAMED = re.compile(r"name='(\w+)'")


def write_blocks(emitter, outs, width=100) -> list:
    """Rewrite ``emitter.body`` with each group of equal blocks written once (``emitter.functions``); returns
    ``outs`` (the output expressions) with renamed variables. Values no longer bound in build_model are added
    to ``emitter.hidden``."""
    rows, blocks = emitter.body.rows, emitter.graph.meta.get("blocks") or []
    if not blocks:
        return outs
    variables = assigned_names(emitter)
    inputs = {emitter.names[v] for v in emitter.graph.inputs} | {"anchor"}
    rows, spans = _absorb(emitter, blocks, inputs, _reads(rows, variables, outs))
    singles = []
    groups = block_groups(rows, spans, blocks, variables, _reads(rows, variables, outs), inputs,
                          {**auto_names(emitter.graph), **numbered_locals(emitter.graph)}, singles)
    if not groups:
        return outs
    groups, shortcuts = merge_optional(groups)  # Note [an optional shortcut] in optional.py
    groups, layouts = merge_parts(groups, singles, layer_scopes(emitter), shortcuts)  # Note [optional parts]
    shortcuts.update(layouts)
    calls, rename, hidden = {}, {}, set(emitter.hidden)
    roles = input_roles([g.instances for g in groups], rows, inputs)  # Note [a cell's two inputs]
    links = {id(inst): (chain, k, names) for chain in cell_chains(groups, roles)
             for names in [(emitter.ns.name("x"), emitter.ns.name("p"))] for k, inst in enumerate(chain)}
    for group, role in zip(groups, roles):
        paired = all(len(run) == 1 and id(run[0]) in links for run, _ in loops(group))  # Note [cells passed as x, p]
        fn, order = _function(emitter, group, width, shortcuts.get(id(group)), role, paired)
        for run, pos in loops(group):
            link = (*links[id(run[0])], role) if paired else None
            calls[run[0].start] = (run, pos, fn, group, order, shortcuts.get(id(group)), link)
    body = LineWriter(width)
    body.indent = 1
    skip = set()
    for i, (indent, text, comment) in enumerate(rows):
        if i in calls:
            run, pos, fn, group, order, shortcut, link = calls[i]
            skip.update(range(run[0].start, run[-1].stop))
            for line in (line for inst in run for line in inst.hoisted):  # before the calls that read them
                body.indent = rows[line][0]
                body.line(rows[line][1], rows[line][2])
            _call(emitter, body, run, pos, (fn, order), group, rename, shortcut, link)
        if i in skip:
            continue
        body.indent = indent
        body.line(render(pieces(text, "\0", variables), lambda v: rename.get(v, v)) if rename and text else text,
                  comment)
    # Note [structured only where shorter]: lines as written (a long statement wraps), as the functions' are
    structured, flat = lines_of(emitter.functions, body.text().splitlines()), \
        lines_of([], emitter.body.text().splitlines())
    if structured > flat:
        emitter.longer = (structured, flat)
        emitter.functions.clear()
        emitter.hidden.clear()
        emitter.hidden.update(hidden)
        return outs
    emitter.body = body
    return [rename.get(o, o) for o in outs]


def _call(emitter, body, run, pos, function, group, rename, shortcut=None, link=None) -> None:
    """One call, or a loop over the consecutive blocks of ``run``; ``function``: its name and input order;
    ``shortcut``: the group's optional part (Note [an optional shortcut] in optional.py); ``link``: (chain, place in
    it, input roles) for a call written ``x, p = f(x, p, ...)`` (Note [cells passed as x, p] in cell_inputs.py)."""
    (fn, order), first = function, run[0]
    args = [rename.get(v, v) for v in first.inputs]
    flag = [f"{f}={v}" for f, v in shortcut.flags_of(first)] if shortcut else []
    keywords = shortcut.keywords if isinstance(shortcut, Layout) else {}  # Note [optional parts]: a value only some blocks pass
    numbers = [first.numbers[col] for col in group.columns if col not in keywords] + \
        [f"{shortcut.names[col]}={first.numbers[col]}" for col in keywords if first.numbers[col] is not None] + flag
    body.indent = 1
    if link:
        return _paired_call(emitter, body, first, args, (fn, order, numbers), link, rename)
    if len(run) == 1:
        args = [args[i] for i in order] + numbers + [f"name={literal(first.suffix or first.call_name())}"]
        body.line(f"{', '.join(first.outputs)} = {fn}({', '.join(args)})", f"source block {first.key}")
        return
    chain = emitter.ns.name(ident(first.parent), "x")
    body.line(f"{chain} = {args[pos]}")
    args[pos] = chain
    args = [args[i] for i in order] + numbers
    lo, hi = first.index, run[-1].index
    body.line(f"for i in range({f'{lo}, ' if lo else ''}{hi + 1}):", f"source blocks {first.key} to {run[-1].key}")
    body.indent = 2
    name = 'f"' + first.call_name()[:len(first.stem)] + '{i}"'  # Note [block names in the source's case]
    body.line(f"{chain} = {fn}({', '.join(args + [f'name={name}'])})")
    body.indent = 1
    rename[run[-1].outputs[0]] = chain
    for inst in run:
        emitter.hidden.update(inst.locals)


def _paired_call(emitter, body, inst, args, function, link, rename) -> None:
    """``x, p = f(x, p, ...)`` (Note [cells passed as x, p] in cell_inputs.py), after ``x, p = <x>, <p>`` at the
    chain's first call; after its last, what reads its last two outputs reads ``x`` and ``p``."""
    (fn, order, numbers), (chain, k, names, (x, p)) = function, link
    if k == 0:
        body.line(f"{', '.join(names)} = {args[x]}, {args[p]}")
    args = [names[0] if i == x else names[1] if i == p else args[i] for i in order]
    call = f"{fn}({', '.join(args + numbers + [f'name={literal(inst.suffix or inst.call_name())}'])})"
    body.line(f"{', '.join(names)} = {call}", f"source block {inst.key}")
    if k == len(chain) - 1:
        rename.update({inst.outputs[0]: names[0], chain[-2].outputs[0]: names[1]})
    emitter.hidden.update(inst.locals)


def _without(name, suffix) -> str:
    """A variable's name without its block's id (Note [blocks named by a suffix] in passes/blocks_suffix.py):
    ``normal_conv_1_0`` -> ``normal_conv_1``, ``separable_conv_1_normal_left1_0_depthwise`` ->
    ``separable_conv_1_normal_left1_depthwise``."""
    return re.sub(rf"^(\w+)_{re.escape(suffix)}(?=(?:_[A-Za-z]+)?$)", r"\1", name) if suffix else name


def _snake(name: str) -> str:
    """A source class's name as a function's, as keras.applications writes them: ``LlamaDecoderLayer`` ->
    ``llama_decoder_layer``."""
    return re.sub(r"(?<=[A-Za-z0-9])(?=[A-Z][a-z])", "_", name).lower()


def _stem_name(group) -> str:
    """A function's name from the Keras names of its blocks, as keras.applications names its own: ``conv_block`` for
    ``conv2_block1``, ``conv3_block2``; ``block`` for EfficientNet's ``block2a``; ``expanded_conv_block`` for
    ``expanded_conv_3``; "" for a torch source's blocks (``layer1.0``) or where the blocks' names differ."""
    if any(re.search(r"\.\d+$", inst.key) for inst in group.instances):
        return ""
    stems = {re.sub(r"\d+", "", inst.stem).strip("_") for inst in group.instances}
    stem = re.sub(r"_+", "_", stems.pop()) if len(stems) == 1 else ""
    stem = stem[:-1] if stem.endswith("s") and not stem.endswith("ss") else stem  # encoder_layers_0: encoder_layer
    stem = stem if stem.endswith(("block", "layer")) else f"{stem}_block"  # not a layer's name: expanded_conv_1
    return stem if stem.isidentifier() else ""


def _input_order(first, model_inputs, hidden=None) -> list:
    """The order a block function takes its inputs in: the tensor the block transforms (``x``: ``hidden``, Note [a
    cell's two inputs] in targets/cell_inputs.py, else the first that is not a model input) first, then the others in
    order of first use. keras-hub's layers read the padding mask
    (a model input) before their input: ``transformer_decoder(x, padding_mask, name)``."""
    order = list(range(len(first.inputs)))
    main = hidden if hidden is not None else next((i for i in order if first.inputs[i] not in model_inputs), 0)
    return [main] + [i for i in order if i != main]


def _keys(group) -> str:
    """The docstring of a group's function: its block keys in source order (Note [structured code])."""
    return source_blocks([inst.key for inst in sorted(group.instances, key=lambda inst: inst.start)])


def _guarded(rows, run, flag, names, keys) -> list:
    """A function's ``rows`` (its def, docstring, then a row per statement) with the ``run``'s statements under
    ``if flag:``, ``else:`` its output set to the input it stands for, and its docstring naming ``keys`` (Note [an
    optional shortcut] in optional.py)."""
    start, stop = 2 + run.rows.start, 2 + run.rows.stop
    indent, (doc_indent, _, doc_comment) = rows[start][0], rows[1]
    return rows[:1] + [(doc_indent, f'"""{keys}"""', doc_comment)] + rows[2:start] + \
        [(indent, f"if {flag}:", "")] + [(d + 1, text, comment) for d, text, comment in rows[start:stop]] + \
        [(indent, "else:", ""), (indent + 1, f"{names[run.output]} = {names[run.input]}", "")] + rows[stop:]


def _function(emitter, group, width, shortcut=None, role=(None, None), paired=False) -> tuple:
    """Write the group's function into ``emitter.functions``; returns its name and the order it takes the blocks'
    inputs in (``_input_order``). ``shortcut``: the statements only its first blocks have, under a flag (Note [an
    optional shortcut] in optional.py)."""
    layout = shortcut if isinstance(shortcut, Layout) else None  # Note [optional parts] in tested_flags.py
    first = layout.ref if layout else group.instances[0]
    members = [inst.key for inst in group.instances]
    cut = cut_family(members, emitter.graph)  # Note [names of cut blocks' kinds] in auto_names.py
    source = "" if cut or first.family else source_class(members, emitter.graph.meta.get("module_classes"))
    fn = emitter.ns.name(cut or (_snake(source) if source else first.family or _stem_name(group) or
                                 family_name(group)), "block")
    local = Namespace({"keras", "layers", "ops", "np", "name", "Constant", "SourceWeight", "FreeShape"})
    model_inputs = {emitter.names[v] for v in emitter.graph.inputs}
    order = _input_order(first, model_inputs, role[0])
    numbered = numbered_locals(emitter.graph)  # Note [nested models' scopes] in scopes.py
    inputs = {first.inputs[i]: local.name("x" if n == 0 else "p" if i == role[1] else "inputs" if first.inputs[i] in
                                          ("x", "p") and first.inputs[i] in model_inputs else first.inputs[i], "x")
              for n, i in enumerate(order)}  # Note [a cell's two inputs] in targets/cell_inputs.py; a model input
    # named as the block's own: keras.applications' ``inputs`` (the zoo ConvNeXt's anchor), not ``x_1``
    rows = list(zip(layout.depths, *zip(*layout.rows))) if layout else [(0, p, c) for p, c in first.rows]
    counted = sum(kind == "n" for _, parts, _ in rows for kind, _ in parts)  # numbered names' columns follow
    bases = [col for col in group.columns if col >= counted]  # one n, or one per stem: n_conv2d
    named = dict(zip(group.columns, param_names(layout or first, [col for col in group.columns if col < counted],
                                                group.params)))
    if layout:  # Note [a flag its keyword stands for], Note [flags at the most blocks' value] in tested_flags.py
        layout.calls = {id(run[0]) for run, _ in loops(group)}  # a loop is one call
        layout.counted(lambda col: named.get(col, ""))
    # the flags before the variables' names; none that its keyword stands for
    flags = [f"{local.name(f)}={layout.default(f)}" for f in layout.flags if f not in layout.tested] if layout else []
    params = [local.name(named[col] if col < counted else "n" if len(bases) == 1 else
                         f"n_{first.stems[col - counted]}", "size") for col in group.columns]
    prefix = (layout.prefix_of if layout else {}).get
    names = {v: local.name(v[len(prefix(v, first.prefix)) + 1:] if v.startswith(prefix(v, first.prefix) + "_") else
                           "out" if v == first.prefix else _without(v, first.suffix) if first.suffix else
                           numbered[v][0] if v in numbered else local_name(v, emitter.graph), "v")
             for v in (layout.made if layout else first.locals)}
    names.update(inputs)
    keywords = layout.keywords if layout else {}
    if layout:
        layout.names = {col: p for col, p in zip(group.columns, params)}
        flags = [f"{layout.names[col]}={default}" for col, default in keywords.items()] + flags
    flag = local.name(shortcut.flag) if shortcut and not layout else None
    if flag:
        names[shortcut.run.output] = local.name("shortcut", "v")

    def number(i, text):
        if i not in group.params:
            return as_written(text)  # Note [the activation as an argument] in joinable.py
        p, multiple = group.params[i]
        return params[p] if multiple == 1 else f"{multiple} * {params[p]}"

    def string(suffix):
        if isinstance(suffix, tuple):  # a name that ends with the block's id (Note [blocks named by a suffix])
            return f'f"{suffix[0]}_{{name}}{suffix[1]}"'
        return f'f"{{name}}{suffix}"' if suffix else "name"

    def auto(stem, offset):  # Note [numbered names in block functions] in auto_names.py
        col = counted + first.stems.index(stem)
        return numbered_name(stem, offset, number(col, first.numbers[col]))

    w = LineWriter(width)
    signature = list(inputs.values()) + [p for col, p in zip(group.columns, params) if col not in keywords]
    w.line(f"def {fn}({', '.join(signature + ['name'] + flags + ([f'{flag}=False'] if flag else []))}):")
    w.indent = 1
    w.line(f'"""{_keys(group)}"""')
    offset = 0  # number columns count over the whole block
    for depth, parts, comment in rows:
        w.indent = 1 + depth
        text = restored(render(parts, lambda v: names[v], lambda i, n: number(offset + i, n), string, auto=auto))
        w.line(flag_test(layout, parts) or text, comment)  # Note [the activation as an argument] in joinable.py,
        # Note [a flag its keyword stands for] in tested_flags.py
        offset += sum(kind == "n" for kind, _ in parts)
    scopes = function_scopes(group.instances, layer_scopes(emitter))  # Note [emitted name scopes] in scopes.py
    w.rows[2:] = open_scopes(w.rows[2:], scopes, lambda text: text)
    state = [names[first.inputs[order[0]]]] if paired else []  # Note [cells passed as x, p] in cell_inputs.py
    w.indent = 1
    w.line(f"return {', '.join([names[v] for v in (layout.outputs if layout else first.outputs)] + state)}")
    if flag:  # Note [an optional shortcut] in optional.py
        w.rows = _guarded(w.rows, shortcut.run, flag, names, _keys(group))
    emitter.functions.append(w.text())
    for inst in group.instances:
        emitter.hidden.update(v for v in inst.locals if v not in inst.outputs)
    return fn, order
