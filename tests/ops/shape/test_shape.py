"""Shape and indexing ops (ops/shape/): torch -> IR -> NumPy reference and both emitted models, exactly."""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from portx.errors import UnsupportedOps
from portx.ir import Graph, IRError, Node, TensorType, Value, format_graph, parse_graph, validate
from portx.ops import shape
from portx.ops.shape import index as shape_index
from tests.support.harness import check_torch_op, lower_torch

EXACT = {"atol": 0.0, "rtol": 0.0}  # data movement: every element must match bit for bit
IDX = np.array([2, 0, 2], dtype=np.int64)
IDX_NEG = np.array([-1, 0], dtype=np.int64)
IDX_2D = np.array([[0, 3], [1, 1]], dtype=np.int64)
GATHER_IDX = np.array([[[0, 2], [1, 1], [3, 0]], [[2, 2], [0, 1], [1, 3]]], dtype=np.int64)  # for (2, 3, 4), dim 2
BOOLS = np.array([[True, False], [False, True]])
GATHER_SMALL = np.array([[[1], [0]]], dtype=np.int64)  # smaller than (2, 3, 4) on dims 0, 1


def _put_inner(x, v):
    y = x.clone()
    y[:, torch.tensor([3, 1])] = v  # adjacent indexed axis in place: v is laid out (2, 2, 3)
    return y


def _put_scalar(x):
    y = x.clone()
    y[torch.tensor([1]), torch.tensor([0, 2])] = 5.0
    return y


def _c(fn, inputs, op, **marks):
    """A case: torch function, inputs (shapes become seeded normal floats, arrays stay), IR op expected."""
    return pytest.param(fn, inputs, op, **marks)


