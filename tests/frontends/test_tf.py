"""TensorFlow sources through tf2onnx (frontends/tf/, the ``[tf]`` extra): SavedModel folders and tf.keras 2 ``.h5``.

Each model is built here with fixed seeds, written the way TensorFlow users write it, and converted to both targets
with verification on: the reference is TensorFlow itself. Skipped (allowed under CI=true) where the extra is missing.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from portx import api
from portx.cli import main
from portx.frontends import load

pytestmark = pytest.mark.optional_extra(reason="the [tf] extra (tensorflow-cpu, tf2onnx, tf_keras)")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")
tf_keras = pytest.importorskip("tf_keras")
TARGETS = ("keras-jax", "torch-xla")


class _ConvNet(tf.Module):
    """conv + bias + relu + mean + dense, NHWC, batch free."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.kernel = tf.Variable(rng.normal(size=(3, 3, 3, 8)).astype("float32"))
        self.bias = tf.Variable(rng.normal(size=(8,)).astype("float32"))
        self.dense = tf.Variable(rng.normal(size=(8, 5)).astype("float32") * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32, name="image")])
    def __call__(self, image):
        y = tf.nn.relu(tf.nn.conv2d(image, self.kernel, strides=2, padding="SAME") + self.bias)
        return {"logits": tf.matmul(tf.reduce_mean(y, axis=[1, 2]), self.dense)}


def _saved_model(tmp_path, module=None):
    folder = tmp_path / "saved_model"
    tf.saved_model.save(module or _ConvNet(), str(folder))
    return folder


def _legacy_h5(tmp_path, with_op_layer=True):
    """A tf.keras 2 functional model; ``tf.math.softplus`` on a KerasTensor becomes a TFOpLambda layer."""
    tf_keras.utils.set_random_seed(0)
    x = tf_keras.Input((6,), name="features")
    y = tf_keras.layers.Dense(4, name="dense")(x)
    if with_op_layer:
        y = tf.math.softplus(y) * 2.0
    path = tmp_path / ("legacy.h5" if with_op_layer else "plain.h5")
    tf_keras.Model(x, y).save(str(path))
    return path


