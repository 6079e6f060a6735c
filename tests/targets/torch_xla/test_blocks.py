"""Repeated blocks written once as an ``nn.Module`` class (targets/torch_xla/blocks.py): the first block of a chain,
which reads the model's input, is written like the others; each block owns its weightless modules (Note [weightless
modules] in targets/torch_xla/modules.py)."""
import numpy as np
import pytest
import torch
from torch import nn

import portx
from tests.support.structured_code import assert_structured
from tests.support.zoo import ZOO
from tests.test_zoo import REPEATS


class _Block(nn.Module):
    """A residual MLP block opening with an op that reads the block's input and no module (``first``): ``relu``
    (hoisted out of the first block while it read the model's input), ``scale`` (a relu on an input read once,
    written in place in every block but the first, whose input is the model's)."""

    def __init__(self, first, dropout=0.0):
        super().__init__()
        self.first, self.fc1, self.fc2 = first, nn.Linear(8, 16), nn.Linear(16, 8)
        self.drop = nn.Dropout(dropout) if dropout else None

    def forward(self, x):
        h = torch.relu(x) * 2 if self.first == "relu" else torch.relu(x)
        h = self.fc2(torch.relu(self.fc1(h)))
        h = self.drop(h) if self.drop is not None else h
        return x + h if self.first == "relu" else h


class _Chain(nn.Module):
    def __init__(self, first, dropout=0.0):
        super().__init__()
        self.blocks = nn.Sequential(*[_Block(first, dropout) for _ in range(3)])

    def forward(self, x):
        return self.blocks(x)


@pytest.mark.parametrize("first", ["relu", "scale"])
def test_blocks_whose_first_reads_the_model_input_are_one_class(first, tmp_path):
    torch.manual_seed(0)
    source, x = _Chain(first).eval(), torch.randn(2, 8)
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=(x,))  # verifies
    code = result.files["code"].read_text()
    assert assert_structured(result, "torch-xla")["defs"] == 1 and "class _Block(nn.Module):" in code
    assert "self.blocks = nn.Sequential(*[_Block() for _ in range(3)])" in code
    assert list(result.model.state_dict()) == list(source.state_dict())
    kept = x.clone()
    with torch.no_grad():
        np.testing.assert_allclose(result.model(x).numpy(), source(kept).numpy(), rtol=1e-5, atol=1e-5)
    assert torch.equal(x, kept), "a block class overwrote the model's input"  # Note [blocks overwrite their own values]


def _keras_blocks():
    """Three Keras layers ``layer_0``, ... whose inner Dropout Keras names itself model-wide (``dropout`` in one,
    ``dropout_1`` in the next), as keras-hub's attention does, beside a named one."""
    import keras

    class Block(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(8, name="dense")
            self.inner_dropout = keras.layers.Dropout(0.1)
            self.out_dropout = keras.layers.Dropout(0.1, name="output_dropout")
            self.norm = keras.layers.LayerNormalization(name="norm")

        def call(self, x):
            return self.norm(x + self.out_dropout(self.dense(self.inner_dropout(x))))

    keras.backend.clear_session()  # Keras numbers the names it gives from a process-wide count: `dropout` first
    keras.utils.set_random_seed(0)
    x = keras.Input((4, 8))
    h = keras.layers.Dense(8, name="embed")(x)
    for i in range(3):
        h = Block(name=f"layer_{i}")(h)
    return keras.Model(x, h)


@pytest.mark.parametrize("source", ["torch", "keras"])
def test_each_block_owns_its_dropouts_under_one_name(source, tmp_path):
    """Note [weightless modules]: a Dropout per block, not one declared in the first block that the others read (a
    forward argument of the class, or the blocks written flat)."""
    if source == "torch":
        torch.manual_seed(0)
        kwargs = {"example_inputs": (torch.randn(2, 8),)}
        model, names = _Chain("relu", dropout=0.1).eval(), {"drop"}
    else:
        model, kwargs, names = _keras_blocks(), {"grad": False}, {"dropout", "output_dropout"}
    result = portx.convert(model, out=tmp_path / "out", to="torch-xla", **kwargs)  # verifies
    assert assert_structured(result, "torch-xla")["defs"] == 1
    blocks = result.model.blocks if source == "torch" else result.model.layer
    owned = [{n: m for n, m in block.named_modules() if isinstance(m, nn.Dropout)} for block in blocks]
    assert all(set(o) == names for o in owned), owned
    assert len({id(m) for o in owned for m in o.values()}) == len(names) * len(blocks)
    forward = result.files["code"].read_text().split("def forward(self", 1)[1].split(")", 1)[0]
    assert "dropout" not in forward, forward  # no module handed to the class as an argument


def test_zoo_resnet_basic_blocks_are_one_class_with_an_optional_downsample(tmp_path):
    """Note [optional submodules] in targets/torch_xla/optional.py: two BasicBlocks a stage, a projection in the first
    of the second stage only, as torchvision writes it: one class, ``downsample=True`` where the source has one."""
    model, inputs = ZOO["resnet"]()
    result = portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "out")  # verifies
    code = result.files["code"].read_text()
    assert_structured(result, "torch-xla")
    assert code.split("class Model", 1)[0].count("(nn.Module):") == 1, code
    assert "BasicBlock(16, 32, 2, downsample=True)," in code and "if self.downsample is not None:" in code
    assert ") if downsample else None" in code and "stride=1" not in code
    assert list(result.model.state_dict()) == list(model.state_dict())
    assert result.model.layer1[0].downsample is None and isinstance(result.model.layer2[0].downsample, nn.Sequential)


