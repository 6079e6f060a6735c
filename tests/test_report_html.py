"""report.html and the progress display, as a person sees them (issue 19).

report.html is written beside report.json on success and when verification fails, holds the error plot as
inline SVG and names the first diverging node, escapes names from model files, and renders in headless
Chromium with no console errors. The progress display prints plain lines (no control characters) off a
terminal and a live bar with node counts on one.
"""
import io
import json
import re
import shutil
import subprocess

import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.errors import VerificationFailed
from portx.progress import Lines, Live, Stages, reporting, step
from portx.reporting.html import render
from portx.session.report import ConversionReport
from portx.targets import TARGETS
from portx.verification import trace
from portx.verification.compare import make_inputs
from tests.support.broken import FcReluFc, broken_keras_relu
from tests.support.paths import SAMPLE

HOSTILE = '<script>alert("x")</script>$\\frac{1}{0}$&amp;'


Net = FcReluFc


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """OUT of a conversion whose Keras relu rule is broken (abs instead of relu): verification fails at 'act'."""
    out = tmp_path_factory.mktemp("failed") / "out"
    torch.manual_seed(0)
    with broken_keras_relu(), pytest.raises(VerificationFailed, match="report.html") as info:
        portx.convert(Net(), example_inputs=(torch.randn(2, 8),), out=out, grad=False)
    assert info.value.exit_code == 1
    return out


