"""Keras -> PyTorch end to end: the CLI on .keras/.h5 files, the emitted module in a fresh process,
the torchax TPU proof, bad Keras inputs, a small Keras transformer (Embedding, causal MultiHeadAttention,
LayerNormalization, Dense) and the torch -> keras-jax -> torch round trip."""
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import torch

import portx
from portx.cli import main as cli_main
from portx.targets.codegen import import_by_path
from tests.support.structured_code import assert_structured
from tests.support.unsupported import AlsoUnsupportedLayer, UnsupportedLayer
from click.testing import CliRunner


def _small_cnn():
    keras.utils.set_random_seed(0)
    x = keras.Input((16, 16, 3), name="image")
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="stem")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", name="dw")(y)
    y = keras.layers.ReLU(max_value=6.0, name="relu6")(y)
    skip = keras.layers.Conv2D(8, 1, name="proj")(y)
    y = keras.layers.Add(name="add")([y, skip])
    y = keras.layers.MaxPooling2D(name="pool")(y)
    y = keras.layers.GlobalAveragePooling2D(name="gap")(y)
    y = keras.layers.Dense(5, activation="softmax", name="head")(y)
    model = keras.Model(x, y, name="small_cnn")
    # non-trivial batch-norm statistics, so folding and layout changes are exercised
    bn = model.get_layer("bn")
    rng = np.random.default_rng(1)
    bn.set_weights([rng.uniform(0.5, 1.5, 8), rng.normal(0, 0.1, 8), rng.normal(0, 0.1, 8), rng.uniform(0.5, 2, 8)])
    return model


