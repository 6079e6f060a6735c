"""The sections verification builds are typed (session/report_sections.py, Note [typed sections]): a real conversion
that fails its check and compares gradients writes them as dataclasses, report.json validates against the schema,
reads back as the same typed report, and a builder's key the class lacks is refused rather than dropped."""
import json

import pytest
import torch
from torch import nn

import portx
from portx.errors import VerificationFailed
from portx.options import Checks, Output
from portx.session.report import (ConversionReport, Divergence, ElementCheck, GradientRow, Gradients, Layout,
                                  LayoutRow, NodeErrors, NodeRow, OutputError, OutputRow, Sharding, TpuProof,
                                  TraceRow, Verification)
from tests.support.json_schema import problems
from tests.support.paths import REPO


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.head = nn.Linear(4, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.head(torch.tanh(self.fc(x)))


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """A conversion whose check fails (tolerances far below float32's rounding), with gradients and the TPU proof."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("sections")
    source = folder / "net.pt2"
    torch.export.save(torch.export.export(_Net().eval(), (torch.randn(2, 4),)), source)
    with pytest.raises(VerificationFailed) as caught:
        portx.convert(str(source), "keras-jax", checks=Checks(atol=1e-12, rtol=1e-12, grad=True),
                      output=Output(out=str(folder / "out")))
    return caught.value.result, json.loads((folder / "out" / "report.json").read_text(encoding="utf-8"))


def test_a_failing_conversion_writes_typed_sections(failed):
    result, _ = failed
    report = result.typed
    assert isinstance(report.verification, Verification) and report.verification.passed is False
    assert report.verification.failed_outputs() and isinstance(report.verification.first_divergence, Divergence)
    assert isinstance(report.node_errors, NodeErrors) and all(isinstance(r, NodeRow) for r in report.node_errors.rows)
    assert report.node_errors.rows and report.node_errors.first_divergence is not None
    assert isinstance(report.gradients, Gradients) and report.gradients.passed is True
    assert all(isinstance(r, GradientRow) for r in report.gradients.inputs + report.gradients.parameters)
    assert report.gradients.matched == 4 and isinstance(report.tpu, TpuProof) and report.tpu.verdict == "ok"
    [row] = report.verification.outputs
    assert isinstance(row, OutputRow) and isinstance(row.elements, ElementCheck) and row.passed is False
    assert isinstance(report.layout, Layout) and all(isinstance(r, LayoutRow) for r in report.layout.inputs)
    assert report.sharding is None  # no mesh unless asked (Checks.mesh); Sharding: the test below


def test_its_report_json_validates_and_reads_back_typed(failed):
    result, written = failed
    schema = json.loads((REPO / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    assert problems(schema, written) == []
    assert written == json.loads(json.dumps(result.report)) and result.report["verification"]["passed"] is False
    typed = ConversionReport.read(written)
    assert typed.to_dict() == written and typed.node_errors.rows[0].op == written["node_errors"]["rows"][0]["op"]
    assert typed.gradients.parameters[0].converted == written["gradients"]["parameters"][0]["converted"]


def test_a_section_leaves_out_what_its_builder_left_out():
    """A skipped trace has no ``first_divergence``; a trace without a divergence writes it as null (KEPT_WITH)."""
    skipped = NodeErrors(skipped="no segment to trace", rows=[]).to_dict()
    assert skipped == {"skipped": "no segment to trace", "rows": []}
    traced = NodeErrors(atol=1e-4, rtol=1e-3, rows=[]).to_dict()
    assert traced == {"atol": 1e-4, "rtol": 1e-3, "first_divergence": None, "rows": []}
    assert Gradients(passed=None, skipped="why").to_dict() == {"passed": None, "skipped": "why"}
    assert Verification(passed=None, skipped=True).to_dict() == {"passed": None, "skipped": True}


def test_a_key_the_section_lacks_is_refused_not_dropped():
    with pytest.raises(TypeError, match="surprise"):
        TpuProof.from_dict({"verdict": "ok", "problems": [], "surprise": 1})
    proof = TpuProof.from_dict({"verdict": "failed", "platform": "tpu", "problems": ["x"], "ops": {}})
    assert proof.to_dict() == {"verdict": "failed", "platform": "tpu", "problems": ["x"], "ops": {}}


def test_the_rows_are_typed_and_refuse_a_key_they_lack():
    """An output row of a streamed check (``paired``) reads as ``OutputError``, a whole one as ``OutputRow`` (Note [two
    output rows]); each keeps its own key order in the JSON, and an unknown key is a TypeError."""
    whole = {"name": "y", "shape": [2], "atol": 1e-5, "rtol": 1e-4, "passed": True, "max_abs": 0.0, "max_rel": 0.0,
             "problem": ""}
    streamed = {"name": "y", "paired": True, "passed": True, "max_abs": 0.0, "max_rel": 0.0, "atol": 1e-5,
                "rtol": 1e-4, "problem": ""}
    ver = Verification.from_dict({"passed": True, "outputs": [whole, streamed]})
    assert [type(r) for r in ver.outputs] == [OutputRow, OutputError]
    assert [list(r) for r in ver.to_dict()["outputs"]] == [list(whole), list(streamed)]
    assert [type(r) for r in ConversionReport.read({"verification": ver.to_dict()}).verification.outputs] == \
        [OutputRow, OutputError]
    for cls, row in ((OutputRow, whole), (TraceRow, {"scope": "fc", "op": "linear"}), (Sharding, {"verdict": "ok"})):
        with pytest.raises(TypeError, match="surprise"):
            cls.from_dict({**row, "surprise": 1})
    proof = Sharding(verdict="lowered", abstract=True, passed=None)
    assert proof.to_dict() == {"abstract": True, "passed": None, "verdict": "lowered"}  # KEPT_WITH: null when abstract
    assert Sharding(verdict="skipped", why="x").to_dict() == {"verdict": "skipped", "why": "x"}
