"""Every reader of a report takes every field as optional (Note [optional fields] in reporting/text.py).

A real conversion's report (gradients, trace, dynamic sizes, profile) and a real ``verify --trace --grad`` report
are read back as typed reports (``ConversionReport.read``, ``VerifyReport.read``) with each JSON field removed in
turn (in a list, the first row's fields stand for every row's) and rendered by the console printers, report.html and
the Model Explorer error overlay. None may raise.
"""
import copy
import json

import pytest
import torch
from torch import nn

import portx
from portx.reporting.explorer import write_conversion
from portx.frontends import load
from portx.reporting import html as report_html
from portx.reporting.html import write_report
from portx.reporting.text import print_conversion, print_gradients, print_verification
from portx.session.report import (ConversionReport, DynamicDim, Gradients, GradientRow, NodeErrors, NodeRow, OpRow,
                                  Sharding, TpuProof, Training, Verification, VerifyReport, read_typed)
from portx.targets import find_target
from tests.support.json_schema import problems
from tests.support.paths import REPO


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.head = nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.fc(x))))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("readers")
    source = folder / "net.pt2"
    torch.export.save(torch.export.export(_Net().eval(), (torch.randn(2, 4),)), source)
    out = folder / "out"
    result = portx.convert(str(source), to="keras-jax", out=out, grad=True, profile=True)
    checked = portx.verify(str(source), out, trace=True, grad=True)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["gradients"]["parameters"] and checked["trace"] and checked["gradients"]["parameters"]
    return {"convert": report, "verify": json.loads(json.dumps(checked, default=str)), "graph": result.graph,
            "source": load(str(source)), "out": out}


