"""What a block function's or class's inputs are, named so: the state that flows from block to block is ``x``, and
the one its block before read as ``x`` (a NASNet cell's second input) is ``p``.

Note [a cell's two inputs]: NASNet's cells each read the two cells before them, as keras.applications writes
``_normal_a_cell(ip, p, filters, block_id)``, returning ``x, ip``. Taken in the order the block first reads them,
the older (``p``, which the cell adjusts first) came first and was named ``x``, the other after the variable of the
first call (``reduction_concat_stem_2``), which every other call passes something else for. The state is instead
the one input the blocks of a kind differ in (Note [forward's arguments] in torch_xla/block_args.py), and where
they differ in two, the input made last before the block (the same place in every block of the kind, a model input
or an attribute never); where every block's other input is what the block before it took as its state (and at least one
block has one before it), that input is ``p``. Every other input keeps its variable's name. Names only: what a
block computes and the order of the layers are unchanged. The cells are called one by one, each call naming its
output (``normal_concat_1 = self.normal[1](normal_concat_0, reduction_concat_stem_2)``), as timm's and Cadene's
NASNet ``forward`` write them (``x_cell_1 = self.cell_1(x_cell_0, x_stem_1)``): a loop carrying two states over a
stage's three or four cells of one kind (``x, p = cell(x, p), x``) would be no shorter, and the kinds alternate.

Example:
    >>> roles = input_roles([[cell0, cell1], [reduce4]], rows, {"input_layer"})
    >>> roles[0]   # (x's place, p's place) among the inputs of cell0, cell1
    (1, 0)
"""
from __future__ import annotations

import re

__all__ = ["cell_chains", "input_roles"]

_LHS = re.compile(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) = ")


def input_roles(groups, rows, model_inputs=frozenset()) -> list:
    """(x's place, p's place or None) per group of Instances (Note [a cell's two inputs]); (None, None) where the
    blocks of a group do not agree. ``rows``: the body the instances index; ``model_inputs``: its input variables."""
    made = {}
    for line, (_, text, _) in enumerate(rows):
        found = _LHS.match(text or "")
        for name in found.group(1).split(", ") if found else ():
            made.setdefault(name, []).append(line)
    state = {id(inst): _hidden(inst, made, model_inputs) for insts in groups for inst in insts}
    ordered = sorted((inst for insts in groups for inst in insts), key=lambda inst: inst.start)
    before = {id(b): a for a, b in zip(ordered, ordered[1:])}
    found = []
    for insts in groups:
        places = {state[id(inst)] for inst in insts}
        varying = [i for i in range(len(insts[0].inputs)) if len({inst.inputs[i] for inst in insts}) > 1]
        x = varying[0] if len(varying) == 1 else places.pop() if len(places) == 1 else None
        found.append((x, None if x is None else _previous(insts, x, before, state)))
    return found


def _hidden(inst, made, model_inputs):
    """The place of ``inst``'s input bound last before it, or None."""
    lines = {i: max((line for line in made.get(v, ()) if line < inst.start), default=-1)
             for i, v in enumerate(inst.inputs) if v not in model_inputs and not v.startswith("self.")}
    return max(lines, key=lambda i: (lines[i], -i)) if lines and max(lines.values()) >= 0 else None


def _previous(insts, x, before, state):
    """The place, other than ``x``, where every block reads what the block before it read as its state."""
    for place in range(len(insts[0].inputs)):
        checked = [(inst.inputs[place], prev.inputs[state[id(prev)]]) for inst in insts
                   for prev in [before.get(id(inst))] if prev is not None and state[id(prev)] is not None]
        if place != x and checked and all(a == b for a, b in checked):
            return place
    return None


# Note [cells passed as x, p]: keras.applications writes NASNet's cells ``x, p = _normal_a_cell(x, p, filters,
# block_id)``, each returning its output and its state input; written per block, the calls read
# ``normal_concat_3 = normal_block_1(normal_concat_2, normal_concat_1, 44, name='3')``, a variable per cell. Blocks
# whose calls form a chain, each taking the one before's output as ``x`` and that one's ``x`` as ``p``, are written
# the same way: the function returns ``out, x`` and ``x, p = normal_block_1(x, p, 44, name='3')``, starting from
# ``x, p = <first x>, <first p>``. Only where nothing else reads a chained output (the next two calls do; after the
# chain, its last two outputs are read as ``x`` and ``p``, before any later chain), and only for functions all of
# whose calls are chained.


def cell_chains(groups, roles) -> list:
    """The chains of blocks whose calls can be written ``x, p = f(x, p, ...)`` (Note [cells passed as x, p]): lists
    of Instances in body order, two or more each; ``roles``: ``input_roles`` of ``groups`` (Groups)."""
    place = {id(inst): role for group, role in zip(groups, roles) if role[1] is not None
             for inst in group.instances}
    while True:
        insts = sorted((inst for group in groups for inst in group.instances if id(inst) in place),
                       key=lambda inst: inst.start)
        chains = []
        for inst in insts:
            last = chains[-1][-1] if chains else None
            if last is not None and len(inst.outputs) == 1 and len(last.outputs) == 1 and \
                    inst.inputs[place[id(inst)][0]] == last.outputs[0] and \
                    inst.inputs[place[id(inst)][1]] == last.inputs[place[id(last)][0]]:
                chains[-1].append(inst)
            else:
                chains.append([inst])
        chains = [chain for chain in chains if len(chain) > 1 and _read_in_chain(chain, chains)]
        chained = {id(inst) for chain in chains for inst in chain}
        dropped = {id(inst) for group in groups if not all(id(i) in chained for i in group.instances)
                   for inst in group.instances if id(inst) in place}
        if not dropped:
            return chains
        place = {k: v for k, v in place.items() if k not in dropped}


def _read_in_chain(chain, chains) -> bool:
    """True when each output of ``chain`` is read only where its name is still ``x`` or ``p``."""
    later = [c[0].start for c in chains if c[0].start > chain[-1].start]
    end = min(later, default=float("inf"))
    for k, inst in enumerate(chain):
        after = chain[k + 1:k + 3]
        lines = {line for other in after for line in range(other.start, other.stop)}
        free = k >= len(chain) - 2  # the last two are read after the chain as x and p
        if not all(line in lines or free and chain[-1].stop <= line < end for line in inst.read_at):
            return False
    return True