@pytest.mark.parametrize("target", TARGETS)
def test_saved_model_converts_and_verifies_against_tensorflow(tmp_path, target):
    folder = _saved_model(tmp_path)
    result = api.convert(str(folder), to=target, out=tmp_path / "out", trust_savedmodel=True)
    assert result.report["verification"]["passed"] is True
    assert any("tf2onnx" in note for note in result.report["warnings"] + result.report.get("notes", []))
    x = np.random.default_rng(1).normal(size=(3, 16, 16, 3)).astype("float32")  # another batch size
    want = tf.saved_model.load(str(folder)).signatures["serving_default"](image=tf.constant(x))["logits"].numpy()
    got = load(str(folder), trust_savedmodel=True).run(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    emitted = result.model(x) if target == "keras-jax" else result.model(__import__("torch").from_numpy(x))
    np.testing.assert_allclose(np.asarray(emitted if target == "keras-jax" else emitted.detach()), want,
                               rtol=1e-4, atol=1e-4)


class _FixedBatch(_ConvNet):
    """The same network, its signature's batch fixed at 2 (a static program)."""

    @tf.function(input_signature=[tf.TensorSpec([2, 16, 16, 3], tf.float32, name="image")])
    def __call__(self, image):
        y = tf.nn.relu(tf.nn.conv2d(image, self.kernel, strides=2, padding="SAME") + self.bias)
        return {"logits": tf.matmul(tf.reduce_mean(y, axis=[1, 2]), self.dense)}


@pytest.mark.parametrize("target", TARGETS)
def test_a_saved_model_with_a_fixed_batch_gets_it_freed_and_checked_against_tensorflow_on_chunks(tmp_path, target):
    # Note [static batch]: the ops' shape rules free it; the reference at 1 and 8 is TensorFlow on chunks of 2 rows
    folder = _saved_model(tmp_path, _FixedBatch())
    result = api.convert(str(folder), to=target, out=tmp_path / "out", trust_savedmodel=True, grad=False)
    assert result.report["verification"]["passed"] is True
    batch = next(row for row in result.report["dynamic"] if row["symbol"] == "batch")
    assert batch["free"] and batch["found_by"] == "the ops' shape rules", result.report["warnings"]
    assert [c["size"] for c in batch["verified"]] == [2, 1, 8] and all(c["passed"] for c in batch["verified"])


@pytest.mark.parametrize("target", TARGETS)
def test_legacy_tf_keras_h5_that_keras_3_cannot_read_goes_through_tf2onnx(tmp_path, target):
    path = _legacy_h5(tmp_path)
    assert type(load(str(path))).__name__ == "TfSource"
    run = CliRunner().invoke(main, ["convert", str(path), "--to", target, "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert "verified" in run.output


def test_legacy_h5_that_keras_3_reads_stays_with_the_keras_frontend(tmp_path):
    path = _legacy_h5(tmp_path, with_op_layer=False)
    assert type(load(str(path))).__name__ == "KerasSource"


def test_ops_that_touch_files_are_refused_naming_the_node(tmp_path):
    class Reads(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x):
            text = tf.io.read_file("/etc/hostname")
            return x + tf.cast(tf.strings.length(text), tf.float32)

    folder = _saved_model(tmp_path, Reads())
    run = CliRunner().invoke(main, ["convert", str(folder), "-o", str(tmp_path / "out"), "--trust-savedmodel"])
    assert run.exit_code == 2, run.output
    assert "ReadFile" in run.output and "Traceback" not in run.output
    assert not (tmp_path / "out").exists()


def test_lambda_in_a_legacy_h5_is_refused_in_safe_mode(tmp_path):
    x = tf_keras.Input((3,))
    y = tf_keras.layers.Lambda(lambda t: t * 3.0, name="times_three")(tf.math.softplus(x))
    path = tmp_path / "lambda.h5"
    tf_keras.Model(x, y).save(str(path))
    run = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2, run.output
    assert "times_three" in run.output and "--unsafe-keras" in run.output


def test_a_damaged_saved_model_is_one_line_exit_2(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "saved_model.pb").write_bytes(b"\x08\x01garbage")
    run = CliRunner().invoke(main, ["convert", str(folder), "-o", str(tmp_path / "out"), "--trust-savedmodel"])
    assert run.exit_code == 2, run.output
    assert "broken" in run.output and "Traceback" not in run.output


def test_without_the_extra_the_message_names_it(tmp_path):
    folder = _saved_model(tmp_path)
    argv = ["portx", "convert", str(folder), "-o", str(tmp_path / "out"), "--trust-savedmodel"]
    script = f"import sys; sys.modules['tensorflow'] = None; from portx.cli import main; sys.argv = {argv!r}; main()"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KERAS_BACKEND": "jax"})
    assert done.returncode == 2, done.stderr
    assert "portx[tf]" in done.stderr and "Traceback" not in done.stderr


def test_tensorflow_ops_tf2onnx_cannot_convert_are_named_exit_3(tmp_path):
    class Igamma(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x):
            return tf.math.igamma(x * x + 1.0, x * x + 0.5)

    folder = _saved_model(tmp_path, Igamma())
    run = CliRunner().invoke(main, ["convert", str(folder), "-o", str(tmp_path / "out"), "--trust-savedmodel"])
    assert run.exit_code == 3, run.output
    assert "Igamma" in run.output and "TensorFlow model" in run.output


def test_a_saved_model_needs_the_trust_flag(tmp_path):
    folder = _saved_model(tmp_path)
    run = CliRunner().invoke(main, ["convert", str(folder), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2, run.output
    assert "--trust-savedmodel" in run.output and "Traceback" not in run.output
    assert not (tmp_path / "out").exists()