def test_report_html_on_success_with_the_old_progress_callable(tmp_path):
    seen = []
    torch.manual_seed(0)
    result = portx.convert(Net(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "out", grad=False,
                           progress=lambda name, seconds: seen.append((name, seconds)))
    assert [name for name, _ in seen] == list(result.stage_times) and "trace" in result.stage_times
    assert result.files["report_html"] == tmp_path / "out" / "report.html"
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    errors = json.loads((tmp_path / "out" / "report.json").read_text())["node_errors"]
    assert [r["op"] for r in errors["rows"]] == ["linear", "relu", "linear"] and errors["first_divergence"] is None
    assert all(r["passed"] and r["max_rel"] < 1e-5 for r in errors["rows"])
    assert "<svg" in page and "First diverging node" not in page
    for section in ("Verification", "Op inventory", "Training: folded and dropped", "Inner transposes", "Stage times"):
        assert section in page
    assert "<script" not in page and "src=" not in page and "<link" not in page  # self-contained: nothing to fetch


def test_report_html_when_verification_fails_names_the_first_diverging_node(failed):
    report = json.loads((failed / "report.json").read_text())
    errors = report["node_errors"]
    first = errors["rows"][errors["first_divergence"]]
    assert (first["node"], first["op"], first["passed"]) == ("act", "relu", False)
    assert len(errors["rows"]) == 3  # the trace goes on past the divergence
    page = (failed / "report.html").read_text(encoding="utf-8")
    assert "<svg" in page and "first divergence: act (relu)" in page
    assert re.search(r"First diverging node: <code>act</code> \(relu", page)
    assert "FAILED" in page


class Deep(nn.Module):
    """160 Linear+ReLU blocks: 320 IR nodes, past the 300 a passing model's trace used to stop at."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(160)])

    def forward(self, x):
        return self.blocks(x)


def test_a_long_passing_model_gets_its_error_plot_sampled(tmp_path, monkeypatch):
    monkeypatch.setattr(trace, "TRACE_SAMPLED_ROWS", 100)  # the sampling of a graph past 1000 intermediates
    monkeypatch.setattr(trace, "TRACE_MIN_SECONDS", 600.0)  # a loaded CI machine: the whole trace, every time
    torch.manual_seed(0)
    result = portx.convert(Deep(), example_inputs=(torch.randn(2, 4),), to="keras-jax", out=tmp_path / "out",
                           grad=False)
    errors = result.report["node_errors"]
    assert "skipped" not in errors and errors["sampled"] == {"every": 4, "of": 320}, errors.get("skipped")
    assert len(errors["rows"]) == 81 and errors["rows"][-1]["value"] == result.graph.outputs[0].name
    assert all(r["passed"] for r in errors["rows"]) and errors["first_divergence"] is None
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<div class="plot" id="error-plot"><svg' in page
    assert "The plot is sampled</b>: 1 in 4 of the graph's 320 intermediates" in page
    monkeypatch.setattr(trace, "TRACE_MIN_SECONDS", 0.0)  # a conversion that took no time: no time to trace
    emitter = TARGETS["keras-jax"].emitter(result.graph)
    emitter.emit_graph()
    late = trace.node_errors(TARGETS["keras-jax"], result.graph, result.model, dict(emitter.names),
                             make_inputs(result.graph, 0), code=tmp_path / "out" / "model.py", passed=True, spent=0.0)
    assert late.rows == [] and "a passing model's trace gets 10% of the conversion's time" in late.skipped


def test_a_passing_trace_holds_a_bounded_number_of_elements(tmp_path, monkeypatch):
    monkeypatch.setattr(trace, "TRACE_MIN_SECONDS", 600.0)
    monkeypatch.setattr(trace, "TRACE_SAMPLED_ELEMENTS", 40 * 2 * 4)  # 40 of Deep's (2, 4) intermediates
    torch.manual_seed(0)
    result = portx.convert(Deep(), example_inputs=(torch.randn(2, 4),), to="keras-jax", out=tmp_path / "out",
                           grad=False)
    errors = result.report["node_errors"]
    assert errors["sampled"] == {"every": 8, "of": 320} and len(errors["rows"]) == 41, errors.get("skipped")
    assert all(r["passed"] for r in errors["rows"])


def test_a_stopped_trace_says_so_under_the_plot():
    rows = [{"node": f"block.{i}", "op": "relu", "value": f"v{i}", "max_rel": 1e-7, "passed": True} for i in range(3)]
    page = render(ConversionReport.read({
        "source": "m.pt2", "target": "keras-jax", "verification": {"passed": True, "outputs": []},
        "node_errors": {"rtol": 1e-3, "atol": 1e-4, "first_divergence": None, "rows": rows,
                        "sampled": {"every": 2, "of": 12},
                        "stopped": {"rows": 3, "of": 6, "seconds": 10.0, "why": "10% of the time"}}}))
    assert "1 in 2 of the graph's 12 intermediates" in page and "<svg" in page
    assert "The plot stops early</b>: after 3 of 6 nodes, when the trace had taken its 10 s (10% of the time" in page


def test_names_from_model_files_are_escaped():
    report = {"source": HOSTILE, "target": "keras-jax", "verification": {
        "passed": False, "outputs": [{"name": HOSTILE, "passed": False, "max_abs": 1.0, "max_rel": 1.0, "atol": 1e-5,
                                      "rtol": 1e-4, "problem": HOSTILE}]},
        "node_errors": {"rtol": 1e-3, "atol": 1e-4, "first_divergence": 1, "rows": [
            {"node": "ok", "op": "conv", "value": "v0", "max_rel": 0.0, "passed": True},
            {"node": HOSTILE, "op": "relu", "value": HOSTILE, "max_rel": 0.5, "passed": False}]},
        "ops": {"relu": {"count": 1, "scopes": [HOSTILE], "status": "native", "why": ""}},
        "layout": {"inner_transposes": [{"scope": HOSTILE, "value": HOSTILE, "perm": [0, 2, 1], "origin": "source",
                                         "feeds": [HOSTILE]}]},
        "training": {"folded": [{"scope": HOSTILE, "op": "batch_norm"}], "dropped": []}, "warnings": [HOSTILE],
        "stages": {"load": 0.5}}
    page = render(ConversionReport.read(report))
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&amp;amp;" in page  # an entity in a name is shown as typed, not decoded
    assert "<svg" in page  # the plot's annotation holds the name too: no mathtext error on $...$


def test_plain_lines_off_a_terminal_have_no_control_characters(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(SAMPLE), "-o", str(tmp_path / "out"), "--profile"])
    assert run.exit_code == 0, run.output
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", run.output), repr(run.output)
    stages = [ln for ln in run.stderr.splitlines() if re.fullmatch(r"  [a-z-]+ +\d+\.\d\ds", ln)]
    assert [ln.split()[0] for ln in stages][:5] == ["load", "lower", "passes", "free-dims", "emit"]
    assert "trace" in run.stderr and "profile emit" in run.stderr and "report.html" in run.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["stage"] for r in report["profile"]["stages"]] == list(report["stages"])
    assert report["profile"]["peak_rss_mb"] > 0
    assert "Peak RSS" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_live_display_on_a_terminal_shows_stage_counts_and_times():
    from rich.console import Console

    stream = io.StringIO()
    live = Live(header="converting m.pt2", console=Console(file=stream, force_terminal=True, width=120))
    live.open()
    stages = Stages(live)
    stages.run("emit", lambda: [step(i, 40, f"block.{i} (conv)") for i in range(40)] and live.bar.refresh())
    stages.run("verify", lambda: None)
    live.close()
    text = stream.getvalue()
    assert "\x1b[" in text  # a live terminal display, unlike the plain lines
    assert "converting m.pt2" in text and "39/40" in text and "block.39 (conv)" in text
    assert re.search(r"done emit +\d+\.\d\ds", text) and re.search(r"total +\d+\.\d\ds", text)


def test_step_without_a_display_does_nothing():
    step(1, 2, "nothing listens")  # no reporter active: a no-op
    seen = []

    class Counting(Lines):  # records its steps
        def step(self, done, total=None, what=""):
            seen.append((done, total, what))

    with reporting(Counting()):
        step(3, 4, "x")
    step(5, 6, "after")
    assert seen == [(3, 4, "x")]


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_report_renders_in_headless_chromium(failed, tmp_path):
    browser = _chromium()
    if browser is None:
        print("chromium not found: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    url = (failed / "report.html").resolve().as_uri()
    flags = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln or "ERR_FILE" in ln]
    assert not console, console
    assert '<div class="plot" id="error-plot"><svg' in dom.stdout and "<path" in dom.stdout
    assert re.search(r"First diverging node: <code>act</code>", dom.stdout)
    shot = tmp_path / "report.png"
    done = subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1280,2000", url], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and shot.stat().st_size > 20_000, done.stderr[-2000:]
    print(f"screenshot: {shot}")
