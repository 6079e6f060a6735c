"""Repeated blocks in the written code: the statements of each block of ``graph.meta["blocks"]`` as a template,
the blocks whose templates are equal grouped, and what a function or class per group takes as arguments.

Note [structured code]: passes/blocks.py finds the blocks that are the same in the IR (Note [repeated
blocks]); here the emitter's own statements for each such block are compared, token by token, after
replacing what may differ between blocks: variables made inside the block (its locals), variables made
before it (its inputs, in order of first use), numbers (the sizes), and names that begin with the block's
own name (``'layer1_0_conv1'`` is ``name + '_conv1'``). Blocks whose statements are then equal are written
once by the target (a Keras function, a torch ``nn.Module`` class) and called per block; the numbers that
differ between them become the function's arguments (one per distinct column; a column that is a whole
multiple of an earlier one is written as such, ``4 * filters``). A block whose statements match no other
block's stays flat, so structure never changes what the code computes. Consecutive calls in which each
block reads the previous one's output and the arguments agree become a loop (``loops``).

Note [structured only where shorter]: written once, blocks are shorter only when enough of them share a
definition; a small model whose four blocks need three classes (keras.applications' first block of a stage
differs from the others) read 140 lines structured against 116 flat. Each target therefore writes the
structured form only where it is not longer than the flat one (``lines_of``, over the whole model; ties go
to the structured form). The source's paths do not decide it: torch submodules sit at their source paths in
both forms (Note [nested paths] in torch_xla/nesting.py), so a torch source's ``state_dict()`` keys are the
same either way, and a Keras source's layer names are too.

Example:
    >>> groups = block_groups(emitter.body.rows, emitter.spans, graph.meta["blocks"], variables, reads)
    >>> [len(g.instances) for g in groups]
    [3, 2]
"""
from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field

from .auto_names import number_names

__all__ = ["Instance", "Group", "block_groups", "block_lines", "block_rooms", "room_of", "instance", "pieces", "render",
           "loops", "number_params", "ident", "family_name", "source_class", "find_outputs", "assigned_names",
           "lines_of"]

_LHS = re.compile(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) = ")
_SAFE_SUFFIX = re.compile(r"^[0-9A-Za-z_]*$")
_MAX_PARAMS = 8  # a block with more varying numbers than this is not written as one function
_MIN_LINES = 2  # a block of one statement stays flat: a function for it would not read better


def ident(key: str, cased: bool = False) -> str:
    """The identifier form of a source path, as Namespace writes it: ``layer1.0`` -> ``layer1_0``; ``cased``: in the
    path's letter case (``Layer1.0`` -> ``Layer1_0``, Note [block names in the source's case])."""
    found = re.sub(r"[^0-9A-Za-z_]+", "_", key).strip("_")
    return found if cased else found.lower()


# Note [block names in the source's case]: a block's template prefix is its key's identifier in lower case
# (``layer1_0``), as the variables are written, but layer names (Keras) and submodules (torch) keep the source's case
# (``'Layer1_0_conv'``, ``self.Layer1_0_conv``; Note [layer names in the source's case]): a source that spells its
# blocks with capitals (``self.Layer1 = nn.ModuleList(...)``, Keras ``Block_1_conv``) matched no prefix and stayed
# flat. ``pieces`` takes a name that begins with the key's own spelling (``cased``) as the block's too and records
# it (``spelled``); the code then writes each such name back in that spelling (``Instance.flat``, the name a Keras
# block function is called with) and the torch containers take the source's (``self.Layer1``), so the weight paths
# and state_dict keys stay the source's. A block whose Keras names mix the two spellings stays flat.


def block_rooms(blocks) -> dict:
    """{a block's name prefix: characters its names may run past the usual length}: the prefix's own, so that a
    name is cut (if at all) after it, where the block's function or class writes it (Note [names in longer blocks]
    in keras_jax/style.py). ``blocks``: graph.meta["blocks"]. Example: ``transformer_layer_10_`` -> 21."""
    return {f"{ident(b['key'])}_": len(ident(b["key"])) + 1 for b in blocks or []}