def _cli(*args):
    result = CliRunner().invoke(cli_main, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_cli_converts_keras_file_to_torch_module_that_loads_without_portx_or_keras(tmp_path, suffix):
    model = _small_cnn()
    src = tmp_path / f"cnn{suffix}"
    model.save(src)
    out = tmp_path / "out"
    code, text = _cli("convert", src, "--to", "torch-xla", "-o", out)
    assert code == 0, text
    assert "verified" in text
    assert {"model.py", "model.safetensors", "report.json"} <= set(os.listdir(out))
    report = json.loads((out / "report.json").read_text())
    assert report["target"] == "torch-xla"
    assert report["verification"]["passed"] is True
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    x = np.random.default_rng(3).standard_normal((1, 16, 16, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np, torch
        spec = importlib.util.spec_from_file_location("emitted", {str(out / "model.py")!r})
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        net = mod.load_model()
        assert not net.training
        with torch.no_grad():
            y = net(torch.from_numpy(np.load({str(tmp_path / "x.npy")!r})))
        np.save({str(tmp_path / "y.npy")!r}, y.numpy())
        assert "portx" not in sys.modules and "keras" not in sys.modules, sorted(m for m in sys.modules if "keras" in m)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode == 0, run.stderr[-2000:]
    want = np.asarray(model(x))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, atol=1e-5, rtol=1e-4)


def test_emitted_module_is_readable_pytorch_named_after_keras_layers(tmp_path):
    result = portx.convert(_small_cnn(), to="torch-xla", out=tmp_path / "out")
    code = (tmp_path / "out" / "model.py").read_text()
    assert "import keras" not in code and "portx" not in code.split('"""', 2)[-1] and "torch_xla" not in code
    assert "nn.Conv2d" in code and "nn.Linear" in code
    names = dict(result.model.named_modules())
    assert any("stem" in n for n in names) and any("head" in n for n in names), sorted(names)
    assert_structured(result, "torch-xla", repeats=False)  # no two layers alike: flat


def test_lambda_layer_refused_in_safe_mode_naming_the_layer(tmp_path):
    x = keras.Input((4,))
    y = keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)
    src = tmp_path / "lam.keras"
    keras.Model(x, y).save(src)
    code, text = _cli("convert", src, "--to", "torch-xla", "-o", tmp_path / "out")
    assert code == 2, text
    assert "double_it" in text and "--unsafe-keras" in text
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("to", ["torch-xla", "keras-jax"])
def test_lambda_layer_converts_with_unsafe_keras_as_the_ops_it_computes(tmp_path, to):
    keras.utils.set_random_seed(0)
    x = keras.Input((4,), name="features")
    y = keras.layers.Lambda(lambda t: t * t * 2.0 + 1.0, name="square")(keras.layers.Dense(3)(x))
    src = tmp_path / "lam.keras"
    keras.Model(x, y).save(src)
    code, text = _cli("convert", src, "--to", to, "-o", tmp_path / "out", "--unsafe-keras")
    assert code == 0, text
    emitted = (tmp_path / "out" / "model.py").read_text()
    assert "square" in emitted and "lambda" not in emitted.lower()  # the ops (named by scope), not its Python


def test_unsupported_keras_layers_are_all_listed_with_exit_3(tmp_path):
    x = keras.Input((6, 4))
    y = UnsupportedLayer(name="odd_a")(x)
    y = AlsoUnsupportedLayer(name="odd_b")(y)
    src = tmp_path / "odd.keras"
    keras.Model(x, y).save(src)
    code, text = _cli("convert", src, "--to", "torch-xla", "-o", tmp_path / "out")
    assert code == 3, text
    assert "UnsupportedLayer at odd_a" in text and "AlsoUnsupportedLayer at odd_b" in text
    assert not (tmp_path / "out").exists()


def test_round_trip_torch_to_keras_to_torch_reproduces_the_source(tmp_path):
    torch.manual_seed(0)
    source = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), torch.nn.Hardswish(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()
    x = torch.randn(1, 3, 16, 16)
    to_keras = portx.convert(source, example_inputs=(x,), to="keras-jax", out=tmp_path / "k")
    back = portx.convert(to_keras.model, to="torch-xla", out=tmp_path / "t")
    assert_structured(to_keras, "keras-jax", repeats=False)  # an nn.Sequential of single layers: no blocks
    assert_structured(back, "torch-xla", repeats=False)
    with torch.no_grad():
        want = source(x).numpy()
        got = back.model(x).numpy()
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def _small_transformer(vocab=40, seq=8, dim=16):
    """Token embedding, one pre-norm decoder block (causal self-attention, GELU MLP) and a vocabulary head."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((seq,), dtype="int32", name="ids")
    h = keras.layers.Embedding(vocab, dim, name="tok")(ids)
    a = keras.layers.LayerNormalization(name="ln1")(h)
    a = keras.layers.MultiHeadAttention(4, dim // 4, name="attn")(a, a, use_causal_mask=True)
    h = keras.layers.Add(name="res1")([h, a])
    m = keras.layers.LayerNormalization(name="ln2")(h)
    m = keras.layers.Dense(4 * dim, activation="gelu", name="up")(m)
    m = keras.layers.Dense(dim, name="down")(m)
    h = keras.layers.Add(name="res2")([h, m])
    h = keras.layers.LayerNormalization(name="ln_f")(h)
    return keras.Model(ids, keras.layers.Dense(vocab, name="lm_head")(h), name="tiny_decoder")


def test_keras_transformer_with_causal_attention_converts_to_torch(tmp_path):
    model = _small_transformer()
    src = tmp_path / "decoder.keras"
    model.save(src)
    code, text = _cli("convert", src, "--to", "torch-xla", "-o", tmp_path / "out")
    assert code == 0, text
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verification"]["passed"] is True and report["tpu"]["verdict"] == "ok", report
    net = import_by_path(tmp_path / "out" / "model.py").load_model()
    ids = np.random.default_rng(5).integers(0, 40, (1, 8)).astype(np.int32)
    with torch.no_grad():
        got = net(torch.from_numpy(ids)).numpy()
    want = np.asarray(model.predict(ids, verbose=0))
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)
    # causality: changing the last token leaves every earlier position's logits unchanged
    edited = ids.copy()
    edited[0, -1] = (edited[0, -1] + 1) % 40
    with torch.no_grad():
        again = net(torch.from_numpy(edited)).numpy()
    np.testing.assert_allclose(again[:, :-1], got[:, :-1], atol=1e-6)
    assert not np.allclose(again[:, -1], got[:, -1])
