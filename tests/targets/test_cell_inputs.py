"""A block's inputs named for what they are (src/portx/targets/cell_inputs.py): the state ``x`` is the input made last
before each block, ``p`` the one its block before took as ``x`` (Note [a cell's two inputs]), and a chain of such
calls is written ``x, p = f(x, p)`` only where nothing else reads what it rebinds (Note [cells passed as x, p])."""
from portx.targets.cell_inputs import cell_chains, input_roles
from portx.targets.structure import Group, Instance

__all__ = []

#: three NASNet-like cells after a stem: each reads the two outputs before it, the older first
ROWS = [(1, text, "") for text in ("a = f(inp)", "b = f(a)", "c0 = g(a)", "c = h(c0, b)", "d0 = g(b)", "d = h(d0, c)",
                                   "e0 = g(c)", "e = h(e0, d)", "y = f(e)")]


def _cells(read_late=()):
    cells = []
    for n, (start, inputs, out) in enumerate([(2, ["a", "b"], "c"), (4, ["b", "c"], "d"), (6, ["c", "d"], "e")]):
        inst = Instance(str(n), str(n), "", n, "", start, start + 2, [], locals=[inputs[0] + "0", out],
                        inputs=inputs, outputs=[out])
        inst.read_at = {start + 3, start + 4} if n < 2 else {8}
        cells.append(inst)
    cells[0].read_at |= set(read_late)
    return cells


def test_the_state_is_the_input_made_last_and_p_the_one_the_block_before_took_as_x():
    cells = _cells()
    assert input_roles([cells], ROWS, {"inp"}) == [(1, 0)]
    assert input_roles([cells[:1]], ROWS, {"inp"}) == [(1, None)]  # no block before: nothing says it is p


def test_a_chain_of_cells_is_written_x_p_only_where_nothing_else_reads_its_outputs():
    cells = _cells()
    group = Group(cells, {}, [])
    assert [[c.key for c in chain] for chain in cell_chains([group], input_roles([cells], ROWS, {"inp"}))] == \
        [["0", "1", "2"]]
    late = _cells(read_late=[8])  # the first cell's output is read after the chain, where x and p are others
    assert cell_chains([Group(late, {}, [])], input_roles([late], ROWS, {"inp"})) == []