def room_of(rooms, raw: str) -> int:
    """The room (``block_rooms``) of the block whose prefix the name ``raw`` starts with; 0 outside blocks."""
    name = ident(str(raw)) + "_"
    return max((extra for prefix, extra in rooms.items() if name.startswith(prefix)), default=0)


def pieces(text: str, prefix: str, variables, suffix: str = "", auto=None, cased: str = "", spelled=None) -> list:
    """One statement as [(kind, value)]: ("t", text), ("v", variable), ("s", suffix of a name after ``prefix``),
    ("a", suffix of a ``self.<prefix>_...`` attribute), ("n", number), ("k", (stem, number)) for a name in ``auto``
    (Note [numbered names in block functions] in auto_names.py). A block named by a ``suffix`` id (Note [blocks
    named by a suffix] in passes/blocks_suffix.py): ("e", (head, tail)) for a name ``{head}_{suffix}{tail}``,
    ("a", (head, tail)) for an attribute ``self.{head}_{suffix}{tail}``. A name or attribute that begins with
    ``cased`` (the prefix in the source's case) is the block's too, its (kind, value) added to ``spelled`` (Note
    [block names in the source's case]).

    Example: ``pieces("a = f(b, 3, name='p_a')", "p", {"a", "b"})`` ->
    ``[("v", "a"), ("t", " = f("), ("v", "b"), ("t", ", "), ("n", "3"), ("t", ", name="), ("s", "_a"), ("t", ")")]``.
    """
    toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER) and t.start[0] == 1]
    out, col, depth = [], 0, 0
    ends = re.compile(rf"^(?P<head>\w+)_{re.escape(suffix)}(?P<tail>(?:_[A-Za-z]+)?)$") if suffix else None
    heads = (prefix, cased) if cased and cased != prefix else (prefix,)
    starts = tuple(h + "_" for h in heads)
    for i, tok in enumerate(toks):
        depth += (tok.string in "([{") - (tok.string in ")]}") if tok.type == tokenize.OP else 0
        before = [t.string for t in toks[max(i - 2, 0):i]]
        kind = value = None
        if tok.type == tokenize.NAME and before == ["self", "."] and tok.string.startswith(starts):
            kind, value = "a", tok.string[len(prefix) + 1:]
        elif tok.type == tokenize.NAME and before == ["self", "."] and ends and ends.match(tok.string):
            kind, value = "a", ends.match(tok.string).group("head", "tail")
        elif tok.type == tokenize.NAME and before == ["self", "."] and f"self.{tok.string}" in variables:
            out += [("t", text[col:toks[i - 2].start[1]]), ("v", f"self.{tok.string}")]  # the model's own attribute
            col = tok.end[1]
            continue
        elif tok.type == tokenize.NAME and tok.string in variables and before[-1:] != ["."] \
                and not (depth and i + 1 < len(toks) and toks[i + 1].string == "="):  # a keyword argument
            kind, value = "v", tok.string
        elif tok.type == tokenize.NUMBER:
            kind, value = "n", tok.string
        elif tok.type == tokenize.STRING and tok.string[0] in "'\"":
            name = ast.literal_eval(tok.string)
            if auto and isinstance(name, str) and name in auto:
                kind, value = "k", auto[name]
            elif isinstance(name, str) and (name in heads or name.startswith(starts)) \
                    and _SAFE_SUFFIX.match(name[len(prefix):]):
                kind, value = "s", name[len(prefix):]
            elif isinstance(name, str) and ends and ends.match(name):
                kind, value = "e", ends.match(name).group("head", "tail")
        if kind is not None:
            if spelled is not None and len(heads) > 1 and kind in "as" and isinstance(value, str) \
                    and (name if kind == "s" else tok.string).startswith(cased):
                spelled.add((kind, value))
            out += [("t", text[col:tok.start[1]]), (kind, value)]
            col = tok.end[1]
    out.append(("t", text[col:]))
    return [p for p in out if p != ("t", "")]


def render(parts, var=lambda v: v, number=lambda i, n: n, string=None, attr=None, auto=None) -> str:
    """A statement from its ``pieces``, its variables, numbers (by position), names and attributes mapped."""
    text, count = [], 0
    for kind, value in parts:
        if kind == "v":
            text.append(var(value))
        elif kind == "n":
            text.append(number(count, value))
            count += 1
        elif kind in "se":
            text.append(string(value))
        elif kind == "a":
            text.append(attr(value))
        elif kind == "k":
            text.append(auto(*value))
        else:
            text.append(value)
    return "".join(text)


