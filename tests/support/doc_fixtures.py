"""The files the docs' shell examples name, built small so that every ``portx`` command in README.md and docs/*.md
runs in CI as written (Note [tested docs] in tests/test_docs.py).

Run as a script (tests/test_docs.py does, in a subprocess, so TensorFlow and Keras load outside the test worker):
``python tests/support/doc_fixtures.py FOLDER`` writes into FOLDER:

  model.pt2            samples/tiny_cnn.pt2 (a free batch), also as samples/tiny_cnn.pt2
  model.pt, full.pt    the same TinyCNN as TorchScript and as a pickled nn.Module (its class is
                       ``samples.make_samples.TinyCNN``: the repository root must be on PYTHONPATH to unpickle it)
  model.keras          a small Keras CNN; ``lambda.keras`` a model with a Lambda layer
  model.onnx           a small ONNX CNN with a free batch (``torch.onnx.export``, dynamo)
  Llama-3.2-1B/        a 2-layer Llama folder (bfloat16, 3 shards and an index): the name the docs use, not its size
  custom-arch/         a Llama folder whose config's ``auto_map`` names its own configuration and model classes
  saved_model_dir/, legacy_tf_keras.h5   only where TensorFlow and tf_keras import (the [tf] extra)

Fixed seeds, random weights, nothing downloaded.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the custom architecture's Python files (Note [remote code] in src/portx/frontends/hf.py: they run only with
#: --trust-remote-code)
CUSTOM_CONFIG = '''from transformers import LlamaConfig


class TinyCustomConfig(LlamaConfig):
    model_type = "tiny_custom"
'''
CUSTOM_MODEL = '''from transformers import LlamaForCausalLM

from .configuration_custom import TinyCustomConfig


class TinyCustomForCausalLM(LlamaForCausalLM):
    config_class = TinyCustomConfig
'''


def _torch_files(folder: Path):
    import torch

    sys.path.insert(0, str(ROOT))
    from samples.make_samples import TinyCNN

    shutil.copy(ROOT / "samples" / "tiny_cnn.pt2", folder / "model.pt2")
    (folder / "samples").mkdir(exist_ok=True)  # README's first command, run from a checkout
    shutil.copy(ROOT / "samples" / "tiny_cnn.pt2", folder / "samples" / "tiny_cnn.pt2")
    torch.manual_seed(0)
    model = TinyCNN().eval()
    torch.jit.save(torch.jit.trace(model, (torch.randn(1, 3, 32, 32),)), folder / "model.pt")
    torch.save(model, folder / "full.pt")
    batch = torch.export.Dim("batch", min=1, max=64)
    torch.onnx.export(model, (torch.randn(2, 3, 32, 32),), str(folder / "model.onnx"), input_names=["x"],
                      dynamic_shapes={"x": {0: batch}}, dynamo=True, external_data=False, verbose=False)


def _keras_files(folder: Path):
    import keras

    keras.utils.set_random_seed(0)
    x = keras.Input((16, 16, 3), name="image")
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="stem")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.GlobalAveragePooling2D(name="gap")(y)
    keras.Model(x, keras.layers.Dense(5, name="head")(y)).save(folder / "model.keras")
    x = keras.Input((6,), name="features")
    y = keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(keras.layers.Dense(4, name="dense")(x))
    keras.Model(x, y).save(folder / "lambda.keras")


def _hf_folders(folder: Path):
    import torch
    import transformers

    config = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=128, vocab_size=256,
                                      max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder / "Llama-3.2-1B", max_shard_size="100KB")
    custom = folder / "custom-arch"
    model.save_pretrained(custom)
    (custom / "configuration_custom.py").write_text(CUSTOM_CONFIG)
    (custom / "modeling_custom.py").write_text(CUSTOM_MODEL)
    stored = json.loads((custom / "config.json").read_text())
    stored.update(model_type="tiny_custom", architectures=["TinyCustomForCausalLM"],
                  auto_map={"AutoConfig": "configuration_custom.TinyCustomConfig",
                            "AutoModelForCausalLM": "modeling_custom.TinyCustomForCausalLM"})
    (custom / "config.json").write_text(json.dumps(stored, indent=2))


def _tf_files(folder: Path):
    try:
        import tensorflow as tf
        import tf_keras
    except ImportError:  # without the [tf] extra the two commands that read these are skipped
        return
    tf.random.set_seed(0)

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = tf.Variable(tf.random.normal((6, 4), seed=1))

        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="features")])
        def __call__(self, features):
            return {"logits": tf.nn.relu(tf.matmul(features, self.dense))}

    tf.saved_model.save(Net(), str(folder / "saved_model_dir"))
    tf_keras.utils.set_random_seed(0)
    x = tf_keras.Input((6,), name="features")
    y = tf.math.softplus(tf_keras.layers.Dense(4, name="dense")(x)) * 2.0  # a TFOpLambda layer: tf.keras 2 only
    tf_keras.Model(x, y).save(str(folder / "legacy_tf_keras.h5"))


def build(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    for step in (_torch_files, _keras_files, _hf_folders, _tf_files):
        step(folder)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
