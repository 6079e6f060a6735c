"""Names in emitted block code a person would write (targets/structure.py, targets/arg_names.py): a source that spells
its blocks with capitals (``self.Layer1 = nn.ModuleList(...)``, Keras ``Block_1_conv``) is structured like one in
lower case, its paths kept (Note [block names in the source's case])."""
import keras
import numpy as np
import torch
from keras import layers
from torch import nn

import portx

__all__ = []


class _Unit(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x


class _CapitalNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.Stem = nn.Conv2d(3, 8, 1)
        self.Layer1 = nn.ModuleList([_Unit(8) for _ in range(3)])

    def forward(self, x):
        x = self.Stem(x)
        for unit in self.Layer1:
            x = unit(x)
        return x


def _capital_net():
    torch.manual_seed(0)
    net = _CapitalNet().eval()
    with torch.no_grad():
        for unit in net.Layer1:
            unit.bn.running_mean.uniform_(-0.5, 0.5)
    return net, torch.randn(1, 3, 8, 8)


def test_a_torch_source_with_capital_block_names_is_one_class_at_its_source_paths(tmp_path):
    source, x = _capital_net()
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=(x,))  # verifies
    model, code = result.model, result.files["code"].read_text()
    assert set(model.state_dict()) == set(source.state_dict())  # Layer1.0.conv.weight, not layer1.0...
    assert {type(unit).__name__ for unit in model.Layer1} == {"_Unit"} and code.count("(nn.Module):") == 2
    assert "self.Layer1 = nn.Sequential(*[_Unit() for _ in range(3)])" in code


def test_a_torch_source_with_capital_block_names_is_one_keras_function(tmp_path):
    source, x = _capital_net()
    result = portx.convert(source, out=tmp_path / "out", to="keras-jax", example_inputs=(x,))  # verifies
    code = result.files["code"].read_text()
    assert 'name=f"{name}_conv"' in code and 'name=f"Layer1_{i}")' in code  # called in a loop, names as the source's
    assert {"Layer1_0_conv", "Layer1_1_bn"} <= {layer.name for layer in result.model.layers}


def _keras_capital_model():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = layers.Conv2D(8, 1, name="Stem")(inputs)
    for i in range(1, 4):
        y = layers.Conv2D(8, 3, padding="same", name=f"Block_{i}_conv")(x)
        y = layers.BatchNormalization(name=f"Block_{i}_bn")(y)
        x = layers.Add(name=f"Block_{i}_add")([x, layers.ReLU(name=f"Block_{i}_relu")(y)])
    return keras.Model(inputs, x)


def test_a_keras_source_with_capital_block_names_is_structured_on_both_targets(tmp_path):
    model = _keras_capital_model()
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 3)).astype("float32")
    to_keras = portx.convert(model, out=tmp_path / "k", to="keras-jax")  # verifies
    code = to_keras.files["code"].read_text()
    assert "for i in range(1, 4):" in code and 'name=f"Block_{i}")' in code
    assert {w.path for w in to_keras.model.weights} == {w.path for w in model.weights}
    to_torch = portx.convert(model, out=tmp_path / "t", to="torch-xla")
    net = to_torch.model
    assert isinstance(net.get_submodule("Block.2.conv"), nn.Conv2d) and type(net.Block[0]).__name__ == "Block"
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, np.asarray(model(x)), atol=1e-4)
