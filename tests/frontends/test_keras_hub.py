"""keras-hub backbones -> torch-xla and keras-jax: composite layers traced through (Note [keras composite layers])
and free sequence dims (Note [keras free input dims]), each verified by ``portx.convert`` itself; the layers
written once, as a torch class or a Keras function (Note [structured code])."""
import os
import re

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import portx  # noqa: E402
from portx.errors import UnsupportedOps  # noqa: E402
from portx.targets import TARGETS  # noqa: E402
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
                                                      stackwise_num_filters=[64, 32], stackwise_num_blocks=[2, 1],
                                                      stackwise_num_strides=[1, 2], block_type="basic_block"),
}
TEXT = ("bert", "gpt2", "llama", "llama-dropout")
#: the block class the emitted torch module names after the keras-hub layer's (meta["module_classes"]), and the
#: emitted Keras function (keras.applications style: ``def transformer_decoder(x, padding_mask, name):``)
BLOCK_CLASSES = {"gpt2": "TransformerDecoder", "llama": "LlamaTransformerDecoder",
                 "llama-dropout": "LlamaTransformerDecoder"}
BLOCK_FUNCTIONS = {"bert": "transformer_encoder", "gpt2": "transformer_decoder", "llama": "llama_transformer_decoder",
                   "llama-dropout": "llama_transformer_decoder"}
#: the nn.Dropout modules each block owns (Note [weightless modules] in targets/torch_xla/modules.py): the
#: attention's, the attention output's and (GPT-2) the feed-forward's; the Llama's default Dropout(0.0) layers leave
#: the graph (Note [zero-rate dropout])
BLOCK_DROPOUTS = {"gpt2": 3, "llama-dropout": 2}
#: one block per stage: nothing repeats, the code stays flat (the ResNet's first stage has two basic blocks; MiT
#: stages of two are ``test_mit_stages_of_two_blocks_are_one_class_and_one_function``)
ONE_OF_EACH = ("mit",)
QUICK = ("gpt2", "resnet")  # the CI run; the rest are slow sweeps
#: keras-jax: the weights outside the repeated blocks keep the source's paths, ``position_embedding/embeddings`` too
#: (Note [source-named weights] in targets/keras_jax/scopes.py); a block's layers are named flat,
#: ``transformer_layer_0_self_attention_query``, since a functional model's layer names are unique
SAME_PATHS = ("gpt2",)


def _convert(name, tmp_path, to="torch-xla"):
    keras.utils.set_random_seed(0)
    model = BACKBONES[name]()
    result = portx.convert(model, to=to, out=tmp_path / "out", grad=False)
    return model, result


def _check(name, tmp_path, to="torch-xla"):
    model, result = _convert(name, tmp_path, to)
    report = result.report
    assert result.ok and report["verification"]["passed"], report["verification"]
    assert max(o["max_abs"] for o in report["verification"]["outputs"]) < 1e-4
    code = result.files["code"].read_text()
    if to == "keras-jax":
        _check_keras(name, model, result, code)
    else:  # one torch parameter per Keras trainable weight: a tied (ReversibleEmbedding) table is not copied
        assert sum(p.numel() for p in result.model.parameters()) == sum(
            int(np.prod(v.shape)) for v in model.trainable_variables)
    if name in BLOCK_CLASSES and to == "torch-xla":
        assert f"class {BLOCK_CLASSES[name]}(nn.Module):" in code
    dims = {row["symbol"]: row for row in report["dynamic"]}
    assert dims["batch"]["free"] and len(dims["batch"]["verified"]) >= 2
    if name in TEXT:  # the sequence length stays free and is verified at two sizes
        (seq,) = [row for symbol, row in dims.items() if symbol != "batch"]
        assert seq["free"] and sorted({len(s) for s in seq["sites"]}) == [2], seq
        assert len(seq["verified"]) >= 2 and all(v["passed"] for v in seq["verified"])
    # a layer class / function where layers repeat, flat where that is shorter (Note [structured only where shorter]:
    # the ResNet's two basic blocks on torch-xla, 51 lines as a class against 50 flat)
    assert_structured(result, to, repeats=name not in ONE_OF_EACH, longer=True)
    # torch: each block owns its dropouts, under the same names: none shared, none an argument
    if name in BLOCK_DROPOUTS and to == "torch-xla":
        blocks = [m for m in result.model.modules() if type(m).__name__ == BLOCK_CLASSES[name]]
        owned = [{n: m for n, m in block.named_modules() if isinstance(m, torch.nn.Dropout)} for block in blocks]
        assert len(blocks) == 2 and len(owned[0]) == BLOCK_DROPOUTS[name] and set(owned[0]) == set(owned[1]), owned
        assert not {id(m) for m in owned[0].values()} & {id(m) for m in owned[1].values()}
    return model, result