@dataclass
class Instance:
    """One block's statements: lines [start, stop) of the body, its locals, inputs, outputs and numbers."""

    key: str
    prefix: str
    parent: str  # the source container, its number in it, its names' text before the number (passes/blocks.py)
    index: int
    stem: str
    start: int
    stop: int
    rows: list  # (pieces, comment) per statement
    locals: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    numbers: list = field(default_factory=list)
    read_at: set = field(default_factory=set)  # lines outside the block that read its outputs
    stems: list = field(default_factory=list)  # stems of its numbered names, after its numbers (auto_names.py)
    hoisted: list = field(default_factory=list)  # lines it only happened to write first (``instance``)
    suffix: str = ""  # the id its names end with (Note [blocks named by a suffix] in passes/blocks_suffix.py)
    cased: str = ""  # its prefix in the source's case (Note [block names in the source's case]), and the pieces
    spelled: set = field(default_factory=set)  # written in that case
    family: str = ""  # its kind's name where its source class names none (Note [names of generic blocks])
    numbered: dict = field(default_factory=dict)  # {stem: name} (Note [submodules named after their block])

    def flat(self, kind, value) -> str:
        """The flat name of an ("a", value) or ("s", value) piece, in its spelling: ``Layer1_0_conv``."""
        head = self.cased if (kind, value) in self.spelled else self.prefix
        return f"{head}_{value}" if kind == "a" else f"{head}{value}"

    def call_name(self) -> str:
        """The name a block function is called with: its prefix as its layer names spell it (``Block_1``)."""
        return self.cased if any(kind == "s" for kind, _ in self.spelled) else self.prefix

    def template(self) -> tuple:
        """What must be equal for two blocks to be written once (Note [structured code])."""
        where = {v: ("L", i) for i, v in enumerate(self.locals)} | {v: ("I", i) for i, v in enumerate(self.inputs)}
        rows = tuple((tuple(where[v] if k == "v" else ("N", "." in v or "e" in v) if k == "n" else (k, v)
                            for k, v in parts), comment) for parts, comment in self.rows)
        return rows, tuple(self.locals.index(v) for v in self.outputs), len(self.inputs)


@dataclass
class Group:
    """Blocks written by one function or class: ``instances`` in body order, ``params`` per number column."""

    instances: list
    params: dict  # number column -> (parameter index, multiple) ; absent: the same number in every block
    columns: list  # parameter index -> the column it was first found in


def block_lines(spans, block, writer=0) -> tuple:
    """(first line, end line) of ``block`` in one of the emitter's writers (``spans``: node -> (marks before,
    marks after), Note [structured code])."""
    return spans[block["start"]][0][writer], spans[block["stop"] - 1][1][writer]


def instance(rows, start, stop, block, variables, inputs=frozenset(), reads=None, auto=None) -> Instance | None:
    """``block``'s statements ``rows[start:stop]`` as an Instance; None where they cannot be templated.

    A statement that reads nothing but the model's ``inputs`` and names nothing of the block's (a constant the
    block was the first to need, which later blocks read too) is left where it is (``hoisted``), not templated.
    Given ``reads`` (per line the variables it reads), only where a line outside the block reads what it makes:
    the first block of a chain reads the model's input where the others read the block before's output, so its
    own first statements (``torch.relu(x)``) stay in it, or it would differ from the rest.
    """
    key, read_at = block["key"], reads
    prefix = ident(key)
    suffix = block.get("suffix", "")
    inst = Instance(key, prefix, block["parent"], block["index"], block["stem"], start, stop, [], suffix=suffix,
                    cased=ident(key, cased=True), family=block.get("family", ""))
    own = re.compile(rf"_{re.escape(suffix)}\b") if suffix else None
    for line, (indent, text, comment) in enumerate(rows[start:stop], start):
        if indent != rows[start][0] or not text:
            return None
        try:
            parts = pieces(text, prefix, variables, suffix, auto, inst.cased, inst.spelled)
        except (tokenize.TokenError, SyntaxError, ValueError):
            return None
        made = _LHS.match(text)
        reads = [v for kind, v in parts[1:] if kind == "v"]
        if made and parts[0][0] == "v" and all(kind in "tnv" for kind, _ in parts) and set(reads) <= inputs \
                and _read_elsewhere(made.group(1).split(", "), read_at, start, stop):
            inst.hoisted.append(line)
            continue
        for kind, value in parts:
            if kind == "v" and value not in inst.locals and value not in inst.inputs:
                (inst.locals if made and value in made.group(1).split(", ") else inst.inputs).append(value)
            elif kind == "n":
                inst.numbers.append(value)
        inst.rows.append((parts, own.sub("", comment) if own else comment.replace(key + ".", "").replace(key, "")))
    if auto:
        number_names(inst)
    strings = {value for kind, value in (p for parts, _ in inst.rows for p in parts) if kind == "s"}
    if {("s", v) for v in strings} & inst.spelled not in (set(), {("s", v) for v in strings}):
        return None  # Keras names in both spellings: one name argument cannot write them
    return inst


