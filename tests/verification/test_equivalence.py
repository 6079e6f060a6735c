"""Equivalence checks: comparisons (NaN/Inf aware), seeded inputs, failure exit code and localization."""
import json

import numpy as np
import pytest
import torch
from torch import nn

import portx
from portx.errors import VerificationFailed
from portx.ops.elementwise.unary import UNARY
from portx.verification.compare import compare_arrays, distinct, make_inputs
from tests.support.broken import FcReluFc, broken_keras_relu


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


Net = FcReluFc


def test_seeded_inputs_are_reproducible():
    result = portx.convert(Net(), example_inputs=(torch.randn(2, 8),), verify=False)
    a, b = make_inputs(result.graph, 3), make_inputs(result.graph, 3)
    np.testing.assert_array_equal(a[0], b[0])


def test_divergence_exits_1_writes_files_and_names_the_first_bad_node(tmp_path, monkeypatch):
    """Fault injection: a wrong Keras rule for relu must be caught and localized to 'act'."""
    torch.manual_seed(0)
    with broken_keras_relu(), pytest.raises(VerificationFailed, match=r"first diverging node: act \(relu\)") as info:
        portx.convert(Net(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "out")
    assert info.value.exit_code == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verification"]["passed"] is False
    assert report["verification"]["first_divergence"]["scope"] == "act"


def test_per_element_check_catches_an_error_hidden_in_small_entries():
    logits = np.linspace(-20, 20, 8)
    probs = np.full(8, 1e-3)  # next to logits of +-20: the scaled tolerance is 2e-3
    wide, wrong = np.concatenate([logits, probs]), np.concatenate([logits, probs * 2])
    row = compare_arrays(wide, wrong, elements=True)
    assert row["max_abs"] <= 1e-5 + 1e-4 * 20  # the scaled rule alone would pass this
    assert not row["passed"] and row["elements"]["violations"] == 8
    assert row["elements"]["worst_index"][0] >= 8 and "element(s) off" in row["problem"]
    assert compare_arrays(wide, wide + 1e-7, elements=True)["passed"]


def test_low_precision_outputs_are_compared_at_their_dtype_resolution():
    # Note [low-precision tolerance]: a bfloat16 source against a float32 target, off by 1.5 bfloat16 units
    import ml_dtypes

    ref = np.array([2.109375, -0.75, 0.5], dtype=ml_dtypes.bfloat16)
    got = ref.astype(np.float32) + np.float32(1.5 * 2 ** -7) * np.abs(ref.astype(np.float32))
    row = compare_arrays(ref, got, elements=True)
    assert row["passed"] and row["atol"] == row["rtol"] == row["elements"]["rtol"] == 4 * 2 ** -7
    assert not compare_arrays(ref.astype(np.float32), got, elements=True)["passed"]  # float32: as tight as ever
    assert not compare_arrays(ref, got * 1.1, elements=True)["passed"]  # 10 %: beyond 4 units
    assert compare_arrays(np.float16([1.0]), np.float32([1.003]))["atol"] == 4 * float(np.finfo(np.float16).eps)


class Heads(nn.Module):
    """A wide-range output: large logits concatenated with small gate values."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.cat([self.fc(x) * 20, torch.sigmoid(x) * 1e-3], dim=-1)


def test_fault_in_small_entries_fails_verification_and_reports_the_element(tmp_path, monkeypatch):
    def wrong_sigmoid(node, k):
        k.assign(node, f"ops.sigmoid({k.ref(node.inputs[0])}) * 3.0")

    torch.manual_seed(0)
    ok = portx.convert(Heads(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "ok")
    row = ok.report["verification"]["outputs"][0]
    assert row["passed"] and row["elements"]["violations"] == 0 and row["elements"]["worst_ratio"] < 0.1
    monkeypatch.setitem(UNARY["sigmoid"].emit_rules, "keras-jax", wrong_sigmoid)
    with pytest.raises(VerificationFailed, match="element"):
        portx.convert(Heads(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "out")
    row = json.loads((tmp_path / "out" / "report.json").read_text())["verification"]["outputs"][0]
    assert row["max_abs"] <= row["atol"] + row["rtol"] * 20 * 10  # within the scaled allowance
    assert row["elements"]["violations"] > 0 and row["elements"]["worst_index"][1] >= 4


def test_random_float_inputs_have_no_ties_so_sorts_have_one_answer():
    """8,000 float32 normals repeat two values (seed 0); torch.sort does not keep tied values' order."""

    a = np.random.default_rng(0).standard_normal(8000).astype(np.float32)
    assert len(np.unique(a)) < a.size
    b = distinct(a)
    assert len(np.unique(b)) == b.size and np.max(np.abs(b - a)) < 1e-6

    class Sort(nn.Module):
        def forward(self, x):
            return torch.sort(x)

    result = portx.convert(Sort(), example_inputs=(torch.randn(8000),), to="torch-xla", grad=False)
    assert result.report["verification"]["passed"] is True