def _check_keras(name, model, result, code):
    """keras-jax: each layer one call of one function, in a loop, its weights under the source's layer names."""
    if name in BLOCK_FUNCTIONS:
        # the statements a block only happened to write first stay in it (``instance``'s ``reads``): one loop
        assert code.count(f"\ndef {BLOCK_FUNCTIONS[name]}(x, padding_mask, name):") == 1, code
        assert "for i in range(2):  # source blocks transformer_layer_0 to transformer_layer_1" in code, code
    # every layer with weights keeps the name the flat code gives it after its source layer (Note [weightless
    # layers in blocks]): ``transformer_layer_1_self_attention_query_linear``. Flat: each block a kind of its own, so
    # none is written once, and names are cut after a block's prefix as in the structured code (Note [names in
    # longer blocks] in targets/keras_jax/style.py)
    alone = [dict(block, kind=f"{block['kind']}#{i}") for i, block in enumerate(result.graph.meta.get("blocks") or [])]
    flat = TARGETS["keras-jax"].emitter(result.graph.replace(meta={**result.graph.meta, "blocks": alone})).emit_graph()
    written = {layer.name for layer in result.model.layers if layer.weights}
    assert written and written <= set(re.findall(r"name='(\w+)'", flat)), written - set(re.findall(r"'(\w+)'", flat))
    assert name not in BLOCK_FUNCTIONS or any(n.startswith("transformer_layer_1_self_attention_") for n in written)
    if name in SAME_PATHS:
        blocks = tuple(f"{b['key']}/" for b in result.graph.meta.get("blocks") or [])
        outside = {w.path for w in model.weights if not w.path.startswith(blocks)}
        assert "position_embedding/embeddings" in outside <= {w.path for w in result.model.weights}, outside


@pytest.mark.parametrize("to", ["torch-xla", "keras-jax"])
@pytest.mark.parametrize("name", QUICK)
def test_quick_backbones_convert_and_verify(name, to, tmp_path):
    _check(name, tmp_path, to)


@pytest.mark.slow
@pytest.mark.parametrize("to", ["torch-xla", "keras-jax"])
@pytest.mark.parametrize("name", sorted(set(BACKBONES) - set(QUICK)))
def test_backbones_convert_and_verify(name, to, tmp_path):
    _check(name, tmp_path, to)