CASES = [
    _c(lambda x: x.view(2, -1), [(2, 3, 4)], "reshape", id="view-minus-one"),
    _c(lambda x: x.reshape(-1), [(2, 3, 4)], "reshape", id="reshape-flat"),
    _c(lambda x: x.flatten(1), [(2, 3, 4)], "reshape", id="flatten-from-1"),
    _c(lambda x: x.unflatten(2, (2, 2)), [(2, 3, 4)], "reshape", id="unflatten"),
    _c(lambda x: x.squeeze(), [(1, 3, 1, 4)], "reshape", id="squeeze-all"),
    _c(lambda x: x.squeeze(-2), [(2, 3, 1, 4)], "reshape", id="squeeze-dim"),
    _c(lambda x: x.squeeze((0, 1)), [(1, 3, 4)], "reshape", id="squeeze-dims-one-not-1"),
    _c(lambda x: x.unsqueeze(-1), [(2, 3)], "reshape", id="unsqueeze-last"),
    _c(lambda x: x[:, None], [(2, 3)], "reshape", id="none-index"),
    _c(lambda x: x.permute(2, 0, 1), [(2, 3, 4)], "permute", id="permute"),
    _c(lambda x: x.transpose(-1, -2), [(2, 3, 4)], "permute", id="transpose-negative"),
    _c(lambda x: x.t(), [(3, 4)], "permute", id="t"),
    _c(lambda x: x.T, [(3, 4)], "permute", id="numpy-T"),
    _c(lambda x: x.mT, [(2, 3, 4)], "permute", id="mT"),
    _c(lambda x: x.movedim(1, 3), [(2, 3, 4, 5)], "permute", id="movedim"),
    _c(lambda x: x.expand(2, 3, 4), [(3, 1)], "expand", id="expand-new-leading"),
    _c(lambda x: x.expand(-1, 5), [(3, 1)], "expand", id="expand-minus-one"),
    _c(lambda x, y: x.expand_as(y) + 0 * y, [(3, 1), (2, 3, 4)], "expand", id="expand-as"),
    _c(lambda x, y, z: torch.cat([x, y, z], 1), [(2, 1, 3), (2, 2, 3), (2, 3, 3)], "concat", id="cat-three"),
    _c(lambda x, y: torch.cat([x, y], -1), [(2, 3), (2, 1)], "concat", id="cat-negative-dim"),
    _c(lambda x, i: torch.cat([x, i]), [(2, 3), np.arange(6).reshape(2, 3)], "concat", id="cat-promotes-int"),
    _c(lambda x: torch.cat([x, torch.ones(2, 1)], 1), [(2, 3)], "concat", id="cat-small-constant"),
    _c(lambda x: torch.cat([torch.arange(40.0).view(2, 20), x], 1), [(2, 3)], "concat", id="cat-big-constant"),
    _c(lambda x, y: torch.cat([x, y], 1), [BOOLS, BOOLS], "concat", id="cat-bool"),
    _c(lambda x: x.permute(1, 0).reshape(6), [np.arange(6).reshape(2, 3)], "reshape", id="int64-data"),
    _c(lambda x, y: torch.stack([x, y]), [(2, 3), (2, 3)], "stack", id="stack-0"),
    _c(lambda x, y: torch.stack([x, y], -1), [(2, 3), (2, 3)], "stack", id="stack-last"),
    _c(lambda x: torch.stack([x.sum(), torch.tensor(2.0)]), [(2, 3)], "stack", id="stack-zero-d-constant"),
    _c(lambda x: x.split(2, dim=1), [(2, 5, 3)], "split", id="split-ragged"),
    _c(lambda x: x.split([1, 3], dim=-1), [(2, 4)], "split", id="split-with-sizes"),
    _c(lambda x: x.chunk(3, dim=1), [(2, 4)], "split", id="chunk-uneven"),
    _c(lambda x: x.chunk(2)[1] * 1, [(4, 3)], "split", id="chunk-one-used"),
    _c(lambda x: x.unbind(1), [(2, 3, 4)], "split", id="unbind"),
    _c(lambda x: x.split(5, dim=1)[0] + 1, [(2, 3)], "add", id="split-one-piece-is-identity"),
    _c(lambda x: x[:, 1:3, ::2], [(2, 4, 5)], "slice", id="slice-step"),
    _c(lambda x: x[..., -3:-1], [(2, 4, 5)], "slice", id="slice-negative"),
    _c(lambda x: x[:, -10:100, 2:], [(2, 4, 5)], "slice", id="slice-clamped"),
    _c(lambda x: x[:, 3:1], [(2, 4)], "slice", id="slice-empty"),
    _c(lambda x: x.narrow(1, -2, 2), [(2, 4)], "slice", id="narrow-negative-start"),
    _c(lambda x: x.tensor_split(3, dim=1), [(2, 4)], "slice", id="tensor-split"),
    _c(lambda x: x[1], [(3, 4)], "select", id="select-0"),
    _c(lambda x: x[:, -1], [(3, 4, 2)], "select", id="select-negative"),
    _c(lambda x, i: x.index_select(1, i), [(2, 4, 3), IDX], "index_select", id="index-select"),
    _c(lambda x, i: x[:, i], [(2, 4, 3), IDX_2D], "index_select", id="index-tensor-2d"),
    _c(lambda x, i: x[i], [(3, 2), IDX_NEG], "index_select", id="index-tensor-negative"),
    _c(lambda x: x[:, [0, 2]], [(2, 4)], "index_select", id="index-constant-list"),
    _c(lambda x, i, j: x[i, j], [(3, 4, 2), IDX_NEG, IDX_2D], "index_select", id="index-two-tensors-broadcast"),
    _c(lambda x, i: x[:, i, i], [(2, 3, 3), IDX], "index_select", id="index-two-adjacent-inner"),
    _c(lambda x, i, j: x[:, i, :, j], [(2, 3, 4, 5), IDX_NEG, IDX_2D], "index_select", id="index-apart-moves-front"),
    _c(lambda x, v: x.index_put((torch.tensor([2, 0]),), v), [(3, 4), (2, 4)], "scatter", id="index-put-rows"),
    _c(lambda x, v: x.index_put((torch.tensor([0, -1, 0]), torch.tensor([1, 2, 1])), v, accumulate=True),
       [(3, 4), (3,)], "scatter", id="index-put-accumulate-duplicates"),
    _c(_put_inner, [(2, 4, 3), (2, 2, 3)], "scatter", id="index-put-inner-axis"),
    _c(_put_scalar, [(3, 4)], "scatter", id="index-put-scalar-broadcast"),
    _c(lambda x, i: torch.gather(x, 2, i), [(2, 3, 4), GATHER_IDX], "gather", id="gather"),
    _c(lambda x, i: torch.gather(x, -1, i), [(2, 3, 4), GATHER_SMALL], "gather", id="gather-smaller-index"),
    _c(lambda x: torch.gather(x, 0, torch.tensor([[1, 0, 1]])), [(2, 3)], "gather", id="gather-constant-index"),
    _c(lambda x: x.repeat(1, 2, 1), [(2, 3, 2)], "tile", id="repeat"),
    _c(lambda x: x.repeat(2, 1, 3), [(3, 2)], "tile", id="repeat-new-dims"),
    _c(lambda x: torch.tile(x, (2,)), [(2, 3)], "tile", id="tile-short"),
    _c(lambda x: x.flip(0, 2), [(2, 3, 4)], "flip", id="flip"),
    _c(lambda x: x.roll((1, -2), (1, 2)), [(2, 3, 4)], "roll", id="roll"),
    _c(lambda x: x.roll(3), [(2, 3)], "roll", id="roll-flattened"),
]


