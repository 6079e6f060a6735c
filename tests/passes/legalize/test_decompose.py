"""Decompositions both targets share (passes/legalize/decompose.py): before/after, the reference unchanged, and
the emitters refusing a form the pipeline should have decomposed."""
import numpy as np
import pytest

import portx.ops  # noqa: F401
from portx.ir import format_graph, parse_graph, validate
from portx.ops._util import forward
from portx.passes.legalize import decompose
from portx.passes.legalize.decompose import DECOMPOSITIONS
from portx.verification.compare import run_reference

REVERSED = """
graph model(%x: float32[2x6]) {
  %y: float32[2x6] = OP(%x) {axis=1, reverse=True}  # scan
  return %y
}
"""


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_a_reversed_scan_becomes_flip_scan_flip_with_the_same_values(op):
    graph = validate(parse_graph(REVERSED.replace("OP", op)))
    after = validate(decompose(graph))
    assert [n.op.name for n in after.nodes] == ["flip", op, "flip"], format_graph(after)
    assert not after.nodes[1].attrs["reverse"] and after.outputs[0].name == "y"
    x = np.random.default_rng(0).normal(size=(2, 6)).astype(np.float32)
    expected = run_reference(graph, [x])[graph.outputs[0]]
    np.testing.assert_allclose(run_reference(after, [x])[after.outputs[0]], expected, rtol=1e-6)


def test_a_forward_scan_is_left_alone():
    graph = validate(parse_graph(REVERSED.replace("OP", "cumsum").replace("reverse=True", "reverse=False")))
    assert decompose(graph) is graph


def test_every_decomposition_has_a_before_after_docstring():
    for rules in DECOMPOSITIONS.values():
        for rule in rules:
            assert "Before / after" in rule.__doc__ and "->" in rule.__doc__, rule.__name__


def test_an_emitter_refuses_a_reversed_scan():
    node = validate(parse_graph(REVERSED.replace("OP", "cummax"))).nodes[0]
    with pytest.raises(ValueError, match="decompose pass"):
        forward(node)


GRID = """
graph model(%x: float32[{x}], %grid: float32[{grid}]) {{
  %y: float32[{y}] = grid_sample(%x, %grid) {{mode="{mode}", padding="{padding}", align_corners={align}}}  # warp
  return %y
}}
"""


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("shapes", [("1x2x1x4", "1x3x3x2", "1x2x3x3"), ("2x3x5x6", "2x4x7x2", "2x3x4x7"),
                                    ("2x3x4x5x6", "2x3x4x2x3", "2x3x3x4x2")], ids=["one-pixel", "2d", "3d"])
def test_grid_sample_becomes_gathers_with_the_same_values(mode, padding, align, shapes):
    x_shape, grid_shape, y_shape = shapes
    text = GRID.format(x=x_shape, grid=grid_shape, y=y_shape, mode=mode, padding=padding, align=align)
    graph = validate(parse_graph(text))
    after = validate(decompose(graph))
    assert "grid_sample" not in {n.op.name for n in after.nodes} and "gather" in {n.op.name for n in after.nodes}
    assert after.outputs[0].name == "y" and {n.scope for n in after.nodes} == {"warp"}
    rng = np.random.default_rng(0)
    sizes = [tuple(int(d) for d in s.split("x")) for s in (x_shape, grid_shape)]
    x, grid = rng.normal(size=sizes[0]).astype(np.float32), (rng.random(sizes[1]) * 3.0 - 1.5).astype(np.float32)
    expected = run_reference(graph, [x, grid])[graph.outputs[0]]
    np.testing.assert_allclose(run_reference(after, [x, grid])[after.outputs[0]], expected, rtol=1e-5, atol=1e-5)


def test_ops_with_the_decomposed_trait_are_the_ones_always_decomposed():
    from portx.ir import REGISTRY

    decomposed = {name for name, op in REGISTRY.items() if op.has("decomposed")}
    assert decomposed == {"grid_sample", "lu", "lu_unpack", "cholesky_info"} and decomposed <= set(DECOMPOSITIONS)


@pytest.mark.parametrize("shape", [(2, 4, 4), (5, 3), (2, 3, 5)], ids=["square", "tall", "wide"])
@pytest.mark.parametrize("op", ["lu", "lu_unpack"])
def test_lu_becomes_row_swaps_with_the_same_values(op, shape):
    from portx.ir import GraphBuilder, TensorType

    b = GraphBuilder()
    a = b.input("a", TensorType(shape, "float32"))
    outs = b.emit("lu", [a], scope="f") if op == "lu" else b.emit("lu_unpack", b.emit("lu_factor", [a]), scope="f")
    graph = validate(b.finish(outs))
    after = validate(decompose(graph))
    assert op not in {n.op.name for n in after.nodes} and [v.name for v in after.outputs] == [v.name for v in outs]
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    expected, got = run_reference(graph, [x]), run_reference(after, [x])
    for want, have in zip(graph.outputs, after.outputs):
        np.testing.assert_allclose(got[have], expected[want], rtol=1e-6, atol=1e-6)


