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

Example:
    >>> groups = block_groups(emitter.body.rows, emitter.spans, graph.meta["blocks"], variables, reads)
    >>> [len(g.instances) for g in groups]
    [3, 2]
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

__all__ = ["Instance", "Group", "block_groups", "pieces", "render", "loops", "number_params", "ident"]

_LHS = re.compile(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) = ")
_SAFE_SUFFIX = re.compile(r"^[0-9A-Za-z_]*$")
_MAX_PARAMS = 8  # a block with more varying numbers than this is not written as one function


def ident(key: str) -> str:
    """The identifier form of a source path, as Namespace writes it: ``layer1.0`` -> ``layer1_0``."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", key).strip("_").lower()


def pieces(text: str, prefix: str, variables) -> list:
    """One statement as [(kind, value)]: ("t", text), ("v", variable), ("s", suffix after ``prefix``), ("n", number).

    Example: ``pieces("a = f(b, 3, name='p_a')", "p", {"a", "b"})`` ->
    ``[("v", "a"), ("t", " = f("), ("v", "b"), ("t", ", "), ("n", "3"), ("t", ", name="), ("s", "_a"), ("t", ")")]``.
    """
    out, col, prev = [], 0, None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER) or tok.start[0] != 1:
            continue
        start, end = tok.start[1], tok.end[1]
        kind = None
        if tok.type == tokenize.NAME and tok.string in variables and not (prev and prev.string == "."):
            kind = "v"
        elif tok.type == tokenize.NUMBER:
            kind = "n"
        elif tok.type == tokenize.STRING and tok.string[0] in "'\"":
            value = ast.literal_eval(tok.string)
            if isinstance(value, str) and (value == prefix or value.startswith(prefix + "_")) \
                    and _SAFE_SUFFIX.match(value[len(prefix):]):
                kind, tok_value = "s", value[len(prefix):]
        if kind is not None:
            out.append(("t", text[col:start]))
            out.append((kind, tok_value if kind == "s" else tok.string))
            col = end
        prev = tok
    out.append(("t", text[col:]))
    return [p for p in out if p != ("t", "")]


def render(parts, var=lambda v: v, number=lambda i, n: n, string=None) -> str:
    """A statement from its ``pieces``, with variables, numbers (by position) and names mapped."""
    text, count = [], 0
    for kind, value in parts:
        if kind == "v":
            text.append(var(value))
        elif kind == "n":
            text.append(number(count, value))
            count += 1
        elif kind == "s" and string is not None:
            text.append(string(value))
        else:
            text.append(value if kind != "s" else None)
    return "".join(text)


@dataclass
class Instance:
    """One block's statements: lines [start, stop) of the body, its locals, inputs, outputs and numbers."""

    key: str
    prefix: str
    start: int
    stop: int
    rows: list  # (pieces, comment) per statement
    locals: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    numbers: list = field(default_factory=list)
    read_at: set = field(default_factory=set)  # lines outside the block that read its outputs

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


def _instance(rows, block, spans, variables) -> Instance | None:
    start, stop = spans[block["start"]][0], spans[block["stop"] - 1][1]
    prefix, key = ident(block["key"]), block["key"]
    inst = Instance(key, prefix, start, stop, [])
    for indent, text, comment in rows[start:stop]:
        if indent != rows[start][0] or not text:
            return None
        try:
            parts = pieces(text, prefix, variables)
        except (tokenize.TokenError, SyntaxError, ValueError):
            return None
        made = _LHS.match(text)
        for kind, value in parts:
            if kind == "v" and value not in inst.locals and value not in inst.inputs:
                (inst.locals if made and value in made.group(1).split(", ") else inst.inputs).append(value)
            elif kind == "n":
                inst.numbers.append(value)
        inst.rows.append((parts, comment.replace(key + ".", "").replace(key, "")))
    return inst


def block_groups(rows, spans, blocks, variables, reads) -> list:
    """The Groups of blocks that can be written once (Note [structured code]).

    ``rows``: the body's (indent, statement, comment); ``spans``: node index -> (first line, end line);
    ``blocks``: graph.meta["blocks"]; ``variables``: every variable the body binds (and the inputs);
    ``reads``: per line the variables it reads, and a last row for those the model returns.
    """
    found = {}
    for block in blocks:
        if any(spans.get(i) is None for i in range(block["start"], block["stop"])):
            continue
        inst = _instance(rows, block, spans, variables)
        if inst is None or not inst.rows:
            continue
        later = {}
        for i, names in enumerate(reads):
            for v in names.intersection(inst.locals) if not inst.start <= i < inst.stop else ():
                later.setdefault(v, set()).add(i)
        inst.outputs = [v for v in inst.locals if v in later]
        inst.read_at = set().union(*later.values())
        if inst.outputs:
            found.setdefault((block["kind"], inst.template()), []).append(inst)
    groups = []
    for insts in found.values():
        params = number_params([inst.numbers for inst in insts]) if len(insts) > 1 else None
        if params is not None:
            groups.append(Group(insts, *params))
    return groups


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
    parent, _, index = inst.key.rpartition(".")
    lparent, _, lindex = last.key.rpartition(".")
    if parent != lparent or not (index.isdigit() and lindex.isdigit()) or int(index) != int(lindex) + 1:
        return None
    if inst.prefix != f"{ident(parent)}_{index}" or inst.numbers != first.numbers:
        return None
    if last.outputs[0] not in inst.inputs or not last.read_at <= set(range(inst.start, inst.stop)):
        return None
    pos = inst.inputs.index(last.outputs[0])
    same = all(a == b for i, (a, b) in enumerate(zip(inst.inputs, first.inputs)) if i != pos)
    return pos if same else None
