"""Bad-input matrix: each case asserts the exit code, the message, and that OUT does not exist."""
import os
import pickle
import signal
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from torch import nn

from portx.cli import main
from tests.support.unsupported import TORCH_OP, TORCH_OP_TOO, also_unsupported, unsupported


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Marker:
    """Unpickling this creates a file: the proof that code ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pt2(path, model=None, x=None):
    model = model or Small().eval()
    torch.export.save(torch.export.export(model, (torch.randn(2, 4) if x is None else x,)), path)
    return path


def _ts(path):
    torch.jit.save(torch.jit.trace(Small().eval(), (torch.randn(2, 4),)), path)
    return path


def _write(path, data):
    path.write_bytes(data)
    return path


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _random(path):
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    return path


def _zip_txt(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", "not a model")
    return path


def _list_pickle(path):
    torch.save([1, 2, 3], path, _use_new_zipfile_serialization=True)
    return path


CASES = [  # (id, make(tmp) -> path, extra args, exit code, message regex)
    ("missing", lambda d: d / "nope.pt2", [], 2, "no such file"),
    ("directory", lambda d: d, [], 2, "is a directory"),
    ("empty-pt2", lambda d: _write(d / "e.pt2", b""), [], 2, "is empty"),
    ("empty-pt", lambda d: _write(d / "e.pt", b""), [], 2, "is empty"),
    ("truncated-pt2", lambda d: _truncate(_pt2(d / "m.pt2")), [], 2, "not a readable torch.export"),
    ("truncated-torchscript", lambda d: _truncate(_ts(d / "m.pt")), ["--input", "x:2x4", "--trust-pickle"], 2,
     "m.pt"),
    ("truncated-state-dict", lambda d: _truncate(torch.save(Small().state_dict(), d / "s.pt") or d / "s.pt"),
     [], 2, "s.pt"),
    ("random-pt2", lambda d: _random(d / "r.pt2"), [], 2, "not a readable torch.export"),
    ("random-pt", lambda d: _random(d / "r.pt"), [], 2, "not a readable PyTorch file"),
    ("random-pth", lambda d: _random(d / "r.pth"), [], 2, "r.pth"),
    ("pt2-named-pt", lambda d: _pt2(d / "m.pt"), [], 2, "m.pt"),
    ("torchscript-named-pt2", lambda d: _ts(d / "m.pt2"), [], 2, "not a readable torch.export"),
    ("zip-of-text", lambda d: _zip_txt(d / "z.pt"), [], 2, "z.pt"),
    ("unknown-extension", lambda d: _random(d / "m.tflite"), [], 2, "unknown model format"),
    ("state-dict", lambda d: torch.save(Small().state_dict(), d / "sd.pt") or d / "sd.pt", [], 2,
     "state_dict .*torch.export.save"),
    ("pickle-not-a-module", lambda d: _list_pickle(d / "l.pt"), ["--trust-pickle"], 2, "not a model"),
    ("torchscript-without-trust", lambda d: _ts(d / "m.pt"), ["--input", "x:2x4"], 2, "TorchScript.*--trust-pickle"),
    ("torchscript-without-input", lambda d: _ts(d / "m.pt"), ["--trust-pickle"], 2, "--input NAME:SHAPE"),
    ("input-wrong-shape", lambda d: _ts(d / "m.pt"), ["--input", "x:2x5", "--trust-pickle"], 2, "m.pt"),
    ("input-bad-spec", lambda d: _ts(d / "m.pt"), ["--input", "x:2xq", "--trust-pickle"], 2, "NAME:SHAPE"),
    ("input-bad-dtype", lambda d: _ts(d / "m.pt"), ["--input", "x:2x4:float99", "--trust-pickle"], 2, "dtype"),
    ("unknown-target", lambda d: _pt2(d / "m.pt2"), ["--to", "coreml"], 2, "unknown target"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, case):
    _, make, extra, code, message = case
    src = make(tmp_path)
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(out), *extra])
    assert run.exit_code == code, run.output
    assert __import__("re").search(message, run.output), run.output
    assert "Traceback" not in run.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


def test_pickle_without_trust_never_runs_its_code(tmp_path):
    marker = tmp_path / "marker"
    torch.save({"w": Marker(str(marker))}, tmp_path / "evil.pt")
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "evil.pt"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "--trust-pickle" in run.output
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_plain_pickle_file_is_refused(tmp_path):
    marker = tmp_path / "marker"
    with open(tmp_path / "evil.pth", "wb") as f:
        pickle.dump(Marker(str(marker)), f)
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "evil.pth"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and not marker.exists()


def test_out_exists_without_force(tmp_path):
    (tmp_path / "out").mkdir()
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2")), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "already exists" in run.output


def test_missing_parents_are_created_and_removed_again_on_failure(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(_random(tmp_path / "r.pt2")), "-o", str(tmp_path / "a" / "b" / "out")])
    assert run.exit_code == 2 and not (tmp_path / "a").exists()
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2")), "-o", str(tmp_path / "a" / "b" / "out")])
    assert run.exit_code == 0 and (tmp_path / "a" / "b" / "out" / "model.py").exists()


def test_out_parent_not_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2")), "-o", str(tmp_path / "file" / "out")])
    assert run.exit_code == 2 and "is not a folder" in run.output


def test_unsupported_ops_are_all_listed_exit_3(tmp_path):
    class Odd(nn.Module):
        def forward(self, x):
            return unsupported(x) + also_unsupported(x)

    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2", Odd())), "-o", str(tmp_path / "out")])
    assert run.exit_code == 3 and TORCH_OP in run.output and TORCH_OP_TOO in run.output
    assert not (tmp_path / "out").exists()


def test_nan_weights_warn_and_verification_is_not_vacuous(tmp_path):
    model = Small().eval()
    with torch.no_grad():
        model.fc2.bias[1] = float("nan")  # one output column is NaN on both sides: positions must match
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2", model)), "-o", str(tmp_path / "o1")])
    assert run.exit_code == 0, run.output
    assert "NaN" in (tmp_path / "o1" / "report.json").read_text()
    with torch.no_grad():
        model.fc1.weight.fill_(float("nan"))  # every output NaN: nothing left to compare
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m2.pt2", model)), "-o", str(tmp_path / "o2")])
    assert run.exit_code == 1 and "vacuous" in run.output


def test_zero_size_dimension_is_refused(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2", x=torch.randn(0, 4))),
                                    "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "zero-size" in run.output
    assert not (tmp_path / "out").exists()


def test_interrupt_during_emission_leaves_nothing(tmp_path, monkeypatch):
    from portx.targets import KERAS_JAX

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(KERAS_JAX, "emit", interrupted)
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2")), "-o", str(tmp_path / "out")])
    assert run.exit_code == 130 and "interrupted" in run.output
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_to_a_real_process_leaves_nothing(tmp_path):
    src = _pt2(tmp_path / "m.pt2")
    proc = subprocess.Popen([sys.executable, "-m", "portx.cli", "convert", str(src), "-o", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # wait until the first stage line appears (the conversion is under way; a line naming the default target
    # comes just before it), then interrupt
    line = proc.stdout.readline()
    if line.startswith("converting "):
        line = proc.stdout.readline()
    assert "load" in line or line == ""
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode in (130, 0)
    if proc.returncode == 130:
        assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


class _Deep(nn.Module):
    def forward(self, x):
        for i in range(2500):
            x = torch.relu(x) + (i % 7) * 0.001
        return x


@pytest.mark.parametrize("verify", [pytest.param(True, marks=pytest.mark.slow), False],
                         ids=["verified", "unverified"])
def test_a_5000_node_graph_converts(tmp_path, verify):
    """No depth limit anywhere: lowering, passes, emit and the TPU proof; verification (three batch sizes, the
    gradient check and the trace: 280 s on two busy cores) in the slow sweep."""
    run = CliRunner().invoke(main, ["convert", str(_pt2(tmp_path / "m.pt2", _Deep())), "-o", str(tmp_path / "out"),
                                    "--json"] + ([] if verify else ["--no-verify"]))
    assert run.exit_code == 0, run.output[-2000:]
    assert '"portx_ir_nodes": 5000' in run.output
    assert os.path.exists(tmp_path / "out" / "model.py")
