"""Keras blocks whose layers carry the block's number (keras.applications ConvNeXt's downsampling ``Sequential``s)
written as one torch class that registers each submodule under its source's name (Note [submodules named after their
block] in src/portx/targets/torch_xla/numbered.py): verified, the state_dict keys the Keras paths."""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from keras import layers  # noqa: E402

import portx  # noqa: E402
from portx.options import Checks, Output  # noqa: E402
from tests.support.structured_code import assert_structured  # noqa: E402


def _downsampling_model(blocks=3):
    """A stem, then ``blocks`` nested Sequentials named as ConvNeXt's (``net_downsampling_block_0`` holding
    ``net_downsampling_conv_0``), a ReLU between them."""
    keras.utils.set_random_seed(0)
    inp = keras.Input((16, 16, 4))
    x = layers.Conv2D(8, 1, name="net_stem")(inp)
    for i in range(blocks):
        c = 8 * 2 ** i
        x = keras.Sequential([layers.LayerNormalization(epsilon=1e-6, name=f"net_downsampling_layernorm_{i}"),
                              layers.Conv2D(2 * c, 2, strides=2, name=f"net_downsampling_conv_{i}"),
                              layers.ReLU(name=f"net_downsampling_relu_{i}"),
                              layers.Conv2D(2 * c, 1, name=f"net_downsampling_project_{i}")],
                             name=f"net_downsampling_block_{i}")(x)
        x = layers.Activation("relu", name=f"net_relu_{i}")(x)
    return keras.Model(inp, x)


def test_blocks_named_after_their_number_are_one_class_at_the_keras_paths(tmp_path):
    model = _downsampling_model()
    result = portx.convert(model, to="torch-xla", checks=Checks(grad=False, mesh=None),
                           output=Output(out=tmp_path / "out"))
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    shape = assert_structured(result, "torch-xla")
    code = result.files["code"].read_text()
    assert shape["defs"] == 1 and "self.add_module(f'net_downsampling_conv_{n}', " in code, code
    assert "layernorm, conv, project = self.children()" in code, code
    net = result.model
    paths = [w.path.rpartition("/")[0].replace("/", ".") for w in model.weights]
    keys = [k.rpartition(".")[0] for k in net.state_dict()]
    assert keys == paths  # the source's paths, in its order
    x = np.random.default_rng(0).normal(size=(2, 16, 16, 4)).astype(np.float32)
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, np.asarray(model(x)), rtol=1e-4, atol=1e-5)
