"""The command line: convert the bundled sample, inspect, ops, and exit codes for bad input."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from portx.cli import main
from tests.support.paths import SAMPLE
from tests.support.unsupported import TORCH_OP, unsupported


def _write(path, data):
    path.write_bytes(data)
    return path


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_convert_sample_prints_verification_and_stage_times(tmp_path):
    run = _run("convert", SAMPLE, "--to", "keras-jax", "-o", tmp_path / "out")
    assert run.exit_code == 0, run.output
    assert "verified:" in run.output and "max abs" in run.output
    for stage in ("load", "lower", "passes", "emit", "verify"):
        assert stage in run.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".portx-output", "model.py", "model.weights.json",
                                                                     "model_00000.weights.h5", "report.html",
                                                                     "report.json"]


def test_convert_json(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(SAMPLE), "-o", str(tmp_path / "o"), "--json"])
    assert run.exit_code == 0
    report = json.loads(run.stdout)
    assert report["verification"]["passed"] is True
    assert report["ops"]["conv"]["count"] == 3


def test_inspect_lists_ops_with_counts_and_scopes():
    run = _run("inspect", SAMPLE)
    assert run.exit_code == 0, run.output
    assert "conv" in run.output and "stem.0" in run.output
    info = json.loads(_run("inspect", SAMPLE, "--json").output)
    assert info["ops"]["batch_norm"]["count"] == 2


def test_ops_command_lists_registered_ops():
    run = _run("ops")
    assert run.exit_code == 0 and "aten::conv2d" in run.output


def test_existing_out_needs_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    run = _run("convert", SAMPLE, "-o", out)
    assert run.exit_code == 2 and "--force" in run.output
    assert (out / "keep.txt").read_text() == "mine"
    run = _run("convert", SAMPLE, "-o", out, "--force", "--no-verify")  # --force replaces only portx's folders
    assert run.exit_code == 2 and "was not written by portx" in run.output
    assert (out / "keep.txt").read_text() == "mine"
    (out / "keep.txt").unlink()  # an empty folder may be replaced
    assert _run("convert", SAMPLE, "-o", out, "--force", "--no-verify").exit_code == 0
    assert _run("convert", SAMPLE, "-o", out, "--force", "--no-verify").exit_code == 0  # and portx's own again


@pytest.mark.parametrize("make,expect", [
    (lambda d: d / "missing.pt2", "no such file"),
    (lambda d: d, "is a directory"),
    (lambda d: _write(d / "empty.pt2", b""), "is empty"),
    (lambda d: _write(d / "m.onnx2", b"x"), "unknown model format"),
])
def test_bad_inputs_exit_2_and_leave_no_out(tmp_path, make, expect):
    out = tmp_path / "out"
    run = _run("convert", make(tmp_path), "-o", out)
    assert run.exit_code == 2, run.output
    assert expect in run.output and "Traceback" not in run.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.portx-")]


def test_unsupported_ops_exit_3(tmp_path):
    class Odd(torch.nn.Module):
        def forward(self, x):
            return unsupported(x)

    torch.export.save(torch.export.export(Odd(), (torch.randn(2, 3),)), tmp_path / "c.pt2")
    run = _run("convert", tmp_path / "c.pt2", "-o", tmp_path / "out")
    assert run.exit_code == 3 and TORCH_OP in run.output
    assert not (tmp_path / "out").exists()


def test_unknown_target_is_usage_error(tmp_path):
    run = _run("convert", SAMPLE, "--to", "tf-lite", "-o", tmp_path / "out")
    assert run.exit_code == 2 and "unknown target" in run.output


def test_console_script_runs_in_a_real_process(tmp_path):
    portx_bin = Path(sys.executable).with_name("portx")
    done = subprocess.run([str(portx_bin), "convert", str(SAMPLE), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "verified" in done.stdout
