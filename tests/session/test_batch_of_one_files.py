"""Note [batch of one, lowered] (frontends/__init__.py): a Keras file at its default example batch of 1 (or one
given with ``--input``) is resized to 2 rows before its first lowering, as a live module is traced at 2: two
lowerings (at 2 and 3), where it took three (1, then 2 and 3); the batch stays free, verified at the user's 1 and at
8. An ONNX file's batch of 1 is still lowered at 1 first (its dim_param may be a claim the graph contradicts)."""
import keras
import numpy as np
import pytest
import torch

import portx
from portx.frontends.keras.files import KerasSource
from portx.frontends.onnx.source import OnnxSource
from portx.options import Checks, Output, Shapes
from portx.targets import find_target
from tests.frontends.onnx.test_onnx_models import export
from tests.session.test_symbols_read_directly import SmallCNN

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")


def _lowered_at(monkeypatch, cls) -> list:
    """The input shapes of each lowering of a ``cls`` source."""
    seen, real = [], cls.lower

    def spy(self, *args, **kwargs):
        graph = real(self, *args, **kwargs)
        seen.append(tuple(v.type.shape[0] for v in graph.inputs))
        return graph

    monkeypatch.setattr(cls, "lower", spy)
    return seen


def _keras_file(path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16, 16, 3), name="img"), keras.layers.Conv2D(4, 3),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3)])
    model.save(path)
    return model


@pytest.mark.parametrize("kind, specs", [("onnx", ("x:1x3x16x16",)), ("keras", ()), ("keras", ("img:1x16x16x3",))],
                         ids=["onnx", "keras", "keras-input"])
def test_a_file_at_batch_one_is_lowered_at_two_and_three_only(kind, specs, monkeypatch, tmp_path):
    if kind == "onnx":
        module = SmallCNN().eval()
        path = export(module, (torch.randn(2, 3, 16, 16),), tmp_path / "m.onnx", False, {"x": {0: "b"}})
        shape, lowered = (3, 16, 16), _lowered_at(monkeypatch, OnnxSource)
    else:
        module, path = _keras_file(tmp_path / "m.keras"), tmp_path / "m.keras"
        shape, lowered = (16, 16, 3), _lowered_at(monkeypatch, KerasSource)
    result = portx.convert(str(path), to="keras-jax", shapes=Shapes(inputs=specs), checks=Checks(grad=False),
                           output=Output(out=tmp_path / "o"))
    # Keras before: [(1,), (2,), (3,)]; ONNX still so (Note [batch of one, lowered])
    assert lowered == ([(1,), (2,), (3,)] if kind == "onnx" else [(2,), (3,)]), lowered
    row = result.report["dynamic"][0]
    assert row["symbol"] == "batch" and row["free"] and row["example_size"] == 1, result.report["warnings"]
    assert [c["size"] for c in row["verified"]] == [1, 8] and result.report["verification"]["inputs"][0][1][0] == 1
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, *shape)).astype(np.float32)
        want = module(torch.from_numpy(x)).detach().numpy() if kind == "onnx" else np.asarray(module(x))
        np.testing.assert_allclose(find_target("keras-jax").run(result.model, [x])[0], want, rtol=1e-4, atol=1e-4)
