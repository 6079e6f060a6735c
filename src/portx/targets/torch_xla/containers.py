"""The containers on ``Model`` that hold a source container's blocks, and the calls of those blocks in ``forward``
(Note [nested torch modules] in blocks.py): ``nn.Sequential`` where the blocks run one after the other on one
input, ``nn.ModuleList`` and a loop where they read more, ``nn.Sequential(OrderedDict(...))`` where the source
names them.

Note [named block containers]: torchvision's ViT holds its encoder layers as named children of an ``nn.Sequential``
built from an ``OrderedDict`` (``encoder.layers.encoder_layer_0``, passes/blocks.py Note [outermost block]). A
numbered container would move their state_dict keys off the source's (``encoder.layers.0``), so such blocks are
held the way the source holds them: ``nn.Sequential(OrderedDict((f"encoder_layer_{i}", EncoderBlock()) for i in
range(12)))``, called in a loop as numbered ones are, or one by one by name (``self.encoder.layers.encoder_layer_0
(x, mask)``). ``named_container`` decides where that applies: the container holds those blocks and nothing else
with weights, and each name is one Python reads as written and no attribute of ``nn.Sequential``.

Example:
    >>> write_container(init, 2, "layers", made, sequential=True)
    >>> write_call(emitter, body, 2, "layers", 0, body0, made, 0, rename)
"""
from __future__ import annotations

import keyword
import re

__all__ = ["EACH", "chain", "child", "named_container", "plain_names", "write_container", "write_call"]

_DIGITS = re.compile(r"\d+$")


def child(key) -> str:
    """A block's name in its container: ``encoder.layers.encoder_layer_0`` -> ``encoder_layer_0``."""
    return key.rpartition(".")[2]


def named_container(keys, paths, classes, taken) -> str | None:
    """The container path of blocks ``keys`` that are named children of one source module (Note [named block
    containers]), where they can be held by name; None otherwise. ``paths``: the emitter's {flat attribute: source
    path}; ``classes``: {source path: class name}; ``taken``: attribute names a child must not shadow."""
    head = plain_names(keys, taken)
    if head is None:
        return None
    names = {child(key) for key in keys}
    under = [p[len(head) + 1:] for p in [*paths.values(), *(classes or {})] if p.startswith(head + ".")]
    return head if all(p.split(".", 1)[0] in names for p in under) else None


def plain_names(keys, taken, top=False) -> str | None:
    """The one module ``keys`` are named children of, where each name is one Python reads as written and shadows
    nothing in ``taken``; None otherwise. With ``top``, the model itself may be that module ("")."""
    heads = {key.rpartition(".")[0] for key in keys}
    names = {child(key) for key in keys}
    if len(heads) != 1 or ("" in heads and not top) or len(names) != len(keys):
        return None
    if any(not (n.isascii() and n.isidentifier()) or keyword.iskeyword(n) or n in taken or n[:1].isdigit()
           for n in names):
        return None
    return heads.pop()


# Note [blocks held one by one]: keras-hub's ViT holds its layers as named children of an encoder that also holds
# the final LayerNorm (``vit_encoder.transformer_block_1``, ``vit_encoder.ln``): no container of those blocks alone
# exists in the source to write (Note [named block containers]). Each block is then one attribute of its own,
# ``self.vit_encoder.transformer_block_1 = TransformerBlock()``, called by name where the flat code ran it: one class
# for every block, the source's state_dict keys, and no loop (a person holding them by name writes none either).
EACH = "each"  # write_container's and write_call's ``named`` for blocks held one by one


def chain(made):
    """The input position (first-use order) at which each block reads the one before's only output, when the
    container's blocks are called one after the other that way (their other inputs the same, their classes' arguments
    in one order): a loop, or one ``nn.Sequential`` call. ``made``: [(class, init, body)] per block."""
    bodies = [body for _, _, body in made]
    if len({tuple(cls[3]) for cls, _, _ in made}) != 1:
        return None
    pos = None
    for last, body in zip(bodies, bodies[1:]):
        if last.stop != body.start or len(last.outputs) != 1 or len(body.outputs) != 1 \
                or last.outputs[0] not in body.inputs or not last.read_at <= set(range(body.start, body.stop)):
            return None
        at = body.inputs.index(last.outputs[0])
        if (pos is not None and at != pos) or len(body.inputs) != len(bodies[0].inputs) or \
                any(a != b for i, (a, b) in enumerate(zip(body.inputs, bodies[0].inputs)) if i != at):
            return None
        pos = at
    return pos if len(bodies) > 1 and len(bodies[-1].outputs) == 1 else None