def _read_elsewhere(names, reads, start, stop) -> bool:
    """True when a line outside [start, stop) reads one of ``names``, or ``reads`` is None (not known)."""
    return reads is None or any(not start <= i < stop and not read.isdisjoint(names) for i, read in enumerate(reads))


def block_groups(rows, spans, blocks, variables, reads, inputs=frozenset(), auto=None, singles=None) -> list:
    """The Groups of blocks that can be written once (Note [structured code]).

    ``rows``: the body's (indent, statement, comment); ``spans``: node index -> (first line, end line);
    ``blocks``: graph.meta["blocks"]; ``variables``: every variable the body binds (and the inputs);
    ``reads``: per line the variables it reads, and a last row for those the model returns; ``inputs``: the
    model's inputs (``instance``); ``auto``: the numbered names (``pieces``); ``singles``: a list given the blocks
    whose statements match no other's, a Group each (Note [optional parts] in optional_parts.py).
    """
    found = {}
    for block in blocks:
        if any(spans.get(i) is None for i in range(block["start"], block["stop"])):
            continue
        inst = instance(rows, *block_lines(spans, block), block, variables, inputs, reads, auto)
        if inst is None or not inst.rows:
            continue
        find_outputs(inst, reads)
        if inst.outputs and len(inst.rows) >= _MIN_LINES:
            found.setdefault((block["kind"], inst.template()), []).append(inst)
    groups = []
    for insts in found.values():
        params = number_params([inst.numbers for inst in insts]) if len(insts) > 1 else None
        if params is not None:
            groups.append(Group(insts, *params))
        elif len(insts) == 1 and singles is not None:
            singles.append(Group(insts, {}, []))
    return groups


def find_outputs(inst, reads) -> None:
    """Set ``inst.outputs`` (its locals read outside its lines; ``reads``: per line the variables it reads, and a
    last row for the returned ones) and ``inst.read_at`` (the lines that read them)."""
    later = {}
    for i, names in enumerate(reads):
        for v in names.intersection(inst.locals) if not inst.start <= i < inst.stop else ():
            later.setdefault(v, set()).add(i)
    inst.outputs = [v for v in inst.locals if v in later]
    inst.read_at = set().union(*later.values())


def number_params(numbers) -> tuple | None:
    """({column: (parameter, multiple)}, [first column per parameter]) over the blocks' ``numbers``, or None
    past ``_MAX_PARAMS`` parameters. Example: ``number_params([["4", "16"], ["8", "32"]])`` -> ``({0: (0, 1),
    1: (0, 4)}, [0])``."""
    params, columns = {}, []
    for col, values in enumerate(zip(*numbers)):
        if len(set(values)) == 1:
            continue
        for p, first in enumerate(columns):
            base = [n[first] for n in numbers]
            multiple = _multiple(base, values)
            if multiple:
                params[col] = (p, multiple)
                break
        else:
            params[col] = (len(columns), 1)
            columns.append(col)
    return (params, columns) if len(columns) <= _MAX_PARAMS else None


