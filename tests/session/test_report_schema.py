"""docs/report.schema.json is the typed reports' schema (session/report_schema.py), and the checker the tests
validate real reports with (tests/support/json_schema.py; test_report_readers.py) catches what it should."""
import json

import pytest

from portx.session.report import SCHEMA_VERSION, ConversionReport, DynamicDim, OpRow, VerifyReport
from portx.session.report_schema import report_schema
from tests.support.json_schema import problems
from tests.support.paths import REPO

SCHEMA = json.loads((REPO / "docs" / "report.schema.json").read_text(encoding="utf-8"))


def test_the_checked_in_schema_is_the_generated_one():
    assert SCHEMA == report_schema(), "docs/report.schema.json is stale: run scripts/report_schema.py"


def _conversion(**changes) -> dict:
    report = ConversionReport(source="m.pt2", target="keras-jax", portx_ir_nodes=2, weight_bytes=48,
                              ops={"linear": OpRow(count=1, scopes=["fc"], status="native")},
                              dynamic=[DynamicDim("batch", True, [["x", 0]], 2, 1, None)]).to_dict()
    return {**report, **changes}


def test_a_typed_report_validates_and_omits_what_it_never_had():
    report = _conversion()
    assert problems(SCHEMA, report) == [] and report["schema_version"] == SCHEMA_VERSION
    assert "gradients" not in report and "why" not in report["ops"]["linear"]
    assert "torch_symbol" not in report["dynamic"][0]


@pytest.mark.parametrize("changes, expected", [
    ({"schema_version": 0}, "matches no option"),
    ({"weight_bytes": "48"}, "matches no option"),
    ({"surprise": 1}, "matches no option")])
def test_the_checker_refuses_what_the_schema_does(changes, expected):
    assert expected in problems(SCHEMA, _conversion(**changes))[0]


def test_a_verify_report_round_trips():
    report = {"source": "m.pt2", "out": "out", "target": "keras-jax", "atol": 1e-5, "rtol": 0, "io_layout": "source",
              "inputs": [["x", [2, 4], "float32"]], "passed": True, "outputs": [], "samples": []}
    typed = VerifyReport.from_dict(report).to_dict()
    assert typed == {**report, "schema_version": SCHEMA_VERSION} and problems(SCHEMA, typed) == []
