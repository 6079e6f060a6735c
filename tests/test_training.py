"""A converted model the user can train: parameters stay parameters, buffers and constants stay frozen,
BatchNorm and Dropout stay layers (``--fold-bn`` / ``--inference`` opt out), report["training"] counts
trainable elements on both sides, and the emitted files train, save and reload in a process that has
only keras+jax or only torch (no portx).
"""
import json
import re

import keras
import numpy as np
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main as cli_main
from tests.support.consumer import run_consumer


class Tokens(nn.Module):
    """A parameter used directly (positional embedding, a learnable scale), a buffer, BN, Dropout."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 4, 6, 6))
        self.scale = nn.Parameter(torch.tensor(1.5))
        self.register_buffer("offset", torch.full((1, 4, 6, 6), 0.25))
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4, momentum=0.2)
        self.drop2d = nn.Dropout2d(0.2)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(144, 3)

    def forward(self, x):
        y = self.drop2d(torch.relu(self.bn(self.conv(x)))) + self.pos * self.scale + self.offset
        return self.head(self.drop(y.flatten(1)))


def _tokens():
    torch.manual_seed(0)
    module = Tokens().eval()
    with torch.no_grad():  # statistics that are not the defaults, so a lost BN would show
        module.bn.running_mean.uniform_(-0.5, 0.5)
        module.bn.running_var.uniform_(0.5, 2.0)
    return module


def test_torch_to_keras_keeps_the_trainable_set_bn_and_dropout(tmp_path):
    result = portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to="keras-jax", out=tmp_path / "k")
    training = result.report["training"]
    assert training["mode"] == "training" and training["trainable_match"] and not training["folded"]
    assert training["parameters"]["source"]["trainable"] == sum(p.numel() for p in _tokens().parameters())
    code = (tmp_path / "k" / "model.py").read_text()
    assert "layers.BatchNormalization(epsilon=1e-05, momentum=0.8" in code
    assert "layers.Dropout(0.5, name=" in code
    assert re.search(r"layers\.Dropout\(0\.2, noise_shape=\(None, (None, 1, 1|1, 1, None)\)", code)  # either layout
    model = result.model
    trainable = {v.path for v in model.trainable_variables}
    assert {"pos/value", "scale/value"} <= trainable
    assert "offset/value" in {v.path for v in model.non_trainable_variables}
    assert not any("moving" in p for p in trainable)


def test_emitted_keras_fits_saves_and_reloads_with_plain_keras(tmp_path):
    portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to="keras-jax", out=tmp_path / "k")
    run_consumer(f"""
        import keras
        import numpy as np
        model = converted.load_model()
        keras.utils.set_random_seed(0)
        frozen = [np.array(v) for v in model.non_trainable_variables if "moving" not in v.path and "seed" not in v.path]
        rng = np.random.default_rng(0)
        x = rng.normal(size=(6, 3, 8, 8)).astype("float32")  # the batch is free: the example's was 2
        y = rng.normal(size=(6, 3)).astype("float32")
        model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
        before = model.evaluate(x, y, batch_size=3, verbose=0)  # inference mode: no dropout noise
        model.fit(x, y, epochs=20, batch_size=3, verbose=0)
        after = model.evaluate(x, y, batch_size=3, verbose=0)
        assert after < before, (before, after)
        after = [np.array(v) for v in model.non_trainable_variables if "moving" not in v.path and "seed" not in v.path]
        assert all(np.array_equal(a, b) for a, b in zip(frozen, after)), "a constant trained"
        model.save({str(tmp_path / "saved.keras")!r})
        again = keras.saving.load_model({str(tmp_path / "saved.keras")!r})
        for rows in (x[:1], x, x[:5]):
            np.testing.assert_allclose(np.asarray(again(rows)), np.asarray(model(rows)), rtol=1e-6, atol=1e-6)
    """, tmp_path / "k" / "model.py")


def _keras_cnn():
    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 3), name="image")
    y = keras.layers.Conv2D(4, 3, name="conv")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.SpatialDropout2D(0.2, name="sdrop")(y)
    y = keras.layers.Flatten(name="flat")(y)
    y = keras.layers.Dropout(0.3, name="drop")(y)
    return keras.Model(x, keras.layers.Dense(2, name="head")(y), name="cnn")


def test_keras_to_torch_keeps_bn_momentum_and_dropout_and_trains(tmp_path):
    result = portx.convert(_keras_cnn(), to="torch-xla", out=tmp_path / "t")
    assert result.report["training"]["trainable_match"], result.report["training"]
    code = (tmp_path / "t" / "model.py").read_text()
    assert "nn.BatchNorm2d(4, eps=0.001, momentum=0.01)" in code
    assert "nn.Dropout2d(0.2)" in code and "nn.Dropout(0.3)" in code
    run_consumer(f"""
        import torch
        model = converted.load_model().train()
        torch.manual_seed(0)
        x, y = torch.randn(6, 8, 8, 3), torch.randn(6, 2)  # the batch is free (the example's was 1)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)

        def loss():  # the same dropout masks each time, so the losses compare
            torch.manual_seed(1)
            return torch.nn.functional.mse_loss(model(x), y)

        before = loss().item()
        for _ in range(10):
            opt.zero_grad()
            step = loss()
            step.backward()
            opt.step()
        assert loss().item() < before, (before, loss().item())
        model.eval()
        batch = torch.export.Dim("batch", min=1, max=128)
        exported = torch.export.export(model, (x,), dynamic_shapes=({{0: batch}},))
        for n in (1, 6, 9):
            torch.testing.assert_close(exported.module()(x[:1].repeat(n, 1, 1, 1)), model(x[:1].repeat(n, 1, 1, 1)))
        compiled = torch.compile(model, backend="aot_eager")
        torch.testing.assert_close(compiled(x), model(x))
        torch.testing.assert_close(compiled(x[:1]), model(x[:1]))
    """, tmp_path / "t" / "model.py")


def test_subclassed_keras_trainable_variables_become_parameters(tmp_path):
    class Block(keras.Model):
        def __init__(self):
            super().__init__(name="block")
            self.dense = keras.layers.Dense(6, name="dense")
            self.norm = keras.layers.LayerNormalization(name="norm")
            self.bias = self.add_weight(shape=(6,), initializer="ones", name="extra_bias")
            self.frozen = self.add_weight(shape=(6,), initializer="ones", trainable=False, name="frozen")

        def call(self, x):
            return self.norm(self.dense(x) + self.bias) * self.frozen

    keras.utils.set_random_seed(0)
    model = Block()
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    model(x)
    result = portx.convert(model, example_inputs=(x,), to="torch-xla", out=tmp_path / "t")
    training = result.report["training"]
    assert training["trainable_match"], training
    want = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    assert training["parameters"]["converted"]["trainable"] == want
    module = result.model
    assert sum(p.numel() for p in module.parameters()) == want
    assert sum(b.numel() for b in module.buffers()) >= 6  # the frozen weight stays a buffer


def test_fold_bn_and_inference_flags_fold_and_drop_and_say_so(tmp_path):
    sample = tmp_path / "tokens.pt2"
    torch.export.save(torch.export.export(_tokens(), (torch.randn(2, 3, 8, 8),)), sample)
    runner = CliRunner()
    for flag, folded, dropped in (("--fold-bn", ["bn"], []), ("--inference", ["bn"], ["drop2d", "drop"])):
        out = tmp_path / flag.strip("-")
        done = runner.invoke(cli_main, ["convert", str(sample), "--to", "keras-jax", "-o", str(out), flag])
        assert done.exit_code == 0, done.output
        report = json.loads((out / "report.json").read_text())["training"]
        assert report["mode"] == "inference"
        assert [row["scope"] for row in report["folded"]] == folded
        assert [row["scope"] for row in report["dropped"]] == dropped
        code = (out / "model.py").read_text()
        assert ("layers.Dropout" in code) == (not dropped) and "BatchNormalization" not in code


def test_gradients_match_the_source_both_ways_by_parameter_name(tmp_path):
    result = portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to="keras-jax", out=tmp_path / "k")
    grads = result.report["gradients"]
    assert grads["passed"] and grads["matched"] == 8 and not grads["unmatched_source"], grads
    assert {row["name"] for row in grads["parameters"]} >= {"pos", "scale", "conv.weight", "bn.weight", "head.bias"}
    assert [row["name"] for row in grads["inputs"]] == ["x"]
    back = portx.convert(_keras_cnn(), to="torch-xla", out=tmp_path / "t")
    grads = back.report["gradients"]
    assert grads["passed"] and grads["matched"] == 6 and not grads["unmatched_converted"], grads


class _Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return self.fc(x) * self.gate.detach()


def test_a_detached_parameter_stays_frozen_and_verify_grad_checks_it(tmp_path):
    sample = tmp_path / "detached.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(_Detached().eval(), (torch.randn(2, 4),),
                                          dynamic_shapes=({0: torch.export.Dim("batch")},)), sample)
    result = portx.convert(str(sample), to="keras-jax", out=tmp_path / "k")
    assert result.report["gradients"]["passed"] and not result.report["warnings"]
    assert {v.path for v in result.model.trainable_variables} == {"fc/kernel", "fc/bias"}
    done = CliRunner().invoke(cli_main, ["verify", str(sample), str(tmp_path / "k"), "--grad"])
    assert done.exit_code == 0 and "gradients: 1 input(s) and 2 parameter(s)" in done.output, done.output


def test_tied_and_shared_weights_stay_one_trainable_variable(tmp_path):
    """An embedding tied to the LM head, and a Linear applied twice: one variable each, as in the source."""
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(11, 6)
            self.fc = nn.Linear(6, 6)
            self.head = nn.Linear(6, 11, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, ids):
            return self.head(self.fc(torch.relu(self.fc(self.tok(ids)))))

    torch.manual_seed(0)
    ids = torch.randint(0, 11, (2, 5))
    result = portx.convert(Tied().eval(), example_inputs=(ids,), to="keras-jax", out=tmp_path / "k")
    training = result.report["training"]
    assert training["trainable_match"], training
    assert training["parameters"]["converted"]["trainable"] == 11 * 6 + 6 * 6 + 6
    assert result.report["gradients"]["passed"], result.report["gradients"]
    assert len(result.model.trainable_variables) == 3  # the table, fc's kernel and bias


def test_detach_on_activations_is_a_gradient_stop_both_ways(tmp_path):
    """``h.detach()`` becomes ``ops.stop_gradient`` and back ``.detach()``: gradients agree with the source's."""
    class Stop(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            return self.b(h.detach()) + h

    torch.manual_seed(0)
    result = portx.convert(Stop().eval(), example_inputs=(torch.randn(2, 4),), to="keras-jax", out=tmp_path / "k")
    assert "ops.stop_gradient(" in (tmp_path / "k" / "model.py").read_text()
    assert result.report["gradients"]["passed"] and result.report["gradients"]["matched"] == 4
    back = portx.convert(result.model, to="torch-xla", out=tmp_path / "t")
    assert ".detach()" in (tmp_path / "t" / "model.py").read_text() and back.report["gradients"]["passed"]