def _multiple(base, values) -> int:
    """The whole number ``m`` with values == m * base in every block (ints only), else 0."""
    if list(values) == list(base):  # equal columns: one parameter, a zero in them too (``n`` from 0)
        return 1
    if not all(v.isdigit() and b.isdigit() and int(b) for v, b in zip(values, base)):
        return 0
    ratios = {int(v) // int(b) if int(v) % int(b) == 0 else 0 for v, b in zip(values, base)}
    return ratios.pop() if len(ratios) == 1 and 0 not in ratios else 0


def loops(group) -> list:
    """The group's instances cut into runs a loop writes: consecutive blocks ``parent.i``, ``parent.i+1``, ...,
    each reading the previous one's only output at one input, the other inputs and the numbers the same.

    Returns [(instances, chained input position or None)]; a run of one is a plain call.
    """
    runs = []
    for inst in group.instances:
        last = runs[-1][0][-1] if runs else None
        pos = _chain(last, inst, runs[-1][0][0] if runs else None)
        if pos is not None and (runs[-1][1] is None or runs[-1][1] == pos):
            runs[-1][0].append(inst)
            runs[-1] = (runs[-1][0], pos)
        else:
            runs.append(([inst], None))
    return runs


def _chain(last, inst, first):
    """The input position at which ``inst`` reads ``last``'s output, when the two may share a loop."""
    if last is None or last.stop != inst.start or len(inst.outputs) != 1 or len(last.outputs) != 1:
        return None
    if inst.parent != last.parent or inst.index != last.index + 1:
        return None
    if inst.prefix != f"{inst.stem}{inst.index}" or inst.numbers != first.numbers:
        return None
    if inst.call_name()[:len(inst.stem)] != first.call_name()[:len(first.stem)]:  # one spelling: the loop's name
        return None
    if last.outputs[0] not in inst.inputs or not last.read_at <= set(range(inst.start, inst.stop)):
        return None
    pos = inst.inputs.index(last.outputs[0])
    same = all(a == b for i, (a, b) in enumerate(zip(inst.inputs, first.inputs)) if i != pos)
    return pos if same else None


def family_name(group) -> str:
    """``layer`` for ``model.layers``, ``block`` for several containers and Xception's ``block2`` ... (not
    ``block_block``), ``layer1_block`` for ``layer1.0``; Note [names of generic blocks] in passes/blocks_siblings.py."""
    families = {inst.family for inst in group.instances}
    if len(families) == 1 and "" not in families:
        return families.pop()
    parents = {inst.parent for inst in group.instances}
    if len(parents) != 1:
        return "block"
    last = ident(parents.pop().rpartition(".")[2]) or "block"
    if last.endswith("s") and len(last) > 2:
        return last[:-1]
    return last if last.endswith(("block", "layer")) else f"{last}_block"


def source_class(keys, classes) -> str:
    """The class every block of ``keys`` has in the source (``classes``: graph.meta["module_classes"], {source
    path: class name}), or "". Example: ``source_class(["layer1.1", "layer2.1"], classes)`` -> ``"Bottleneck"``."""
    classes = classes or {}
    # a Keras block named by its layers' prefix (``blocks_0_ln1``) can name its last layer ``blocks_0``
    # (``layers.Add(name=name)``): that layer's class is not the block's
    found = {"" if any(k.startswith(key + "_") for k in classes) else classes.get(key, "") for key in keys}
    name = found.pop() if len(found) == 1 else ""
    return name if name.isascii() and name.isidentifier() and not keyword.iskeyword(name) else ""


def assigned_names(emitter) -> set:
    """The variables the emitted body binds: the emitter's value names and every name left of an ``=``."""
    found = set(emitter.names.values())
    for _, text, _ in emitter.body.rows:
        if " = " in text:
            found.update(t.strip() for t in text.split(" = ", 1)[0].split(","))
    return {v for v in found if v.isidentifier()}


def lines_of(definitions, *rows) -> int:
    """The lines a model's code takes: each definition's text (a function, a class) with the two blank lines
    before it, and each writer's ``rows`` (Note [structured only where shorter])."""
    return sum(len(text.splitlines()) + 2 for text in definitions) + sum(len(r) for r in rows)
