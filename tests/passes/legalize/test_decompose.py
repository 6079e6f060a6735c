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
