"""Hugging Face text models called as real batches are fed: input_ids with an attention_mask (one row padded),
built from their own configs with random weights (nothing downloaded), eager and sdpa attention, with the
batch and the sequence length free and verified at two lengths and three batch sizes.

transformers' masking utilities index the mask with a batch arange and the key positions (two index tensors),
combine masks with bitwise_and and build positions with cumsum; the converted model keeps the batch free
(the batch arange becomes a cumulative sum of ones at run time) and is verified at batch 2, 1 and 8.
CI runs three masked models to keras-jax, one encoder-decoder and the bad calls; ``PORTX_SLOW=1`` runs every
architecture with both attentions to both targets, and checks that the code is structured where the layers repeat
(one block function or class, tests/support/structured_code.py).
"""
import pytest
import torch

import portx
from tests.support.structured_code import assert_structured

transformers = pytest.importorskip("transformers")

_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=100,
              max_position_embeddings=64)
CONFIGS = {
    "bert": ("BertConfig", _SMALL),
    "roberta": ("RobertaConfig", _SMALL),
    "distilbert": ("DistilBertConfig", dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64, vocab_size=100,
                                            max_position_embeddings=64)),
    "gpt2": ("GPT2Config", dict(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)),
    "llama": ("LlamaConfig", dict(_SMALL, num_key_value_heads=1)),
    "mistral": ("MistralConfig", dict(_SMALL, num_key_value_heads=1)),
    "qwen2": ("Qwen2Config", dict(_SMALL, num_key_value_heads=1)),
}
QUICK = {("bert", "eager"), ("gpt2", "sdpa"), ("llama", "eager")}


class Masked(torch.nn.Module):
    """The model called with ids and a mask, returning its last hidden state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _model(arch, attention):
    name, options = CONFIGS[arch]
    config = getattr(transformers, name)(**options)
    config._attn_implementation = attention
    torch.manual_seed(0)
    return Masked(transformers.AutoModel.from_config(config).eval())


def _cases(quick, *names):
    for name in names:
        for attention in ("eager", "sdpa"):
            for to in ("keras-jax", "torch-xla"):
                marks = () if (name, attention, to) in quick else (pytest.mark.slow,)
                yield pytest.param(name, attention, to, marks=marks,
                                   id=f"{name}-{attention}" + ("" if to == "keras-jax" else "-torch-xla"))


@pytest.mark.parametrize("arch, attention, to", _cases({q + ("keras-jax",) for q in QUICK}, *CONFIGS))
def test_text_model_with_attention_mask_converts_with_a_free_batch_and_length(arch, attention, to, tmp_path):
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0  # the second sequence is padded
    result = portx.convert(_model(arch, attention), example_inputs=(ids, mask), to=to, out=tmp_path / "o",
                           grad=False, dynamic=["input_ids:1", "attention_mask:1"])
    assert result.report["verification"]["passed"], result.report["verification"]
    rows = {row["symbol"]: row for row in result.report["dynamic"]}
    # --dynamic input_ids:1 --dynamic attention_mask:1: one sequence symbol (same example size), free in the
    # emitted model, so one conversion serves every length; positions come from a cumulative sum at run time
    assert rows["input_ids_1"]["free"], result.report["warnings"]
    assert rows["input_ids_1"]["sites"] == [["input_ids", 1], ["attention_mask", 1]]
    code = result.files["code"].read_text()
    assert "keras.Input(shape=(None,)" in code if to == "keras-jax" else ".shape[1]" in code
    assert [c["size"] for c in rows["input_ids_1"]["verified"]] == [8, 11]
    assert all(c["passed"] for c in rows["input_ids_1"]["verified"])
    # eager attention too is one attention op per layer (Note [attention fusion]), one dot_product_attention call
    assert result.report["ops"]["attention"]["count"] == 2 and "softmax" not in result.report["ops"]
    attention_call = "ops.dot_product_attention(" if to == "keras-jax" else "F.scaled_dot_product_attention("
    assert code.count(attention_call) == 1  # one block function or class
    assert assert_structured(result, to)["defs"] == 1
    batch = rows["batch"]
    assert batch["free"] and [c["size"] for c in batch["verified"]] == [2, 1, 8], result.report["warnings"]
    assert all(c["passed"] for c in batch["verified"])
    # positions are a running count over the free sequence: an iota, not a dynamic reduce_window (Note [running
    # sums over a free axis]), so the symbolic TPU proof passes
    assert result.report["tpu"]["verdict"] == "ok", result.report["tpu"]


_T5 = dict(d_model=32, d_kv=16, d_ff=64, num_layers=3, num_heads=2, vocab_size=100)
HEADS = {  # class, config, whether decoder_input_ids go in too
    "gpt2-lm-head": ("GPT2LMHeadModel", "GPT2Config", dict(n_embd=32, n_layer=2, n_head=2, vocab_size=100,
                                                           n_positions=64), False),
    "llama-causal-lm": ("LlamaForCausalLM", "LlamaConfig", dict(_SMALL, num_key_value_heads=1), False),
    "t5-encoder": ("T5EncoderModel", "T5Config", _T5, False),
    "t5-encoder-decoder": ("T5Model", "T5Config", _T5, True),
    "bart-encoder-decoder": ("BartModel", "BartConfig", dict(
        d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=100, max_position_embeddings=64), True),
}


class WithHead(torch.nn.Module):
    """A causal LM's logits, or an encoder-decoder's last decoder state given decoder_input_ids."""

    def __init__(self, model, decoder):
        super().__init__()
        self.model, self.decoder = model, decoder

    def forward(self, input_ids, attention_mask, decoder_input_ids=None):
        kwargs = {"decoder_input_ids": decoder_input_ids} if self.decoder else {}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


@pytest.mark.parametrize("name, attention, to", _cases({("t5-encoder-decoder", "eager", "keras-jax")}, *HEADS))
def test_lm_heads_and_encoder_decoders_convert_with_a_free_batch_and_length(name, attention, to, tmp_path):
    cls, config, options, decoder = HEADS[name]
    torch.manual_seed(0)
    config = getattr(transformers, config)(**options)
    config._attn_implementation = attention
    model = WithHead(getattr(transformers, cls)(config).eval(), decoder)
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[0, 6:] = 0
    inputs = (ids, mask) + ((torch.randint(0, 100, (2, 5), generator=torch.Generator().manual_seed(3)),)
                            if decoder else ())
    result = portx.convert(model, example_inputs=inputs, to=to, out=tmp_path / "o", grad=False,
                           dynamic=["input_ids:1", "attention_mask:1"])
    assert result.report["verification"]["passed"], result.report["verification"]
    for row in result.report["dynamic"]:  # the batch and the encoder's sequence, each at two or three sizes
        assert row["free"] and len(row["verified"]) >= 2 and all(c["passed"] for c in row["verified"]), row
    assert_structured(result, to)  # the layers that repeat (T5's first owns the position bias) written once
    if to == "torch-xla":  # T5's and BART's tied embeddings each at its key: Note [tied modules]
        assert list(result.model.state_dict()) == list(model.state_dict())
        result.model.load_state_dict(model.state_dict(), strict=True)


WHISPER = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
               encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=16,
               max_target_positions=32, vocab_size=100, pad_token_id=0, bos_token_id=1, eos_token_id=2,
               decoder_start_token_id=1)


class WhisperDecoding(torch.nn.Module):
    """Whisper's encoder on log-mel features and its decoder on padded decoder_input_ids."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_features, decoder_input_ids, decoder_attention_mask):
        return self.model(input_features=input_features, decoder_input_ids=decoder_input_ids,
                          decoder_attention_mask=decoder_attention_mask).last_hidden_state


