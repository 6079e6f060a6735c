"""Repeated blocks as Keras functions: ``def block(x, filters, name):`` called per block, in a loop where the
source stacks them (Note [structured code] in targets/structure.py), as keras.applications writes ResNet.

The function creates the same layers, under the same names (``f"{name}_conv1"`` is ``'layer1_0_conv1'``), as
the flat code would: the weights files, the layout map and every check that reads layer names are unchanged.

Example:
    >>> outs = write_blocks(emitter, outs)   # emitter.body rewritten, emitter.functions holds the defs
"""
from __future__ import annotations

import re

from ..codegen import LineWriter, Namespace, literal
from ..structure import assigned_names, block_groups, family_name, ident, lines_of, loops, param_name, pieces, \
    render, source_class

__all__ = ["write_blocks"]


def _reads(rows, variables, outs) -> list:
    """Per body line, the variables it reads; plus the output expressions' as a last row."""
    return [{v for k, v in pieces(text, "\0", variables) if k == "v"} if text else set()
            for _, text, _ in rows] + [set(outs)]


def write_blocks(emitter, outs, width=100) -> list:
    """Rewrite ``emitter.body`` with each group of equal blocks written once (``emitter.functions``); returns
    ``outs`` (the output expressions) with renamed variables. Values no longer bound in build_model are added
    to ``emitter.hidden``."""
    rows, blocks = emitter.body.rows, emitter.graph.meta.get("blocks") or []
    if not blocks:
        return outs
    variables = assigned_names(emitter)
    inputs = {emitter.names[v] for v in emitter.graph.inputs} | {"anchor"}
    groups = block_groups(rows, emitter.spans, blocks, variables, _reads(rows, variables, outs), inputs)
    if not groups:
        return outs
    calls, rename, hidden = {}, {}, set(emitter.hidden)
    for group in groups:
        fn = _function(emitter, group, width)
        for run, pos in loops(group):
            calls[run[0].start] = (run, pos, fn, group)
    body = LineWriter(width)
    body.indent = 1
    skip = set()
    for i, (indent, text, comment) in enumerate(rows):
        if i in calls:
            run, pos, fn, group = calls[i]
            skip.update(range(run[0].start, run[-1].stop))
            for line in (line for inst in run for line in inst.hoisted):  # before the calls that read them
                body.indent = rows[line][0]
                body.line(rows[line][1], rows[line][2])
            _call(emitter, body, run, pos, fn, group, rename)
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


def _call(emitter, body, run, pos, fn, group, rename) -> None:
    """One call, or a loop over the consecutive blocks of ``run``."""
    first = run[0]
    args = [rename.get(v, v) for v in first.inputs] + [first.numbers[col] for col in group.columns]
    body.indent = 1
    if len(run) == 1:
        args.append(f"name={literal(first.prefix)}")
        body.line(f"{', '.join(first.outputs)} = {fn}({', '.join(args)})", f"source block {first.key}")
        return
    chain = emitter.ns.name(ident(first.parent), "x")
    body.line(f"{chain} = {args[pos]}")
    args[pos] = chain
    lo, hi = first.index, run[-1].index
    body.line(f"for i in range({f'{lo}, ' if lo else ''}{hi + 1}):", f"source blocks {first.key} to {run[-1].key}")
    body.indent = 2
    name = 'f"' + first.stem + '{i}"'
    body.line(f"{chain} = {fn}({', '.join(args + [f'name={name}'])})")
    body.indent = 1
    rename[run[-1].outputs[0]] = chain
    for inst in run:
        emitter.hidden.update(inst.locals)


def _snake(name: str) -> str:
    """A source class's name as a function's, as keras.applications writes them: ``LlamaDecoderLayer`` ->
    ``llama_decoder_layer``."""
    return re.sub(r"(?<=[A-Za-z0-9])(?=[A-Z][a-z])", "_", name).lower()


def _function(emitter, group, width) -> str:
    """Write the group's function into ``emitter.functions``; returns its name."""
    first = group.instances[0]
    source = source_class([inst.key for inst in group.instances], emitter.graph.meta.get("module_classes"))
    fn = emitter.ns.name(_snake(source) if source else family_name(group), "block")
    local = Namespace({"keras", "layers", "ops", "np", "name", "Constant", "FreeShape"})
    inputs = {v: local.name("x" if i == 0 else v, "x") for i, v in enumerate(first.inputs)}
    params = [local.name(param_name(first, col), "size") for col in group.columns]
    names = {v: local.name(v[len(first.prefix) + 1:] if v.startswith(first.prefix + "_") else
                           "out" if v == first.prefix else v, "v") for v in first.locals}
    names.update(inputs)

    def number(i, text):
        if i not in group.params:
            return text
        p, multiple = group.params[i]
        return params[p] if multiple == 1 else f"{multiple} * {params[p]}"

    def string(suffix):
        return f'f"{{name}}{suffix}"' if suffix else "name"

    w = LineWriter(width)
    w.line(f"def {fn}({', '.join(list(inputs.values()) + params + ['name'])}):")
    w.indent = 1
    keys = ", ".join(inst.key for inst in group.instances)
    w.line(f'"""Source blocks {keys if len(keys) <= 70 else group.instances[0].key + ", ..."}."""')
    offset = 0  # number columns count over the whole block
    for parts, comment in first.rows:
        w.line(render(parts, lambda v: names[v], lambda i, n: number(offset + i, n), string), comment)
        offset += sum(kind == "n" for kind, _ in parts)
    w.line(f"return {', '.join(names[v] for v in first.outputs)}")
    emitter.functions.append(w.text())
    for inst in group.instances:
        emitter.hidden.update(v for v in inst.locals if v not in inst.outputs)
    return fn
