"""The frameworks' loggers are silent through the Python API as through the CLI (logs.py), unless debug=True."""
import logging

import pytest
import torch

import portx
from portx.logs import quiet_unless_debug


class _Cdist(torch.nn.Module):
    def forward(self, a, b):
        return torch.cdist(a, b)


def test_a_probes_expected_failure_prints_nothing_through_the_api(tmp_path, capfd):
    """Batch 1 against batch 3 broadcasts; the batch probe's other sizes do not, and torch's fake_tensor.py logs
    each refusal as a multi-line E-line traceback (66 lines before logs.py)."""
    before = logging.root.manager.disable
    result = portx.convert(_Cdist(), example_inputs=(torch.randn(1, 5, 3), torch.randn(3, 4, 3)), to="keras-jax",
                           out=tmp_path / "out", verify=False)
    out, err = capfd.readouterr()
    assert result.ok and result.report["dynamic"][0]["free"] is False
    assert err == "" and out == "", err[-2000:]
    assert logging.root.manager.disable == before  # restored


def test_debug_keeps_the_loggers_and_the_state_comes_back(caplog):
    logger = logging.getLogger("torch._subclasses.fake_tensor")

    @quiet_unless_debug
    def work(debug=False):
        logger.error("failed while attempting to run meta")
        return logging.root.manager.disable

    with caplog.at_level(logging.ERROR):
        assert work() == logging.CRITICAL and not caplog.records
        assert work(debug=True) == logging.NOTSET and len(caplog.records) == 1
    assert logging.root.manager.disable == logging.NOTSET


class _DataDependent(torch.nn.Module):
    """``gaussian_nll_loss``'s check: ``if torch.any(var < 0)`` branches on a value, which torch.export refuses."""

    def forward(self, x):
        return x * 2 if bool(torch.any(x < 0)) else x


def test_a_failed_trace_prints_no_graph_through_the_api(tmp_path, capfd):
    """torch.export prints a failed trace's partial graph with a bare print (Note [framework prints]); portx's
    one-line refusal is all that shows, and ``debug=True`` keeps torch's dump."""
    with pytest.raises(portx.BadInput, match="torch.export could not trace _DataDependent"):
        portx.convert(_DataDependent(), example_inputs=(torch.randn(2, 3),), to="keras-jax", out=tmp_path / "out")
    out, err = capfd.readouterr()
    assert err == "" and out == "", err[-2000:]
    with pytest.raises(portx.BadInput):
        portx.convert(_DataDependent(), example_inputs=(torch.randn(2, 3),), to="keras-jax", out=tmp_path / "o2",
                      debug=True)
    assert "def forward" in capfd.readouterr().err


def test_tensorflow_that_keras_imports_behind_portx_prints_nothing(tmp_path):
    """Note [tensorflow imported behind portx]: with the [tf] extra installed, Keras imports TensorFlow while
    serialising a Lambda, and TensorFlow's native start-up lines bypass every logger; the CLI prints none of them
    (and, with --debug, they are left alone)."""
    import importlib.util
    import os
    import subprocess
    import sys

    import keras

    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("the [tf] extra is not installed (CI installs it)")
    x = keras.Input((4,), name="features")
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)).save(tmp_path / "lam.keras")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    command = [sys.executable, "-m", "portx.cli", "convert", str(tmp_path / "lam.keras"), "--unsafe-keras",
               "--no-verify"]
    run = subprocess.run(command + ["-o", str(tmp_path / "out")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert not any(word in run.stderr for word in ("absl", "oneDNN", "cudart", "I0000")), run.stderr[-2000:]
    debug = subprocess.run(command + ["-o", str(tmp_path / "out2"), "--debug"], env=env, capture_output=True,
                           text=True, timeout=600)
    assert debug.returncode == 0 and "absl" in debug.stderr  # --debug keeps what TensorFlow says