class _Dilated(nn.Module):
    """A stage's blocks as torchvision's ``replace_stride_with_dilation`` makes them: the first block keeps the
    dilation before the stage (``padding=1``), the others dilate (``padding=2, dilation=2``)."""

    def __init__(self, dilation):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=dilation, dilation=dilation, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=dilation, dilation=dilation, bias=False)
        self.bn2 = nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + x)


class _DilatedStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.layer = nn.Conv2d(3, 4, 1), nn.Sequential(*[_Dilated(d) for d in (1, 2, 2, 2)])

    def forward(self, x):
        return self.layer(self.stem(x))


def test_blocks_that_differ_by_their_dilation_are_one_class(tmp_path):
    """Note [optional submodules] in targets/torch_xla/optional.py: ``dilation=1`` is written inside blocks before
    they are compared, as ``stride=1`` is, and left out where it is 1 in every block."""
    torch.manual_seed(0)
    model = _DilatedStage().eval()
    x = torch.randn(2, 3, 12, 12)
    result = portx.convert(model, example_inputs=(x,), to="torch-xla", out=tmp_path / "out")  # verifies
    code = result.files["code"].read_text()
    assert_structured(result, "torch-xla")
    assert code.split("class Model", 1)[0].count("(nn.Module):") == 1, code
    assert "dilation=padding" in code or "dilation=dilation" in code, code
    assert list(result.model.state_dict()) == list(model.state_dict())


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "mobilenetv3" else pytest.mark.slow)
                                  for n in sorted(set(ZOO) - {"resnet"})])
def test_zoo_model_straight_to_torch_is_structured_at_the_source_s_keys(name, tmp_path):
    """The zoo PyTorch -> torch-xla (tests/test_zoo.py goes to keras-jax, tests/test_zoo_both_ways.py back from the
    Keras model; the ResNet is the CI case above; MobileNetV3 in CI too): one class per kind of block the source
    repeats (``REPEATS``), and the source's state_dict keys in its order (MobileNetV3's squeeze-excite
    ``blocks.0.se.fc1``: Note [weightless modules]; GPT's tied ``tok.weight`` and ``lm_head.weight``), so that the
    source's state_dict loads strictly. The zoo Swin's relative position index and shift mask, non-persistent
    buffers its ``__init__`` computes, are non-persistent here too (Note [computed buffers] in
    src/portx/targets/torch_xla/shards.py)."""
    model, inputs = ZOO[name]()
    result = portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "out", grad=False)  # verifies
    assert_structured(result, "torch-xla", repeats=name in REPEATS)
    got, want = list(result.model.state_dict()), list(model.state_dict())
    assert got == want, (got, want)  # every key, in the source's order, and no other
    result.model.load_state_dict(model.state_dict(), strict=True)
