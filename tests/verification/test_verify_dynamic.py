"""``portx verify --dynamic`` / ``portx.verify(..., shapes=Shapes(dynamic=...))``: a torch.export program whose
sequence axis is a Dim, converted with ``--dynamic x:1``, re-checked at the sizes convert checks that axis at (the flag read from OUT's report.json when
not given again); converted without it, at the example's sizes only. The same program exported with fixed dims refuses other sizes, so
``--dynamic`` there is one line and exit 2, as is a malformed spec."""
import json

import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.errors import BadInput
from portx.options import Checks, Output, Shapes


class _Tokens(nn.Module):
    """Per-token features, then their mean over the sequence: right at any length only if the length stays free."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.tanh(self.proj(x))
        return h - h.mean(1, keepdim=True)


class _OtherAtOtherLengths(_Tokens):
    """``_Tokens`` at the example's length 6, something else at any other."""

    def forward(self, x):
        return super().forward(x) + (x.shape[1] - 6)


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _exported(path, dynamic_shapes=None, module=_Tokens):
    program = torch.export.export(module().eval(), (torch.randn(2, 6, 8),), dynamic_shapes=dynamic_shapes)
    torch.export.save(program, path)
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return _exported(tmp_path_factory.mktemp("src") / "tokens.pt2",
                     {"x": {1: torch.export.Dim("steps", min=2, max=32)}})


@pytest.fixture(scope="module")
def fixed_source(tmp_path_factory):
    return _exported(tmp_path_factory.mktemp("fixed") / "fixed.pt2")  # (2, 6, 8): torch specialised every dim


def _convert(src, out, dynamic):
    return portx.convert(str(src), "keras-jax", shapes=Shapes(dynamic=dynamic),
                         checks=Checks(grad=False, mesh=None), output=Output(out=out))


@pytest.fixture(scope="module")
def free_seq(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("free") / "out"
    result = _convert(source, out, ("x:1",))
    [row] = [d for d in result.report["dynamic"] if d["sites"] == [["x", 1]]]  # the Dim and the flag: one dim
    assert row["free"] and row["symbol"] == "x_1" and [c["size"] for c in row["verified"]] == [6, 9]
    return out


@pytest.fixture(scope="module")
def plain_out(source, tmp_path_factory):
    """The Dim program converted without ``--dynamic``: its sequence axis is free, but OUT asks for no size checks."""
    out = tmp_path_factory.mktemp("plain") / "out"
    _convert(source, out, ())
    return out


@pytest.fixture(scope="module")
def fixed_out(fixed_source, tmp_path_factory):
    out = tmp_path_factory.mktemp("fixed") / "out"
    _convert(fixed_source, out, ())
    return out


def test_cli_verify_dynamic_checks_the_sizes_convert_checks(source, free_seq):
    run = _run("verify", source, free_seq, "--dynamic", "x:1")
    assert run.exit_code == 0, run.output
    assert "x_1: free, verified at 6, 9" in run.output
    assert run.output.rstrip().endswith("on 1 sample(s) (seeds 0..0) and at x_1 = 6, 9"), run.output
    report = json.loads(_run("verify", source, free_seq, "--dynamic", "x:1", "--json").stdout)
    [row] = report["dynamic"]
    assert row["symbol"] == "x_1" and row["sites"] == [["x", 1]] and row["example_size"] == 6
    assert [(c["size"], c["passed"]) for c in row["verified"]] == [(6, True), (9, True)]
    assert all(c["max_abs"] < 1e-5 for c in row["verified"]) and report["passed"] is True


def test_api_verify_reads_the_dynamic_axes_out_was_converted_with(source, free_seq, plain_out):
    """Note [what OUT records]: OUT converted with ``--dynamic x:1`` is checked at 6 and 9 without the flag; one
    converted without it at the example's sizes only, unless asked."""
    for shapes in (Shapes(), Shapes(dynamic=("x:1",))):
        sized = portx.verify(str(source), free_seq, shapes=shapes)
        assert sized["passed"] and [c["size"] for c in sized["dynamic"][0]["verified"]] == [6, 9]
    plain = portx.verify(str(source), plain_out)
    assert plain["passed"] and "dynamic" not in plain
    assert plain["inputs"] == [["x", [2, 6, 8], "float32"]]
    asked = portx.verify(str(source), plain_out, shapes=Shapes(dynamic=("x:1",)))  # the source's Dim: free there
    assert asked["passed"] and [c["size"] for c in asked["dynamic"][0]["verified"]] == [6, 9]


def test_a_size_that_differs_fails_the_check(free_seq, tmp_path):
    """OUT checked against a source that agrees at the example's length only: the samples pass, length 9 does not."""
    other = _exported(tmp_path / "other.pt2", {"x": {1: torch.export.Dim("steps", min=2, max=32)}},
                      _OtherAtOtherLengths)
    report = portx.verify(str(other), free_seq, shapes=Shapes(dynamic=("x:1",)), check=False)
    assert not report["passed"] and report["problem"].startswith(f"{free_seq}: at x_1=9 "), report["problem"]
    assert [(c["size"], c["passed"]) for c in report["dynamic"][0]["verified"]] == [(6, True), (9, False)]
    run = _run("verify", other, free_seq, "--dynamic", "x:1")
    assert run.exit_code == 1 and "x_1: free, verified at 6, 9 DIFFERS" in run.output, run.output
    assert "OUT differs at x_1 = 9" in run.output and "--trace" not in run.output  # --trace would not show it


def test_an_axis_the_source_fixes_is_one_line_and_exit_2(fixed_source, fixed_out):
    """A program exported without Dims runs at its own sizes only: x:1 has no other size to check against it."""
    with pytest.raises(BadInput, match=r"--dynamic x:1: that axis is not free in the model converted from"):
        portx.verify(str(fixed_source), fixed_out, shapes=Shapes(dynamic=("x:1",)))
    run = _run("verify", fixed_source, fixed_out, "--dynamic", "x:1")
    assert run.exit_code == 2 and "the source fixes it, or OUT was converted without it" in run.output, run.output
    assert portx.verify(str(fixed_source), fixed_out)["passed"]


@pytest.mark.parametrize("spec, says", [
    ("x", "--dynamic x: expected NAME:AXIS[,AXIS]"),
    ("y:1", "--dynamic y:1: the model has no input y"),
    ("x:7", "--dynamic x:7: input x has 3 axes"),
])
def test_a_bad_dynamic_spec_is_one_line_and_exit_2(source, plain_out, spec, says):
    run = _run("verify", source, plain_out, "--dynamic", spec)
    assert run.exit_code == 2 and says in run.output, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("portx:")]  # beside the stage timings
    assert "Traceback" not in run.output and errors == [run.output.strip().splitlines()[-1]], run.output


def test_the_batch_of_a_static_program_is_checked_with_x_0(fixed_source, tmp_path):
    """``--dynamic x:0`` names the batch: a program exported without Dims has it freed by its ops' shape rules, as
    without the flag (it was refused as a declared dim the file fixes), and verify checks it at 2, 1 and 8."""
    result = _convert(fixed_source, tmp_path / "o", ("x:0",))
    assert [(d["symbol"], d["free"], d["found_by"]) for d in result.report["dynamic"]] == [
        ("batch", True, "the ops' shape rules")]
    run = _run("verify", fixed_source, tmp_path / "o", "--dynamic", "x:0")
    assert run.exit_code == 0 and "batch: free, verified at 2, 1, 8" in run.output, run.output
