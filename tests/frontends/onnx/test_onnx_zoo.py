"""Every zoo model (tests/support/zoo.py) exported to ONNX by ``torch.onnx.export`` (the classic exporter at opset
17, and the default dynamo exporter) and converted to both targets, verified against onnxruntime.

CI runs ``QUICK`` (a CNN and a transformer, both exporters); ``PORTX_SLOW=1`` runs every model.
"""
import os

import pytest

from tests.frontends.onnx.test_onnx_models import _converted, export
from tests.support.harness import TARGETS
from tests.support.zoo import ZOO

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")
QUICK = {("resnet", "legacy-17"), ("vit", "dynamo")}
EXPORTERS = {"legacy-17": False, "dynamo": True}


def _params():
    slow = os.environ.get("PORTX_SLOW") == "1"
    for name in ZOO:
        for how in EXPORTERS:
            for target in TARGETS:
                marks = () if (name, how) in QUICK else (pytest.mark.slow,)
                if (name, how) in QUICK or slow:
                    yield pytest.param(name, how, target, id=f"{name}-{how}-{target}", marks=marks)
    if not slow:
        yield pytest.param("", "", "", id="every-zoo-model", marks=pytest.mark.slow)


@pytest.mark.parametrize("name, how, target", list(_params()))
def test_zoo_model_exported_to_onnx_converts_and_verifies(tmp_path, name, how, target):
    model, inputs = ZOO[name]()
    path = export(model, inputs, tmp_path / f"{name}.onnx", dynamo=EXPORTERS[how])
    result = _converted(path, target, tmp_path)
    assert max(row["max_abs"] for row in result.report["verification"]["outputs"]) < 1e-3
