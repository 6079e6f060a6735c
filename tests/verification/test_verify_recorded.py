"""``portx verify SRC OUT`` re-checks a conversion made with ``--static-batch``, ``--io-layout`` or ``--dynamic``
without being told: it reads what convert decided from OUT's report.json (Note [what OUT records] in
session/dims/recorded.py). ``--static-batch`` and ``--dynamic`` are taken as convert takes them; one that differs
from OUT's is one line and exit 2. Without a report.json, ``--static-batch`` says it."""
import json
import shutil

import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.errors import BadInput
from portx.options import Checks, Output, Shapes, Trust
from portx.testing import assert_equivalent
from tests.verification.test_verify_dynamic import _Tokens


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.fc = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "net.pt2"
    batch = torch.export.Dim("b", min=1, max=64)
    torch.export.save(torch.export.export(_Net().eval(), (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: batch},)),
                      path)
    return path


def _convert(source, out, **shapes):
    portx.convert(str(source), "keras-jax", shapes=Shapes(**shapes), checks=Checks(grad=False, mesh=None),
                  output=Output(out=out))
    return out


@pytest.fixture(scope="module")
def pinned(source, tmp_path_factory):
    return _convert(source, tmp_path_factory.mktemp("pinned") / "out", static_batch=4)


@pytest.fixture(scope="module")
def pinned_nhwc(source, tmp_path_factory):
    return _convert(source, tmp_path_factory.mktemp("nhwc") / "out", static_batch=4, io_layout="channels-last")


def test_verify_reads_the_pinned_batch_from_out(source, pinned):
    run = _run("verify", source, pinned, "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["passed"] is True and report["inputs"] == [["x", [4, 3, 8, 8], "float32"]]


def test_verify_reads_the_pinned_batch_and_the_io_layout(source, pinned_nhwc):
    report = portx.verify(str(source), pinned_nhwc, checks=Checks(trace=True))
    assert report["passed"] is True and report["io_layout"] == "channels-last" and report["code_matches"] is True
    assert report["inputs"] == [["x", [4, 8, 8, 3], "float32"]]


def test_static_batch_as_out_has_it_passes_and_another_is_exit_2(source, pinned):
    assert _run("verify", source, pinned, "--static-batch", 4).exit_code == 0
    run = _run("verify", source, pinned, "--static-batch", 8)
    assert run.exit_code == 2
    assert run.output.count("\n") == 1 and "--static-batch 8" in run.output and "--static-batch 4" in run.output
    with pytest.raises(BadInput, match="--static-batch 8"):
        portx.verify(str(source), pinned, shapes=Shapes(static_batch=8))


def test_static_batch_on_a_free_batch_is_exit_2(source, tmp_path):
    out = _convert(source, tmp_path / "free")
    assert _run("verify", source, out).exit_code == 0
    run = _run("verify", source, out, "--static-batch", 4)
    assert run.exit_code == 2 and "was converted with the batch free" in run.output, run.output


def test_without_report_json_static_batch_says_it(source, pinned, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(pinned, out)
    (out / "report.json").unlink()
    assert _run("verify", source, out).exit_code == 2  # the source's batch (2): OUT takes 4
    run = _run("verify", source, out, "--static-batch", 4)
    assert run.exit_code == 0, run.output


def test_assert_equivalent_reads_the_pinned_batch(source, pinned_nhwc):
    report = assert_equivalent(str(source), pinned_nhwc)
    assert report["inputs"] == [["x", [4, 8, 8, 3], "float32"]]


#: a TorchScript file records no shapes: its sequence axis is free only because convert was given --dynamic
_SCRIPT_FLAGS = ("--trust-pickle", "--input", "2x6x8:float32")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """(source, OUT): a TorchScript file (its one input is ``x_1``) converted with ``--dynamic x_1:1``."""
    folder = tmp_path_factory.mktemp("scripted")
    source, out = folder / "tokens.pt", folder / "out"
    torch.jit.save(torch.jit.script(_Tokens().eval()), source)
    run = _run("convert", source, "-o", out, "--to", "keras-jax", "--dynamic", "x_1:1", "--no-grad", *_SCRIPT_FLAGS)
    assert run.exit_code == 0 and "x_1_1: free, verified at 6, 9" in run.output, run.output
    return source, out


def test_verify_reads_the_dynamic_axes_from_out(scripted):
    run = _run("verify", *scripted, *_SCRIPT_FLAGS, "--json")
    assert run.exit_code == 0, run.output
    [row] = json.loads(run.stdout)["dynamic"]
    assert row["symbol"] == "x_1_1" and [(c["size"], c["passed"]) for c in row["verified"]] == [(6, True), (9, True)]
    run = _run("verify", *scripted, *_SCRIPT_FLAGS, "--dynamic", "x_1:1")  # as convert was given it
    assert run.exit_code == 0 and run.output.rstrip().endswith("and at x_1_1 = 6, 9"), run.output


def test_dynamic_axes_that_differ_from_outs_are_exit_2(scripted):
    run = _run("verify", *scripted, *_SCRIPT_FLAGS, "--dynamic", "x_1:2")
    assert run.exit_code == 2 and "Traceback" not in run.output, run.output
    assert run.output.count("portx:") == 1 and "--dynamic x_1:2" in run.output and "--dynamic x_1:1" in run.output
    source, out = scripted
    with pytest.raises(BadInput, match="--dynamic x_1:2"):
        portx.verify(str(source), out, trust=Trust(trust_pickle=True), shapes=Shapes(dynamic=("x_1:2",)))


def test_assert_equivalent_reads_the_dynamic_axes(scripted):
    source, out = scripted
    report = assert_equivalent(str(source), out, inputs=(torch.randn(2, 6, 8),), trust=Trust(trust_pickle=True))
    assert [c["size"] for c in report["dynamic"][0]["verified"]] == [6, 9]
