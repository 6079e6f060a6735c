"""Gradients paired by identity (Note [gradient pairing]): layer names that collide once sanitised.

Each name below becomes a different Keras layer name in the converted model (``Conv`` -> ``conv``, ``conv`` ->
``conv_1``, ``conv_1`` -> ``conv_1_1``, NUL / TAB / CR / U+2028 / U+0085 -> ``con_v``, ``con_v_1``, ...), so pairing
by sanitised name paired the wrong tensors. The proof that each weight is in its own layer: the model is one
branch per name, each branch its own output; perturbing one source weight moves only its branch's output in the
converted model.
"""
import keras
import numpy as np
import pytest
import torch
from torch import nn

import portx

NAMES = ["Conv", "conv", "c-o-n-v", "conv_1", "CONV", "con\u2028v", "con\x85v", "con\rv", "con\tv", "con\x00v",
         "__class__", "__init__"]
NORMED = {1, 3, 9}  # branches with a BatchNormalization after the conv: default gamma/beta equal in every one


def _branches():
    """One input, one branch per name (a 1x1 conv, some with a batch norm), one output per branch."""
    keras.utils.set_random_seed(0)
    x = keras.Input((4, 4, 2), name="img")
    outs = []
    for i, name in enumerate(NAMES):
        y = keras.layers.Conv2D(2, 1, name=name)(x)
        outs.append(keras.layers.BatchNormalization(name=f"{name}_bn")(y) if i in NORMED else y)
    return keras.Model(x, outs, name="collide")


@pytest.fixture(scope="module")
def model():
    return _branches()


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_colliding_layer_names_pair_gradients_by_identity(tmp_path, model, to):
    result = portx.convert(model, to=to, out=tmp_path / "out", grad=True)
    grads = result.report["gradients"]
    trainable = sorted(v.path for v in model.trainable_variables)
    assert grads["passed"] and not grads["unmatched_source"] and not grads["unmatched_converted"], grads
    assert sorted(row["name"] for row in grads["parameters"]) == trainable
    separator = "/" if to == "keras-jax" else "."
    converted_layer = {row["name"].rsplit("/", 1)[0]: row["converted"].rsplit(separator, 1)[0]
                       for row in grads["parameters"]}
    assert len(set(converted_layer.values())) == len(converted_layer)  # one converted layer per source layer


# the forward check already places each conv (random weights, one output per branch); a batch norm's default
# gamma and beta are equal in every branch, so only a perturbation shows which branch holds them
@pytest.mark.parametrize("to,layer,weight", [("keras-jax", "conv_1_bn", 0), ("torch-xla", "con\x00v_bn", 1)])
def test_perturbing_one_source_weight_moves_only_its_layers_output(tmp_path, to, layer, weight):
    model = _branches()  # its own copy: the weight is perturbed in place
    arrays = [np.random.default_rng(0).normal(size=(2, 4, 4, 2)).astype(np.float32)]
    before = portx.convert(model, to=to, out=tmp_path / "before", verify=False)
    values = model.get_layer(layer).get_weights()
    values[weight] = values[weight] + 0.5
    model.get_layer(layer).set_weights(values)
    after = portx.convert(model, to=to, out=tmp_path / "after")  # verified: the outputs match the perturbed source
    want = [np.asarray(o) for o in model(arrays[0])]
    moved = [i for i, (a, b) in enumerate(zip(_run(before, arrays), _run(after, arrays))) if not np.allclose(a, b)]
    branch = NAMES.index(layer[: -len("_bn")] if layer.endswith("_bn") else layer)
    assert moved == [branch], (moved, branch)
    np.testing.assert_allclose(_run(after, arrays)[branch], want[branch], rtol=1e-4, atol=1e-5)


def _run(result, arrays):
    """The converted model's outputs on ``arrays`` (NumPy, in the source's layout)."""
    model = result.model
    if isinstance(model, torch.nn.Module):
        with torch.no_grad():
            out = model(*[torch.from_numpy(a) for a in arrays])
        return [o.numpy() for o in out]
    return [np.asarray(o) for o in model(arrays[0])]


class _CaseClash(nn.Module):
    """Module names that differ only in case or by a digit suffix: one key each once lower-cased."""

    def __init__(self):
        super().__init__()
        self.Conv, self.conv, self.CONV, self.conv_1 = (nn.Linear(4, 4) for _ in range(4))
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.conv_1(self.CONV(self.conv(self.bn(self.Conv(x)))))


def test_a_torch_source_whose_names_differ_in_case_pairs_by_identity(tmp_path):
    torch.manual_seed(0)
    source = _CaseClash().eval()
    result = portx.convert(source, example_inputs=(torch.randn(2, 4),), to="keras-jax", out=tmp_path / "k",
                           grad=True)
    grads = result.report["gradients"]
    assert grads["passed"] and grads["matched"] == 10 and not grads["unmatched_source"], grads
    pairs = {row["name"]: row["converted"] for row in grads["parameters"]}
    assert pairs["Conv.weight"] != pairs["conv.weight"] and len(set(pairs.values())) == 10, pairs
