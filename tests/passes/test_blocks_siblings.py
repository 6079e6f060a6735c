"""passes/blocks_siblings.py: sibling submodules of one source class are blocks whatever their names (Note [sibling
blocks]), written once on both targets with the source's state_dict keys and Keras layer names; siblings that differ,
single layers and generic containers of other parts stay flat."""
import re

import torch
from torch import nn

import portx
from tests.support.structured_code import structure


class ResBlock(nn.Module):
    def __init__(self, c, relu=True):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 1)
        self.bn1, self.bn2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
        self.relu = relu

    def forward(self, x):
        h = self.bn1(self.conv1(x))
        return x + self.bn2(self.conv2(torch.relu(h) if self.relu else h))


def _conv_pair(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.Conv2d(cout, cout, 1),
                         nn.BatchNorm2d(cout), nn.ReLU())


class Siblings(nn.Module):
    """Three ResBlocks at two widths under ``body`` (no number in their names) and three ``nn.Sequential`` pairs."""

    def __init__(self):
        super().__init__()
        self.body = nn.Module()
        self.body.first, self.body.second, self.body.third = ResBlock(4), ResBlock(8), ResBlock(8)
        self.widen = nn.Conv2d(4, 8, 1)
        self.left, self.mid, self.right = _conv_pair(8, 8), _conv_pair(8, 8), _conv_pair(8, 6)

    def forward(self, x):
        x = self.body.third(self.body.second(self.widen(self.body.first(x))))
        return self.right(self.mid(self.left(x))).mean((2, 3))


def _model(cls=Siblings):
    torch.manual_seed(0)
    return cls().eval(), (torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(0)),)


def _keys(graph):
    return [b["key"] for b in graph.meta.get("blocks") or []]


def test_siblings_of_one_class_are_one_torch_class_with_the_source_keys(tmp_path):
    model, inputs = _model()
    result = portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "o")
    assert result.report["verification"]["passed"], result.report["verification"]
    assert _keys(result.graph) == ["body.first", "body.second", "body.third", "left", "mid", "right"]
    code = result.files["code"].read_text()
    assert code.count("class ResBlock(nn.Module):") == 1 and "self.body.first = ResBlock(4)" in code, code
    # Note [blocks of numbered parts]: the nn.Sequential's parts stay numbered (left.0.weight)
    assert code.count("class ConvBlock(nn.Sequential):") == 1 and "self.right = ConvBlock(6)" in code, code
    assert sorted(result.model.state_dict()) == sorted(model.state_dict())
    shape = structure(result.graph, "torch-xla")
    assert shape["defs"] == 2 and shape["lines"] < shape["flat"], shape


def test_siblings_of_one_class_are_one_keras_function_under_the_flat_names(tmp_path):
    model, inputs = _model()
    result = portx.convert(model, example_inputs=inputs, to="keras-jax", out=tmp_path / "o")
    assert result.report["verification"]["passed"], result.report["verification"]
    code = result.files["code"].read_text()
    assert code.count("\ndef res_block(") == 1 and code.count("\ndef conv_block(") == 1, code
    assert "name='body_first')" in code and "name='left')" in code, code
    shape = structure(result.graph, "keras-jax")
    assert shape["defs"] == 2 and shape["lines"] < shape["flat"], shape
    flat = portx.targets.TARGETS["keras-jax"].emitter(
        result.graph.replace(meta={**result.graph.meta, "blocks": []})).emit_graph()
    written = {layer.name for layer in result.model.layers if layer.weights}
    assert written == set(re.findall(r"name='(\w+)'", flat)) & written  # every layer named as the flat code names it
    assert {"body_first_conv1/kernel", "left_0/kernel", "right_1/gamma"} <= {w.path for w in result.model.weights}


class Unlike(nn.Module):
    """Siblings of one class that differ (one has a ReLU), leaf siblings, and nn.Sequential siblings alike in their
    ops but not in their parts' classes."""

    def __init__(self):
        super().__init__()
        self.a, self.b = ResBlock(4), ResBlock(4, relu=False)
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 4)
        self.p, self.q = nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Sequential(nn.Linear(4, 4), _Relu())

    def forward(self, x):
        x = self.b(self.a(x)).mean((2, 3))
        return self.q(self.p(self.fc2(self.fc1(x))))


class _Relu(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def test_unlike_siblings_leaf_layers_and_other_parts_stay_flat(tmp_path):
    model, inputs = _model(Unlike)
    result = portx.convert(model, example_inputs=inputs, to="keras-jax", out=tmp_path / "o", verify=False)
    assert _keys(result.graph) == []
    assert sorted(portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "t", verify=False)
                  .model.state_dict()) == sorted(model.state_dict())


def test_flat_names_with_a_shared_prefix_are_blocks_named_by_it():
    """Note [blocks named by a prefix]: portx's own Keras layers for sibling blocks (``stage1_dwconv``) are grouped
    by the prefix whose names another prefix's match; a numbered family (``conv_dw_1``, ``conv_dw_1_bn``) is cut at
    each block, and names no other prefix shares stay out."""
    from portx.passes.blocks_prefix import prefix_keys

    names = ["stem_0", "stage1_dwconv", "stage1_norm", "stage1_pwconv1", "stage1_pwconv2", "stage1",
             "stage2_dwconv", "stage2_norm", "stage2_pwconv1", "stage2_pwconv2", "stage2", "head", "down_0"]
    found = prefix_keys(names)
    assert found == {n: n.partition("_")[0] for n in names if n.startswith("stage")}, found
    family = prefix_keys(["conv_dw_1", "conv_dw_1_bn", "conv_dw_1_relu", "conv_dw_2", "conv_dw_2_bn", "conv_dw_2_relu"])
    assert set(family.values()) == {"conv_dw_1", "conv_dw_2"}, family
