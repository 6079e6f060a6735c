"""keras-hub backbones -> torch-xla: composite layers traced through (Note [keras composite layers]) and free
sequence dims (Note [keras free input dims]), each verified by ``portx.convert`` itself."""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import portx  # noqa: E402
from portx.errors import UnsupportedOps  # noqa: E402
from tests.support.structured_code import assert_structured  # noqa: E402

keras_hub = pytest.importorskip("keras_hub")
torch = pytest.importorskip("torch")

_TEXT = dict(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64)
_IMAGE = dict(image_shape=(32, 32, 3))

BACKBONES = {  # name: tiny config, 2 layers, hidden 16-64, 32x32 images
    "bert": lambda: keras_hub.models.BertBackbone(**_TEXT, num_heads=2, max_sequence_length=16),
    "gpt2": lambda: keras_hub.models.GPT2Backbone(**_TEXT, num_heads=2, max_sequence_length=16),
    "llama": lambda: keras_hub.models.LlamaBackbone(**_TEXT, num_query_heads=4, num_key_value_heads=2,
                                                    tie_word_embeddings=True),
    "llama-dropout": lambda: keras_hub.models.LlamaBackbone(**_TEXT, num_query_heads=4, num_key_value_heads=2,
                                                            tie_word_embeddings=True, dropout=0.1),
    "vit": lambda: keras_hub.models.ViTBackbone(**_IMAGE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                                mlp_dim=64),
    "deit": lambda: keras_hub.models.DeiTBackbone(**_IMAGE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                                  intermediate_dim=64),
    "mit": lambda: keras_hub.models.MiTBackbone(**_IMAGE, layerwise_depths=[1, 1], num_layers=2,
                                                layerwise_num_heads=[1, 2], layerwise_sr_ratios=[2, 1],
                                                max_drop_path_rate=0.0, layerwise_patch_sizes=[7, 3],
                                                layerwise_strides=[4, 2], hidden_dims=[16, 32]),
    "resnet": lambda: keras_hub.models.ResNetBackbone(**_IMAGE, input_conv_filters=[64], input_conv_kernel_sizes=[3],
                                                      stackwise_num_filters=[64, 32], stackwise_num_blocks=[1, 1],
                                                      stackwise_num_strides=[1, 2], block_type="basic_block"),
}
TEXT = ("bert", "gpt2", "llama", "llama-dropout")
#: the block class the emitted torch module names after the keras-hub layer's (meta["module_classes"])
BLOCK_CLASSES = {"gpt2": "TransformerDecoder", "llama": "LlamaTransformerDecoder",
                 "llama-dropout": "LlamaTransformerDecoder"}
#: the nn.Dropout modules each block owns (Note [weightless modules] in targets/torch_xla/modules.py): the
#: attention's, the attention output's and (GPT-2) the feed-forward's; the Llama's default Dropout(0.0) layers leave
#: the graph (Note [zero-rate dropout])
BLOCK_DROPOUTS = {"gpt2": 3, "llama-dropout": 2}
ONE_OF_EACH = ("mit", "resnet")  # one block per stage: nothing repeats, the code stays flat
QUICK = ("gpt2", "resnet")  # the CI run; the rest are slow sweeps


def _convert(name, tmp_path):
    keras.utils.set_random_seed(0)
    model = BACKBONES[name]()
    result = portx.convert(model, to="torch-xla", out=tmp_path / "out", grad=False)
    return model, result


def _check(name, tmp_path):
    model, result = _convert(name, tmp_path)
    report = result.report
    assert result.ok and report["verification"]["passed"], report["verification"]
    assert max(o["max_abs"] for o in report["verification"]["outputs"]) < 1e-4
    # one torch parameter per Keras trainable weight: a tied (ReversibleEmbedding) table is not copied
    assert sum(p.numel() for p in result.model.parameters()) == sum(
        int(np.prod(v.shape)) for v in model.trainable_variables)
    if name in BLOCK_CLASSES:
        assert f"class {BLOCK_CLASSES[name]}(nn.Module):" in result.files["code"].read_text()
    dims = {row["symbol"]: row for row in report["dynamic"]}
    assert dims["batch"]["free"] and len(dims["batch"]["verified"]) >= 2
    if name in TEXT:  # the sequence length stays free and is verified at two sizes
        (seq,) = [row for symbol, row in dims.items() if symbol != "batch"]
        assert seq["free"] and sorted({len(s) for s in seq["sites"]}) == [2], seq
        assert len(seq["verified"]) >= 2 and all(v["passed"] for v in seq["verified"])
    assert_structured(result, "torch-xla", repeats=name not in ONE_OF_EACH)  # a layer class where layers repeat
    if name in BLOCK_DROPOUTS:  # each block owns its dropouts, under the same names: none shared, none an argument
        blocks = [m for m in result.model.modules() if type(m).__name__ == BLOCK_CLASSES[name]]
        owned = [{n: m for n, m in block.named_modules() if isinstance(m, torch.nn.Dropout)} for block in blocks]
        assert len(blocks) == 2 and len(owned[0]) == BLOCK_DROPOUTS[name] and set(owned[0]) == set(owned[1]), owned
        assert not {id(m) for m in owned[0].values()} & {id(m) for m in owned[1].values()}
    return model, result


@pytest.mark.parametrize("name", QUICK)
def test_quick_backbones_convert_and_verify(name, tmp_path):
    _check(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(BACKBONES) - set(QUICK)))
def test_backbones_convert_and_verify(name, tmp_path):
    _check(name, tmp_path)


def test_gpt2_runs_at_other_lengths_with_padding(tmp_path):
    """The emitted module at batch 3, sequence 5 and 13, right-padded masks, against Keras."""
    model, result = _convert("gpt2", tmp_path)
    names = [v.name for v in result.graph.inputs]
    rng = np.random.default_rng(1)
    for length in (5, 13):
        ids = rng.integers(0, 100, (3, length)).astype("int32")
        mask = (np.arange(length)[None, :] < np.array([[length], [length - 2], [1]])).astype("int32")
        feed = {"token_ids": ids, "padding_mask": mask}
        want = np.asarray(model(feed, training=False))
        got = result.model(*[torch.from_numpy(feed[n]) for n in names]).detach().numpy()
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


class _DecodeCache(keras.layers.Layer):
    """Fills a Python-side cache from concrete values once switched to decoding (as generate loops do)."""

    decoding = False

    def call(self, x):
        if self.decoding:
            self.cache = keras.ops.convert_to_numpy(x)
        return x * 2


def test_untraceable_layer_is_refused_naming_it(tmp_path):
    x = keras.Input((4,))
    layer = _DecodeCache(name="decode_cache")
    model = keras.Model(x, keras.layers.Dense(3)(layer(x)))
    layer.decoding = True
    with pytest.raises(UnsupportedOps, match=r"_DecodeCache at decode_cache \[its call cannot be traced with JAX "
                                             r"\(TracerArrayConversionError.*without a Python-side cache") as info:
        portx.convert(model, to="torch-xla", out=tmp_path / "out")
    assert info.value.exit_code == 3 and "\n" not in str(info.value)


def benchmark_cases():
    """(name, build() -> (model, None), source framework) for benchmarks/transformers.py."""
    def build(name):
        keras.utils.set_random_seed(0)
        return BACKBONES[name](), None

    return [(f"keras-hub-{name}", lambda n=name: build(n), "keras") for name in BACKBONES]
