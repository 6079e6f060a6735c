"""The papercuts a new user hit, each as they met it (issue 19): the output folder's permissions, the default
target, the console's layout line, -inf mask constants, where `portx ops` points, the staging folders a
killed conversion leaves behind, and a one-channel image output under --io-layout channels-last."""
import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.ir import parse_graph, validate
from portx.outputs.staging import MARKER, clean_stale_staging
from portx.verification.compare import nonfinite_params
from tests.support.paths import REPO, SAMPLE


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_output_folder_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        portx.convert(str(SAMPLE), out=tmp_path / "o", verify=False)
    finally:
        os.umask(old)
    assert (tmp_path / "o").stat().st_mode & 0o777 == 0o755  # not mkdtemp's 0o700


def test_without_to_a_keras_source_goes_to_torch_and_the_first_line_says_so(tmp_path):
    keras.utils.set_random_seed(0)
    x = keras.Input((6,))
    path = tmp_path / "dense.keras"
    keras.Model(x, keras.layers.Dense(3)(x)).save(path)
    run = _run("convert", path, "-o", tmp_path / "o", "--no-verify")
    assert run.exit_code == 0, run.output
    assert run.output.splitlines()[0] == f"converting {path} to torch-xla (the other framework; --to chooses)"
    assert json.loads((tmp_path / "o" / "report.json").read_text())["target"] == "torch-xla"


class _Heads(nn.Module):
    """Attention with its heads split by hand: each head's transposes stay inside the model."""

    def forward(self, x):
        q = x.reshape(2, 4, 2, 3).transpose(1, 2)
        return (q @ q.transpose(-1, -2)).transpose(1, 3).reshape(2, -1)


def test_the_layout_line_counts_the_transposes_and_names_the_first_few(tmp_path):
    path = tmp_path / "heads.pt2"
    torch.export.save(torch.export.export(_Heads(), (torch.randn(2, 4, 6),)), path)
    run = _run("convert", path, "-o", tmp_path / "o")
    assert run.exit_code == 0, run.output
    (line,) = [row for row in run.output.splitlines() if row.startswith("  layout:")]
    inner = json.loads((tmp_path / "o" / "report.json").read_text())["layout"]["inner_transposes"]
    assert line.startswith(f"  layout: {len(inner)} transpose(s) inside the model: ")
    assert len(inner) <= 3 or line.endswith(f", and {len(inner) - 3} more in report.json")
    assert len(line) < 300


def test_minus_inf_in_a_mask_constant_is_no_warning_but_nan_elsewhere_is_named():
    graph = validate(parse_graph("""
graph model(%x: float32[2x4]) {
  param %mask: float32[2x4]
  param %w: float32[2x4]
  %a: float32[2x4] = add(%x, %mask)  # attn
  %b: float32[2x4] = mul(%a, %w)  # head.scale
  return %b
}""", {"mask": np.array([[0, -np.inf, 0, 0]] * 2, np.float32), "w": np.array([[1, np.nan, 1, 1]] * 2, np.float32)}))
    assert nonfinite_params(graph) == ["parameter w: 2 NaN and 0 Inf values (read by head.scale)"]


def test_ops_points_at_the_emit_rule_file_and_line():
    run = _run("ops", "--target", "keras-jax")
    assert run.exit_code == 0, run.output
    lines = run.output.splitlines()
    rule = lines[lines.index(next(row for row in lines if row.startswith("conv "))) + 1].split("rule: ")[1]
    path, line = rule.rsplit(":", 1)
    assert path == "portx/ops/conv/to_keras.py" or path.endswith("src/portx/ops/conv/to_keras.py")
    source = (REPO / "src" / "portx" / "ops" / "conv" / "to_keras.py").read_text().splitlines()
    assert source[int(line) - 1].startswith(("@CONV.emits", "def "))


def test_a_killed_conversions_staging_folder_is_removed_by_the_next_run(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / ".o.portx-abcd1234"
    stale.mkdir()
    (stale / "model.weights.h5").write_bytes(b"\0" * 2048)
    (stale / MARKER).write_text(json.dumps({"written_by": "portx", "pid": int(dead.stdout),
                                            "host": socket.gethostname()}))
    alive = tmp_path / ".p.portx-efgh5678"  # this very process: still converting
    alive.mkdir()
    (alive / MARKER).write_text(json.dumps({"written_by": "portx", "pid": os.getpid(), "host": socket.gethostname()}))
    backup = tmp_path / ".q.portx-old-ijkl9012"  # a replaced OUT set aside: never removed here
    backup.mkdir()
    result = portx.convert(str(SAMPLE), out=tmp_path / "o", verify=False)
    assert not stale.exists() and alive.exists() and backup.exists()
    assert f"removed {stale} (2.1 kB): the staging folder of portx process {int(dead.stdout)}, which ended before " \
           "it could clean up" in result.report["warnings"]
    assert clean_stale_staging(tmp_path) == []


class _Depth(nn.Module):
    """A one-channel image head (segmentation, depth)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def test_a_one_channel_image_output_follows_the_requested_layout(tmp_path):
    torch.manual_seed(0)
    result = portx.convert(_Depth().eval(), example_inputs=(torch.randn(2, 3, 8, 8),), out=tmp_path / "o",
                           io_layout="channels-last", grad=False)
    rows = result.report["layout"]
    assert [r["layout"] for r in rows["inputs"] + rows["outputs"]] == ["NHWC", "NHWC"], rows
    assert tuple(result.model.outputs[0].shape)[1:] == (8, 8, 1)