def test_gpt2_with_twelve_layers_is_one_keras_function_in_one_loop(tmp_path):
    """Blocks 10 and 11 name their layers as blocks 0 to 9 do past the longer prefix (Note [names in longer blocks]
    in targets/keras_jax/style.py), so one function writes all twelve."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    model = keras_hub.models.GPT2Backbone(**{**_TEXT, "num_layers": 12}, num_heads=2, max_sequence_length=16)
    result = portx.convert(model, to="keras-jax", out=tmp_path / "out", verify=False, grad=False)
    code = result.files["code"].read_text()
    assert code.count("\ndef transformer_decoder") == 1 and "\ndef transformer_decoder_1(" not in code, code
    assert "for i in range(12):  # source blocks transformer_layer_0 to transformer_layer_11" in code
    assert 'name=f"{name}_self_attention_query_reshape"' in code  # 48 characters after transformer_layer_0


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


def test_llama_blocks_numbering_their_rotary_embedding_are_one_keras_function(tmp_path):
    """keras-hub names each block's rotary embedding model-wide (``llama_rotary_embedding_2`` in block 2): the
    free-dim broadcasts inside it are written from a copy of their node, named from the block's scope as the other
    nodes are (``VariableNames._own`` in targets/keras_jax/style.py), so one function writes every block."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    model = BACKBONES["llama"]().__class__(**{**_TEXT, "num_layers": 3}, num_query_heads=4, num_key_value_heads=2)
    result = portx.convert(model, to="keras-jax", out=tmp_path / "out", verify=False, grad=False)
    code = result.files["code"].read_text()
    assert code.count("\ndef llama_transformer_decoder(") == 1 and "for i in range(3):" in code, code


@pytest.mark.slow
@pytest.mark.parametrize("to", ["torch-xla", "keras-jax"])
@pytest.mark.parametrize("heads, ratios", [([2, 2], [1, 1]), ([1, 2], [2, 1])], ids=["equal", "b0"])
def test_mit_stages_of_two_blocks_are_one_class_and_one_function(to, heads, ratios, tmp_path):
    """A MiT's ``HierarchicalTransformerEncoder`` layers carry Keras' model-wide counters in their sublayers' names
    (``seg_former_multihead_attention_1.dense_6``): numbered within their block (Note [parts named alike] in
    src/portx/passes/blocks_siblings.py), the four blocks of two stages are written once, and the two patch
    embeddings before the stages once, verified. At MiT-B0's pattern too (heads 1, 2; spatial reduction 2, 1): the
    one-head attention is written as the two-head one (Note [one-head attention] in passes/layout/sink.py) and the
    spatial reduction is an optional part (Note [optional parts] in targets/optional_parts.py)."""
    keras.utils.set_random_seed(0)
    model = keras_hub.models.MiTBackbone(**_IMAGE, layerwise_depths=[2, 2], num_layers=2, layerwise_num_heads=heads,
                                         layerwise_sr_ratios=ratios, max_drop_path_rate=0.0,
                                         layerwise_patch_sizes=[7, 3], layerwise_strides=[4, 2], hidden_dims=[16, 32])
    result = portx.convert(model, to=to, out=tmp_path / "out", grad=False)
    assert result.ok and result.report["verification"]["passed"], result.report["verification"]
    shape = assert_structured(result, to)
    assert shape["defs"] == 2 and len(shape["written"]) == 6, shape
    code = result.files["code"].read_text()
    if to == "torch-xla":  # each block at its own path, its parts at the same paths in every block
        assert "self.hierarchical_encoder_1_1 = HierarchicalTransformerEncoder(" in code, code
        assert "self.patch_and_embed_1 = OverlappingPatchingAndEmbedding(" in code, code
        keys = [{k.split(".", 1)[1] for k in result.model.state_dict() if k.startswith(f"hierarchical_encoder_{b}.")}
                for b in ("0_0", "0_1", "1_0", "1_1")]
        if ratios[0] > 1:  # the reduction's submodules only in the first stage's blocks
            assert "seg_former_multihead_attention.conv2d.weight" in keys[0] - keys[2], keys
            keys = keys[2:] + [k - {k for k in keys[0] if ".conv2d." in k or ".layer_normalization." in k}
                               for k in keys[:2]]
        assert keys[0] and all(k == keys[0] for k in keys) and "seg_former_multihead_attention.dense.weight" in keys[0]
    else:
        assert code.count("\ndef hierarchical_transformer_encoder(") == 1, code
        assert code.count("\ndef overlapping_patching_and_embedding(") == 1, code
