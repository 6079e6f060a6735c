"""Clean-up passes as before/after pairs in text IR."""
import numpy as np
import pytest

import portx  # noqa: F401
from portx.ir import format_graph, parse_graph, validate
from portx.passes.fold import (fold_batch_norm, fold_pool_then_reshape, merge_reshapes_and_permutes,
                               remove_dead_nodes)
from portx.verification.compare import run_reference

CHAIN = """
graph model(%x: float32[2x3x4]) {
  %a: float32[6x4] = reshape(%x) {shape=(6, 4)}
  %b: float32[2x12] = reshape(%a) {shape=(2, 12)}
  %c: float32[12x2] = permute(%b) {perm=(1, 0)}
  %d: float32[2x12] = permute(%c) {perm=(1, 0)}
  %e: float32[2x12] = relu(%d) {}
  %dead: float32[2x12] = neg(%e) {}
  return %e
}
"""

MERGED = """
graph model(%x: float32[2x3x4]) {
  %b: float32[2x12] = reshape(%x) {shape=(2, 12)}
  %e: float32[2x12] = relu(%b) {}
  return %e
}
"""


def test_chains_collapse_and_identities_vanish():
    before = validate(parse_graph(CHAIN))
    after = validate(merge_reshapes_and_permutes(before))
    assert format_graph(after) == format_graph(parse_graph(MERGED))
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_reference(before, [x])[before.outputs[0]], run_reference(after, [x])[after.outputs[0]])


def test_permute_composition():
    graph = validate(parse_graph("""
graph model(%x: float32[2x3x4]) {
  %a: float32[3x4x2] = permute(%x) {perm=(1, 2, 0)}
  %b: float32[4x2x3] = permute(%a) {perm=(1, 2, 0)}
  return %b
}"""))
    after = validate(merge_reshapes_and_permutes(graph))
    assert [n.attrs["perm"] for n in after.nodes] == [(2, 0, 1)]


def test_dead_nodes_are_removed():
    graph = validate(parse_graph(CHAIN))
    assert "dead" not in {o.name for n in remove_dead_nodes(graph).nodes for o in n.outputs}


CONV_BN = """
graph model(%x: float32[1x3x6x6]) {
  param %w: float32[4x3x3x3]
  param %b: float32[4]
  param %g: float32[4]
  param %beta: float32[4]
  param %m: float32[4]
  param %v: float32[4]
  %c: float32[1x4x4x4] = conv(%x, %w, %b) {dilation=(1, 1), groups=1, pads=((0, 0), (0, 0)), stride=(1, 1)}  # c
  %y: float32[1x4x4x4] = batch_norm(%c, %g, %beta, %m, %v) {eps=1e-05}  # bn
  return %y
}
"""


def test_batch_norm_folds_into_conv():
    rng = np.random.default_rng(0)
    params = {"v": rng.uniform(0.5, 1.5, 4).astype(np.float32)}
    before = validate(parse_graph(CONV_BN, params))
    after = validate(fold_batch_norm(before))
    assert [n.op.name for n in after.nodes] == ["conv"] and after.nodes[0].scope == "c"
    assert after.meta["folded"] == {"y": [{"scope": "bn", "op": "batch_norm"}]}  # the emitters say so
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    want = run_reference(before, [x])[before.outputs[0]]
    got = run_reference(after, [x])[after.outputs[0]]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_extreme_scale_is_not_folded():
    before = validate(parse_graph(CONV_BN, {"v": np.full(4, -1e-5 + 1e-12, np.float32), "g": np.ones(4, np.float32)}))
    assert [n.op.name for n in fold_batch_norm(before).nodes] == ["conv", "batch_norm"]


def _pool_graph(pool="adaptive_avg_pool(%x) {size=(1, 1)}", pooled="2x3x1x1", shape=(2, 3), extra=""):
    out = "x".join(map(str, shape))
    return validate(parse_graph(f"""
graph model(%x: float32[2x3x4x5]) {{
  %p: float32[{pooled}] = {pool}  # pool
  %v: float32[{out}] = reshape(%p) {{shape={shape}}}
  %y: float32[{out}] = relu(%v) {{}}
  return %y{extra}
}}"""))


@pytest.mark.parametrize("pool, reduce", [
    ("adaptive_avg_pool(%x) {size=(1, 1)}", "mean"),
    ("adaptive_max_pool(%x) {size=(1, 1)}", "amax"),
    ("mean(%x) {axes=(2, 3), keepdims=True}", "mean"),
    ("amax(%x) {axes=(3, 2), keepdims=True}", "amax"),
])
def test_pool_then_reshape_is_one_reduction_without_keepdims(pool, reduce):
    before = _pool_graph(pool)
    after = validate(fold_pool_then_reshape(before))
    node = after.nodes[0]
    assert [n.op.name for n in after.nodes] == [reduce, "relu"]
    assert (node.attrs, node.scope, node.outputs[0].name) == ({"axes": (2, 3), "keepdims": False}, "pool", "v")
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    want = run_reference(before, [x])[before.outputs[0]]
    np.testing.assert_allclose(run_reference(after, [x])[after.outputs[0]], want, rtol=1e-6)


@pytest.mark.parametrize("graph", [
    lambda: _pool_graph(shape=(6,)),  # the reshape also merges the kept axes
    lambda: _pool_graph("adaptive_avg_pool(%x) {size=(2, 1)}", "2x3x2x1", (2, 6)),  # not global
    lambda: _pool_graph("mean(%x) {axes=(2, 3), keepdims=False}", "2x3", (2, 3)),  # nothing kept
    lambda: _pool_graph(extra=", %p"),  # the pooled value is an output too
], ids=["merges-kept-axes", "not-global", "no-keepdims", "pooled-is-output"])
def test_pool_then_reshape_left_alone(graph):
    before = graph()
    assert fold_pool_then_reshape(before) is before