def _inputs(specs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else np.asarray(s) for s in specs]


@pytest.mark.parametrize("fn, specs, op", CASES)
def test_shape_op_matches_torch(target, fn, specs, op):
    check_torch_op(fn, *_inputs(specs), expect_ops=[op], target=target, **EXACT)


def test_identities_add_no_node(target):
    graph = check_torch_op(lambda x: x.squeeze(1).permute(0, 1).contiguous()[:, 0:3], *_inputs([(2, 3)]),
                           target=target, **EXACT)
    assert graph.nodes == ()


def test_boolean_mask_indexing_is_refused():
    with pytest.raises(UnsupportedOps, match="boolean-mask indexing has a data-dependent shape"):
        lower_torch(lambda x, m: x[m], *_inputs([(2, 2), BOOLS]))


def _split_graph():
    x = Value("x", TensorType((2, 5), "float32"))
    a, b = Value("a", TensorType((2, 2), "float32")), Value("b", TensorType((2, 3), "float32"))
    node = Node(shape.SPLIT, (x,), (a, b), {"sizes": (2, 3), "axis": 1})
    return Graph((x,), (a, b), (node,))


def test_split_outputs_follow_sizes():
    graph = validate(_split_graph())
    bad = graph.replace(nodes=(graph.nodes[0].replace(outputs=graph.outputs[:1]),), outputs=graph.outputs[:1])
    with pytest.raises(IRError, match="rule gives 2 outputs, node has 1"):
        validate(bad)
    a, b = shape.SPLIT.reference_rule(np.arange(10.0).reshape(2, 5), sizes=(2, 3), axis=1)
    assert a.shape == (2, 2) and b.shape == (2, 3)


def test_split_text_ir_round_trips():
    text = format_graph(_split_graph())
    assert format_graph(validate(parse_graph(text))) == text


def test_aten_names_exist_in_torch():
    for op in [shape.RESHAPE, shape.PERMUTE, shape.EXPAND, shape.CONCAT, shape.STACK, shape.SPLIT,
               shape_index.SLICE, shape_index.SELECT, shape_index.INDEX_SELECT, shape_index.GATHER,
               shape_index.TILE, shape_index.FLIP, shape_index.ROLL]:
        for name in op.import_names["torch"]:
            assert hasattr(torch.ops.aten, name.removeprefix("aten::")), name


@pytest.mark.parametrize("size, start, end, want", [
    (5, None, None, (0, 5)), (5, -3, -1, (2, 4)), (5, -10, 100, (0, 5)), (5, 4, 2, (4, 4)), (5, 7, 9, (5, 5)),
    (5, 2, 2**63 - 1, (2, 5)),
])
def test_torch_slice_bounds(size, start, end, want):
    assert shape_index.torch_slice_bounds(size, start, end) == want
    items = list(range(size))
    assert items[start:end] == items[want[0]:want[1]]  # Python slicing clamps the way torch does


@st.composite
def _permute_and_slice(draw):
    rank = draw(st.integers(1, 3))
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    perm = tuple(draw(st.permutations(range(rank))))
    axis = draw(st.integers(-rank, rank - 1))
    start, end = draw(st.integers(-5, 5)), draw(st.integers(-5, 5))
    return dims, perm, axis, start, end, draw(st.integers(1, 3))


@given(_permute_and_slice())
def test_permute_then_slice_property(target, case):
    dims, perm, axis, start, end, step = case

    def fn(x):
        y = x.permute(*perm)
        index = [slice(None)] * y.dim()
        index[axis] = slice(start, end, step)
        return y[tuple(index)] * 1  # keep one computed node even if the slice is whole

    check_torch_op(fn, *_inputs([dims]), target=target, **EXACT)