def test_an_emitter_fed_an_undecomposed_grid_sample_says_to_run_the_pipeline(tmp_path):
    from portx.errors import UnsupportedOps
    from portx.targets import TARGETS

    text = GRID.format(x="1x2x3x3", grid="1x2x2x2", y="1x2x2x2", mode="bilinear", padding="zeros", align=False)
    graph = validate(parse_graph(text))
    for target in TARGETS.values():
        with pytest.raises(UnsupportedOps, match=r"grid_sample at warp \[no .* emitter: grid_sample is written as "
                                                 r"other IR ops by the legalize pass"):
            target.emitter(graph).emit_graph()


CHOLESKY_INFO = """
graph model(%a: float32[4x3x3]) {
  %info: int32[4] = cholesky_info(%a) {upper=UPPER}  # factor
  return %info
}
"""


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_info_becomes_leading_minors_and_stays_an_error_status(upper):
    from portx.verification.domain import status_outputs

    graph = validate(parse_graph(CHOLESKY_INFO.replace("UPPER", str(upper))))
    after = validate(decompose(graph))
    assert "cholesky_info" not in {n.op.name for n in after.nodes} and after.outputs[0].name == "info"
    assert [n.op.name for n in after.nodes].count("det") == 3
    # Note [status outputs]: verification still reads info as cholesky's error status after the rewrite
    assert status_outputs(graph) == status_outputs(after) == [0] and after.meta["status_values"] == ["info"]
    # info: 0 (SPD, whatever the unread triangle holds), else the order of the first leading minor that is not
    # positive definite: 2, 1, and 3 from an entry of the triangle read
    a = np.stack([np.diag(d) + 0.1 for d in ([2.0, 3.0, 1.0], [2.0, -1.0, 1.0], [-1.0, 3.0, 1.0], [2.0, 3.0, 1.0])])
    a[0][(2, 0) if upper else (0, 2)] = 50.0
    a[3][(0, 2) if upper else (2, 0)] = 5.0
    a = a.astype(np.float32)
    expected = run_reference(graph, [a])[graph.outputs[0]]
    assert list(expected) == [0, 2, 1, 3]
    np.testing.assert_array_equal(run_reference(after, [a])[after.outputs[0]], expected)


SCATTER = """
graph model(%x: float32[4x5x2], %idx: int32[3x2], %u: float32[3x2]) {
  %y: float32[4x5x2] = scatter_reduce(%x, %idx, %u) {reduce="REDUCE"}  # put
  return %y
}
"""


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
@pytest.mark.parametrize("stored", [False, True], ids=["computed", "stored"])
def test_a_scatter_into_two_axes_becomes_one_into_the_flattened_axes_with_the_same_values(reduce, stored):
    rng = np.random.default_rng(0)
    idx = np.array([[3, 4], [0, 1], [3, 4]], np.int32)  # a duplicate row: it combines with x's value and the other
    x, u = rng.normal(size=(4, 5, 2)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    text = SCATTER.replace("REDUCE", reduce)
    if stored:
        text = text.replace(", %idx: int32[3x2]", "").replace("{\n", "{\n  param %idx: int32[3x2]\n", 1)
    graph = validate(parse_graph(text, {"idx": idx}))
    after = validate(decompose(graph))
    ops = [n.op.name for n in after.nodes]
    expected_ops = ["reshape", "scatter_reduce", "reshape"] if stored else \
        ["cast", "mul", "sum", "reshape", "scatter_reduce", "reshape"]
    assert ops == expected_ops, format_graph(after)
    assert after.nodes[-2].inputs[1].type.shape == (3, 1) and after.outputs[0].name == "y"
    feeds = [x, u] if stored else [x, idx, u]
    expected = run_reference(graph, feeds)[graph.outputs[0]]
    np.testing.assert_array_equal(run_reference(after, feeds)[after.outputs[0]], expected)


def test_a_scatter_into_one_axis_is_left_alone_and_an_emitter_refuses_two():
    one = SCATTER.replace("REDUCE", "amax").replace("int32[3x2]", "int32[3x1]")
    one = one.replace("float32[3x2]", "float32[3x5x2]")
    graph = validate(parse_graph(one))
    assert decompose(graph) is graph
    from portx.ops.scatter import one_axis_rows

    with pytest.raises(ValueError, match="scatter_reduce into 2 axes reached the emitter; run the pipeline's"):
        one_axis_rows(validate(parse_graph(SCATTER.replace("REDUCE", "amax"))).nodes[0])