def test_real_reports_validate_against_the_checked_in_schema(reports):
    """report.json of a conversion (gradients, profile, dynamic sizes) and a ``verify --trace --grad`` report, against
    docs/report.schema.json (session/report_schema.py)."""
    schema = json.loads((REPO / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    assert problems(schema, reports["convert"]) == []
    assert problems(schema, reports["verify"]) == []


def _paths(doc, prefix=()):
    """The path of every field of a JSON document; in a list, only the first row's."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list) and doc:
        yield from _paths(doc[0], prefix + (0,))


def _without(doc, path):
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return doc


def test_every_convert_report_field_is_optional_to_every_reader(reports, tmp_path, capsys, monkeypatch):
    report, target = reports["convert"], find_target("keras-jax", "--to")
    paths = list(_paths(report))
    assert len(paths) > 100 and ("gradients", "parameters", 0, "max_rel") in paths
    plot = report_html.error_plot
    for path in paths:
        partial = ConversionReport.read(_without(report, path))
        print_conversion(partial, reports["out"])
        print_verification(VerifyReport.read(partial.to_dict()["verification"]))
        # the plot reads node_errors alone, and takes most of a render (0.5 s): drawn where a field of it is gone
        monkeypatch.setattr(report_html, "error_plot", plot if path[0] == "node_errors" else lambda errors: "")
        write_report(tmp_path / "report.html", partial)
        if path[0] == "node_errors":
            write_conversion(tmp_path, reports["source"], reports["graph"], target, partial)
    assert "verified:" in capsys.readouterr().out


def test_every_verify_report_field_is_optional_to_the_console(reports, capsys):
    report = reports["verify"]
    for path in _paths(report):
        print_verification(VerifyReport.read(_without(report, path)))
    assert "trace (seed" in capsys.readouterr().out


def test_a_report_json_reads_back_as_the_report_that_wrote_it(reports):
    typed = ConversionReport.read(reports["convert"])
    assert typed.to_dict() == reports["convert"]
    assert all(isinstance(row, OpRow) for row in typed.ops.values()) and isinstance(typed.training, Training)
    assert all(isinstance(dim, DynamicDim) for dim in typed.dynamic)
    assert VerifyReport.read(reports["verify"]).to_dict() == reports["verify"]
    assert ConversionReport.read({"source": "m.pt2", "extra": 1}).target is None  # missing: None; unknown: dropped


def test_a_gradient_row_without_numbers_prints(capsys):
    """The issue's crash: a row whose sizes differ has a problem and no max_rel (KeyError before)."""
    print_gradients(Gradients.read({"passed": False, "atol": 1e-4, "rtol": 1e-3, "inputs": [], "matched": 1,
                                    "parameters": [{"name": "conv_1/beta", "passed": False,
                                                    "problem": "3 elements, converted 4"}]}))
    assert "1 parameter(s), max rel 0 (atol 0.0001, rtol 0.001)  DIFFER" in capsys.readouterr().out


def test_the_report_line_of_a_proof_on_abstract_weights_says_nothing_ran():
    from portx.reporting.text import sharding_line

    proof = Sharding.read({"verdict": "lowered", "abstract": True, "mesh": {"batch": 2, "model": 4},
                           "per_device_ratio": 1.0, "collectives": {"all-reduce": 65, "all-gather": 0}})
    assert sharding_line(proof) == ("lowered on batch=2,model=4: max 1 x weights/4 per device, all-reduce 65, "
                                    "abstract weights, not run")


#: the typed sections (session/report_sections.py, Note [typed sections]) and rows (session/report_rows.py)
SECTIONS = ("verification", "node_errors", "gradients", "tpu", "layout", "sharding", "outputs", "samples", "trace",
            "first_divergence")


def _section_names(tree) -> set:
    """Names bound to a typed section: ``ver = report.verification``, ``ver, tpu = report.verification, ...``,
    ``errors = report.node_errors or NodeErrors()``, ``grads = stages.run("grad", compare_gradients, ...)``."""
    import ast

    def of_section(value):
        if isinstance(value, ast.BoolOp):
            value = value.values[0]
        if isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == "compare_gradients"
                                               for a in value.args):
            return True
        return isinstance(value, ast.Attribute) and value.attr in SECTIONS

    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and \
                isinstance(node.value, ast.Tuple) else [(target, node.value)]
            names |= {t.id for t, v in pairs if isinstance(t, ast.Name) and of_section(v)}
    return names


def test_the_report_readers_read_typed_report_fields_as_attributes():
    """api, testing, cli, session, reporting and verification take the typed report: no ``report["verification"]``
    or ``report.get("outputs")`` of a report dataclass field outside session/report.py (recheck.py builds a
    ``VerifyReport``; verification/streaming.py, which builds the ``verification`` section, is not scanned yet),
    and no key read of a typed section (``report.tpu["artifact"]``, ``ver.get("passed")`` where ``ver`` is
    ``report.verification``, ``grads["passed"]`` of ``compare_gradients``)."""
    import ast
    import dataclasses

    fields = {f.name for cls in (ConversionReport, VerifyReport) for f in dataclasses.fields(cls)}
    src = REPO / "src" / "portx"
    files = [src / "api.py", src / "testing.py", *(src / "cli").glob("*.py"), *(src / "session").glob("*.py"),
             *(src / "reporting").glob("*.py"), *(src / "verification").glob("*.py")]
    found = []
    skipped = ("report.py", "report_sections.py", "report_rows.py", "report_base.py", "streaming.py")
    for path in (p for p in files if p.name not in skipped):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sections = _section_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript):
                holder, key = node.value, node.slice
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and node.args:
                holder, key = node.func.value, node.args[0]
            else:
                continue
            name = holder.attr if isinstance(holder, ast.Attribute) else getattr(holder, "id", "")
            if name == "report" and isinstance(key, ast.Constant) and key.value in fields:
                found.append(f"{path.relative_to(src)}:{node.lineno}: [{key.value!r}]")
            elif isinstance(key, ast.Constant) and isinstance(key.value, str) and (
                    (isinstance(holder, ast.Attribute) and holder.attr in SECTIONS)
                    or (isinstance(holder, ast.Name) and holder.id in sections)):
                found.append(f"{path.relative_to(src)}:{node.lineno}: {name}[{key.value!r}]")
    assert not found, found
