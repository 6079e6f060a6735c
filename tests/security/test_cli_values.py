"""Hostile CLI values and quiet failures (issue 10, items 8, 11, 12 and the 'verify with the wrong model' hint).

Each case exits 2 with one ``portx:`` line on stderr: never exit 70, never a traceback, never an OUT.
"""
import os
import re
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from portx.cli import main

ENV = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}


class Pair(nn.Module):
    def __init__(self, features=4, inputs=1, outputs=1):
        super().__init__()
        self.fc, self.inputs, self.outputs = nn.Linear(features, 3), inputs, outputs

    def forward(self, *xs):
        y = sum(self.fc(x) for x in xs)
        return (y, y * 2) if self.outputs == 2 else y


def _pt2(path, features=4, inputs=1, outputs=1):
    torch.manual_seed(0)
    model = Pair(features, inputs, outputs).eval()
    torch.export.save(torch.export.export(model, tuple(torch.randn(2, features) for _ in range(inputs))), path)
    return path


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


STAGE = re.compile(r"^  \S+ +\d+\.\d+s$")  # a finished stage's plain progress line (progress.stage_line)


def _one_line(run_or_stderr):
    """The one error line; the plain lines of stages finished before the failure may precede it, nothing else."""
    err = run_or_stderr if isinstance(run_or_stderr, str) else run_or_stderr.stderr
    lines = [line for line in err.splitlines() if not STAGE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("portx: "), err
    assert "Traceback" not in err and "Logging error" not in err
    return lines[0]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return _pt2(tmp_path_factory.mktemp("src") / "lin.pt2")


# ---- tolerances and seeds ----

TOLERANCES = [("convert", "--atol", "nan"), ("convert", "--atol", "inf"), ("convert", "--atol", "-inf"),
              ("convert", "--atol", "-1e-3"), ("convert", "--atol", "1e400"), ("convert", "--rtol", "NaN"),
              ("convert", "--rtol", "Infinity"), ("convert", "--rtol", "-1"), ("verify", "--atol", "nan"),
              ("verify", "--rtol", "-0.5"), ("verify", "--rtol", "inf")]


@pytest.mark.parametrize("command, option, value", TOLERANCES, ids=[" ".join(c) for c in TOLERANCES])
def test_nan_infinite_or_negative_tolerance_exits_2(tmp_path, source, converted, command, option, value):
    out = tmp_path / "out"
    args = [source, "-o", out] if command == "convert" else [source, converted]
    run = _run(command, *args, f"{option}={value}")
    assert run.exit_code == 2, run.output
    line = _one_line(run)
    assert line.startswith(f"portx: {option} ") and "finite number >= 0" in line
    assert not out.exists() and not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


@pytest.mark.parametrize("seed", ["-5", "-1", "-99999999999999999999"])
def test_negative_seed_exits_2(source, converted, seed):
    run = _run("verify", source, converted, f"--seed={seed}")
    assert run.exit_code == 2, run.output
    assert "must be 0 or more" in _one_line(run)


def test_zero_tolerances_and_large_seed_are_accepted(source, converted):
    run = _run("verify", source, converted, "--atol", "0.001", "--rtol", "0", "--seed", str(2**40))
    assert run.exit_code == 0, run.output


# ---- verify against a different model is a usage error (2), not a verification failure (1) ----

OTHER = {"other_input_shape": dict(features=5), "two_inputs": dict(inputs=2), "two_outputs": dict(outputs=2)}


@pytest.mark.parametrize("kind", OTHER)
def test_verify_with_another_model_exits_2(tmp_path, converted, kind):
    other = _pt2(tmp_path / "other.pt2", **OTHER[kind])
    for extra in ([], ["--trace", "--json"]):
        run = _run("verify", other, converted, *extra)
        assert run.exit_code == 2, run.output
        line = _one_line(run)
        assert "was converted from another model or for other input shapes" in line and str(converted) in line


def test_verify_torch_xla_folder_with_another_keras_model_exits_2(tmp_path):
    import keras

    def dense(path, features):
        keras.utils.set_random_seed(0)
        keras.Sequential([keras.Input((features,)), keras.layers.Dense(3)]).save(path)
        return path

    out = tmp_path / "out"
    run = _run("convert", dense(tmp_path / "a.keras", 4), "--to", "torch-xla", "-o", out, "--no-verify")
    assert run.exit_code == 0, run.output
    run = _run("verify", dense(tmp_path / "b.keras", 6), out)
    assert run.exit_code == 2, run.output
    assert "was converted from another model" in _one_line(run)


# ---- framework loggers and warnings: one line unless --debug ----

def _cut(data):
    return data[: len(data) // 2]


def _cut_tail(data):
    return data[:-10]


def _zero_middle(data):
    third = len(data) // 3
    return data[:third] + b"\0" * third + data[2 * third:]


@pytest.mark.parametrize("damage", [_cut, _cut_tail, _zero_middle], ids=["half", "tail", "zeroed"])
@pytest.mark.parametrize("command", ["convert", "inspect"])
def test_damaged_pt2_gives_exactly_one_line(tmp_path, source, damage, command):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(damage(source.read_bytes()))
    args = ["-o", str(tmp_path / "out")] if command == "convert" else []
    proc = subprocess.run([sys.executable, "-m", "portx.cli", command, str(bad), *args], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in _one_line(proc.stderr)
    assert not (tmp_path / "out").exists()


NOISY = '''
import io, logging, sys, warnings
import portx.api

real = portx.api.convert


def noisy(*args, **kwargs):
    """What torch, JAX and absl do on a bad file: log a traceback, log through a dead stream, warn."""
    try:
        raise RuntimeError("inner failure")
    except RuntimeError:
        logging.getLogger("torch.export").warning("Ran into the following error when deserializing", exc_info=True)
    dead = io.StringIO()
    logging.getLogger("jax").addHandler(logging.StreamHandler(dead))
    dead.close()
    logging.getLogger("jax").error("through a stream that is gone")  # '--- Logging error ---' plus a traceback
    logging.getLogger("absl").warning("absl has something to say")
    warnings.warn("a framework's warning", UserWarning)
    return real(*args, **kwargs)


portx.api.convert = noisy
from portx.cli import main
main()
'''


@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "debug"])
def test_framework_logs_are_silenced_unless_debug(tmp_path, source, debug):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(_cut(source.read_bytes()))
    script = tmp_path / "noisy.py"
    script.write_text(NOISY)
    proc = subprocess.run([sys.executable, str(script), "convert", str(bad), "-o", str(tmp_path / "out"),
                           *(["--debug"] if debug else [])], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    if debug:  # --debug shows everything the frameworks said, and portx's traceback
        assert "Ran into the following error" in proc.stderr and "Traceback" in proc.stderr
        assert proc.stderr.splitlines()[-1].startswith("portx: ")
    else:
        assert str(bad) in _one_line(proc.stderr)


def test_cli_leaves_logging_and_warnings_as_it_found_them(source, converted):
    import logging
    import warnings

    disabled = logging.root.manager.disable
    assert _run("verify", source, converted).exit_code == 0
    assert logging.root.manager.disable == disabled and logging.raiseExceptions is True
    assert not [f for f in warnings.filters if f[0] == "ignore" and f[2] is Warning]  # the CLI's blanket filter
