"""Outputs keep the source's structure and rank: 0-d tensors stay 0-d, nested dicts/tuples/lists stay nested."""
import numpy as np
import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main


class Scalar(nn.Module):
    def forward(self, x):
        return x * 2 + 1


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x)
        return {"logits": y, "extra": (y.sum(), [y * 2, y.mean(dim=0)])}


def test_zero_d_input_and_output_keep_rank(tmp_path):
    result = portx.convert(Scalar(), example_inputs=(torch.tensor(3.0),), out=tmp_path / "out")
    assert result.report["verification"]["passed"]
    assert result.report["inputs"][0][1] == [] and result.report["outputs"][0][1] == []
    assert np.asarray(result.model(np.float32(3.0))).shape == ()
    assert float(result.model(np.float32(3.0))) == 7.0


def test_nested_outputs_keep_their_structure(tmp_path):
    model, x = Nested().eval(), torch.randn(2, 4)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "m.pt2")
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    from portx.targets.codegen import import_by_path

    emitted = import_by_path(tmp_path / "out" / "model.py").load_model()
    got, want = emitted(x.numpy()), model(x)
    assert list(got) == ["logits", "extra"] and isinstance(got["extra"], tuple) and isinstance(got["extra"][1], list)
    np.testing.assert_allclose(np.asarray(got["logits"]), want["logits"].detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(np.asarray(got["extra"][1][1]), want["extra"][1][1].detach().numpy(), atol=1e-5)
    assert np.asarray(got["extra"][0]).shape == ()
    verify = CliRunner().invoke(main, ["verify", str(tmp_path / "m.pt2"), str(tmp_path / "out")])
    assert verify.exit_code == 0, verify.output


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
@pytest.mark.parametrize("which", ["atol", "rtol"])
def test_api_rejects_tolerances_that_disable_verification(tmp_path, bad, which):
    with pytest.raises(ValueError, match=which):
        portx.convert(Scalar(), example_inputs=(torch.tensor(3.0),), out=tmp_path / "out", **{which: bad})
    assert not (tmp_path / "out").exists()


def test_strict_tpu_fails_when_the_proof_was_skipped(tmp_path, monkeypatch):
    import importlib.util

    import keras

    from portx.errors import NotTpuLegal

    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchax" else real(name, *a))
    with pytest.raises(NotTpuLegal, match="proof was skipped"):
        portx.convert(model, to="torch-xla", out=tmp_path / "out", strict_tpu=True)
    assert not (tmp_path / "out").exists()
    result = portx.convert(model, to="torch-xla", out=tmp_path / "out2")  # without --strict-tpu: converts, says so
    assert result.report["tpu"]["verdict"] == "skipped"