@pytest.mark.slow
@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_whisper_decoder_with_decoder_inputs_converts_with_a_free_batch(to, tmp_path):
    config = transformers.WhisperConfig(**WHISPER)
    torch.manual_seed(0)
    model = WhisperDecoding(transformers.WhisperModel(config).eval())
    decoder_mask = torch.ones(2, 5, dtype=torch.long)
    decoder_mask[1, 3:] = 0
    inputs = (torch.randn(2, 8, 32), torch.randint(0, 100, (2, 5), generator=torch.Generator().manual_seed(4)),
              decoder_mask)
    result = portx.convert(model, example_inputs=inputs, to=to, out=tmp_path / "o", grad=False)
    assert result.report["verification"]["passed"], result.report["verification"]
    assert result.report["ops"]["attention"]["count"] == 6  # 2 layers of encoder self, decoder self and cross
    assert assert_structured(result, to)["defs"] == 2  # an encoder layer and a decoder layer
    batch = result.report["dynamic"][0]
    assert batch["free"] and all(c["passed"] for c in batch["verified"]), result.report["warnings"]



def _flash_attention():
    model = _model("llama", "eager")
    model.model.config._attn_implementation = "flash_attention_2"  # as if flash-attn were installed
    return model


_IDS = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(5))
BAD_CALLS = [  # model, inputs, the one line portx says (BadInput, exit 2)
    pytest.param(lambda: _model("bert", "eager"), (torch.randint(0, 100, (2, 80)), torch.ones(2, 80, dtype=torch.long)),
                 r"input 0 has 80 positions \(axis 1\), more than BertModel's position table "
                 r"\(max_position_embeddings=64\)", id="longer-than-the-position-table"),
    pytest.param(lambda: _model("bert", "sdpa"), (_IDS, torch.ones(2, 7, dtype=torch.long)),
                 r"attention_mask has shape \(2, 7\) but input_ids has \(2, 8\)", id="mask-shape"),
    pytest.param(_flash_attention, (_IDS, torch.ones(2, 8, dtype=torch.long)),
                 r"LlamaModel uses attn_implementation='flash_attention_2', .* attn_implementation='sdpa'",
                 id="flash-attention"),
]


@pytest.mark.parametrize("make, inputs, message", BAD_CALLS)
def test_a_bad_call_is_named_in_one_line(make, inputs, message, tmp_path):
    with pytest.raises(portx.errors.BadInput, match=message):
        portx.convert(make(), example_inputs=inputs, to="keras-jax", out=tmp_path / "o")
    assert not (tmp_path / "o").exists()