def write_container(w, indent, attr, made, sequential, named=False) -> None:
    """``self.layer1 = nn.Sequential(...)`` (blocks called one after the other on one input), ``nn.ModuleList``, or
    for named blocks ``nn.Sequential(OrderedDict(...))``: one line per block, or a comprehension when all are
    alike."""
    calls = [_call(*row) for row in made]
    first, last = made[0][2].key, made[-1][2].key
    w.indent = indent
    if named == EACH:
        w.line(f"self.{attr} = {calls[0]}", f"source block {first}")
        return
    if named:
        names = [child(body.key) for _, _, body in made]
        stem, start = _DIGITS.sub("", names[0]), _DIGITS.search(names[0])
        start = int(start.group()) if start else 0
        if len(set(calls)) == 1 < len(calls) and names == [f"{stem}{i}" for i in range(start, start + len(names))]:
            span = f"range({len(names)})" if not start else f"range({start}, {start + len(names)})"
            w.line(f'self.{attr} = nn.Sequential(OrderedDict((f"{stem}{{i}}", {calls[0]}) for i in {span}))')
            return
        w.line(f"self.{attr} = nn.Sequential(OrderedDict([")
        w.indent = indent + 1
        for name, call in zip(names, calls):
            w.line(f"({name!r}, {call}),")
        w.indent = indent
        w.line("]))")
        return
    if len(set(calls)) == 1 and len(calls) > 1:
        many = f"{calls[0]} for _ in range({len(calls)})"
        w.line(f"self.{attr} = nn.Sequential(*[{many}])" if sequential else
               f"self.{attr} = nn.ModuleList([{many}])", f"source blocks {first} to {last}")
        return
    w.line(f"self.{attr} = nn.Sequential(" if sequential else f"self.{attr} = nn.ModuleList([")
    w.indent = indent + 1
    for call, (_, _, body) in zip(calls, made):
        w.line(f"{call},", f"source block {body.key}")
    w.indent = indent
    w.line(")" if sequential else "])")


def _call(written, init, body) -> str:
    """A block's constructor call: the numbers of its class's columns (in __init__ or forward), and the flag of an
    optional part it has (Note [optional submodules] in optional.py)."""
    cls, columns, _, _, (flag, flagged) = written
    flags = flagged.get(id(init), []) if isinstance(flagged, dict) else [flag] * (id(init) in flagged)
    args = [(init.numbers + body.numbers)[c] for c in columns] + [f if "=" in f else f"{f}=True" for f in flags]
    return f"{cls}({', '.join(args)})"


def write_call(emitter, w, indent, attr, index, body, made, pos, rename, named=False) -> None:
    """The call of one block, or at the first block of a chained container, the call of them all; the arguments
    in the order its class's ``forward`` takes them (Note [forward's arguments] in block_args.py)."""
    w.indent = indent
    order = made[index][0][3]
    for inst in [body] if pos is None else [b for _, _, b in made]:
        emitter.hidden.update(v for v in inst.locals if v not in inst.outputs or pos is not None)
    if pos is None:
        args = ", ".join(rename.get(body.inputs[i], body.inputs[i]) for i in order)
        module = f"self.{attr}" if named == EACH else f"self.{attr}.{child(body.key)}" if named else \
            f"self.{attr}[{index}]"
        w.line(f"{', '.join(body.outputs)} = {module}({args})")
        return
    if index:
        return
    args = [rename.get(v, v) for v in body.inputs]
    rename[made[-1][2].outputs[0]] = out = emitter.ns.name(attr, "x")
    if len(args) == 1:
        w.line(f"{out} = self.{attr}({args[0]})")
        return
    w.line(f"{out} = {args[pos]}")
    args[pos] = out
    w.line(f"for block in self.{attr}:")
    w.indent = indent + 1
    w.line(f"{out} = block({', '.join(args[i] for i in order)})")
