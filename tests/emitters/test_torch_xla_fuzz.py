"""Fuzzing the torch-xla emitter: random valid IR graphs (tests/fuzz_graphs.py) vs the NumPy references.

Random graphs reach IR forms the torch frontend never produces (asymmetric pads, one-sided
affine norms, computed weights, odd pad layouts), so this is where the IR-only branches of the
torch-xla rules are exercised. ``PORTX_FUZZ=1`` runs 200 examples instead of 8.
"""
import tempfile

import pytest
from hypothesis import given

from fuzz_graphs import graphs
from harness_torch import emit_and_load
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import make_inputs
from portx.ir import parse_graph, validate
from test_fuzz import FOUND, FUZZ, assert_outputs_match, meaningful_reference, reference_outputs


def torch_outputs(graph, arrays) -> list:
    """Emit ``graph`` as PyTorch, load it with load_model() and run it on ``arrays``."""
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = emit_and_load(graph, tmp)
        return run_torch(model, arrays)


@FUZZ
@given(graphs())
def test_random_graph_emits_torch_matching_reference(graph):
    arrays = make_inputs(validate(graph), seed=0)
    expected = meaningful_reference(graph, arrays)
    assert_outputs_match(graph, expected, torch_outputs(graph, arrays), what="torch-xla")


# Graphs this fuzzer found (the fixes are in the torch-xla rules), plus the keras-jax fuzzer's finds.
TORCH_FOUND = {
    # a 0-d input became 1-d on its way into torch (np.ascontiguousarray; fixed in emitters/torch_xla.py)
    "zero-d-input": """
        graph model(%x: float32[scalar]) {
          %y: bool[scalar] = lt(%x, %x) {}
          return %y
        }""",
    # torch's group_norm refuses one value per group at batch 1; written as a layer_norm per group
    "group-norm-one-value-per-group": """
        graph model(%x: float32[1x7]) {
          param %gn.weight: float32[7]
          param %gn.bias: float32[7]
          %y: float32[1x7] = group_norm(%x, %gn.weight, %gn.bias) {groups=7, eps=1e-05}
          return %y
        }""",
    # torch has no reflection/replication pad for bool tensors: an index gather instead
    "reflect-pad-bool": """
        graph model(%x: bool[2x3x2]) {
          %y: bool[2x5x2] = pad(%x) {pads=((0, 0), (1, 1), (0, 0)), mode="reflect", value=0.0}
          return %y
        }""",
    # max_pool1d checks its padding against the undilated kernel (3 // 2 < 2): explicit -inf pad
    "max-pool1d-dilated-wide-pad": """
        graph model(%x: float32[1x5x4]) {
          %y: float32[1x5x2] = max_pool(%x) {kernel=(3,), stride=(2,), pads=((2, 2),), dilation=(2,), ceil_mode=False}
          return %y
        }""",
}


@pytest.mark.parametrize("text", list(FOUND.values()) + list(TORCH_FOUND.values()),
                         ids=list(FOUND) + list(TORCH_FOUND))
def test_found_graph_matches_reference(text):
    graph = validate(parse_graph(text))
    arrays = make_inputs(graph, seed=0)
    assert_outputs_match(graph, reference_outputs(graph, arrays), torch_outputs(graph, arrays), what="torch-xla")
