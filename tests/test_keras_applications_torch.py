"""keras.applications models through ``portx convert --to torch-xla``, as a user runs it: the model saved
as ``.keras``, converted by the CLI (verification and the torchax TPU lowering on), then the emitted
``model.py`` imported and run on a batch in the model's own pixel range against Keras' ``predict``.

Models and input sizes are those of ``keras_harness.APPLICATIONS`` (weights=None, include_top=False,
batch-norm statistics redrawn from seed 0). MobileNetV2 and ResNet50 run in the normal suite; the others are
slow sweeps (``PORTX_SLOW=1``; 13 to 35 s each on 2 cores, 2 minutes for all ten with ``-n 2``).

Example:
    PORTX_SLOW=1 pytest tests/test_keras_applications_torch.py -k "ConvNeXt or EfficientNet"
"""
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from keras_harness import APPLICATIONS, build_application
from portx.cli import main
from portx.emitters.torch_xla import import_emitted_torch
from portx.equivalence import compare_arrays

__all__ = []


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if row[-1] else [])
                                  for n, row in APPLICATIONS.items()])
def test_application_converts_to_torch_verifies_and_lowers_for_tpu(name, tmp_path):
    model, x = build_application(name)
    src, out = tmp_path / f"{name}.keras", tmp_path / "out"
    model.save(src)
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out)])
    assert run.exit_code == 0, run.output
    report = json.loads((out / "report.json").read_text())
    assert report["verification"]["passed"] is True, report["verification"]
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    net = import_emitted_torch(out / "model.py").load_model()
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    result = compare_arrays(model.predict(x, verbose=0), got, atol=1e-5, rtol=1e-4)
    assert result["passed"], f"{name} on pixels: {result}"
