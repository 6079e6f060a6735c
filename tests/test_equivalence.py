"""Equivalence checks: comparisons (NaN/Inf aware), seeded inputs, failure exit code and localization."""
import json

import numpy as np
import pytest
import torch
from torch import nn

import portx
from portx.errors import VerificationFailed
from portx.ops.unary import UNARY
from portx.equivalence import compare_arrays, make_inputs


def test_equal_arrays_pass():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    row = compare_arrays(a, a.copy())
    assert row["passed"] and row["max_abs"] == 0.0


def test_tolerance_is_relative_to_output_scale():
    a = np.full(4, 1000.0, np.float32)
    assert compare_arrays(a, a + 0.05)["passed"]  # 5e-5 relative
    assert not compare_arrays(a, a + 0.5)["passed"]


def test_nan_must_match_positions():
    a = np.array([1.0, np.nan, 3.0])
    assert compare_arrays(a, a.copy())["passed"]
    row = compare_arrays(a, np.array([1.0, 2.0, 3.0]))
    assert not row["passed"] and "NaN" in row["problem"]


def test_all_nan_is_not_a_vacuous_pass():
    a = np.full(3, np.nan)
    assert not compare_arrays(a, a.copy())["passed"]


def test_inf_positions_and_shapes():
    assert not compare_arrays(np.array([np.inf, 1.0]), np.array([1.0, 1.0]))["passed"]
    assert "shape" in compare_arrays(np.zeros(3), np.zeros(4))["problem"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_seeded_inputs_are_reproducible():
    result = portx.convert(Net(), example_inputs=(torch.randn(2, 8),), verify=False)
    a, b = make_inputs(result.graph, 3), make_inputs(result.graph, 3)
    np.testing.assert_array_equal(a[0], b[0])


def test_divergence_exits_1_writes_files_and_names_the_first_bad_node(tmp_path, monkeypatch):
    """Fault injection: a wrong Keras rule for relu must be caught and localized to 'act'."""
    def wrong_relu(node, k):
        k.assign(node, f"ops.abs({k.ref(node.inputs[0])})")

    monkeypatch.setitem(UNARY["relu"].emit_rules, "keras-jax", wrong_relu)
    torch.manual_seed(0)
    with pytest.raises(VerificationFailed, match=r"first diverging node: act \(relu\)") as info:
        portx.convert(Net(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "out")
    assert info.value.exit_code == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verification"]["passed"] is False
    assert report["verification"]["first_divergence"]["scope"] == "act"
