"""What a block class's ``forward`` takes (Note [forward's arguments] in targets/torch_xla/block_args.py): the
hidden state first, as ``x``, even where the block reads a mask first; the per-block rows call each class in the
order the emitter chose (targets/forward_cut.py)."""
import pytest
import torch
from torch import nn

import portx
from portx.options import Output
from tests.support.structured_models import small_decoder, torchvision_vit


class _MaskedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(dim), nn.Linear(dim, dim)

    def forward(self, x, mask):
        keep = torch.sigmoid(mask).unsqueeze(-1) * 0.5  # the mask read before x
        return x + self.fc(self.ln(x)) * keep


class _MaskedStack(nn.Module):
    def __init__(self, layers=3):
        super().__init__()
        self.embed = nn.Linear(8, 8)
        self.layers = nn.ModuleList([_MaskedBlock() for _ in range(layers)])

    def forward(self, x, mask):
        h, m = self.embed(x), mask * 2.0
        for layer in self.layers:
            h = layer(h, m)
        return h


def test_the_hidden_state_comes_first_and_the_block_rows_call_the_class_so(tmp_path):
    torch.manual_seed(0)
    source = _MaskedStack().eval()
    inputs = (torch.randn(2, 5, 8), torch.randn(2, 5))
    result = portx.convert(source, example_inputs=inputs, to="torch-xla", output=Output(out=tmp_path / "out"))
    code = result.files["code"].read_text()
    # the batch is read from the block's own input, not the model's (Note [a block reads its own batch] in
    # targets/block_sites.py), so the model input is no argument
    assert "    def forward(self, x, mul):" in code and "layers = block(layers, mul)" in code, code
    rows = [(row["block"], row["passed"]) for row in result.report["blocks"]]
    assert rows == [(f"layers.{i}", True) for i in range(3)]
    assert list(result.model.state_dict()) == list(source.state_dict())


@pytest.mark.parametrize("layers", [3, 12])
def test_torchvision_vit_layers_nest_by_name_under_the_source_s_keys(layers, tmp_path):
    """Note [named block containers] in targets/torch_xla/containers.py: ``encoder.layers.encoder_layer_0``."""
    source, inputs = torchvision_vit(layers)
    result = portx.convert(source, example_inputs=inputs, to="torch-xla", output=Output(out=tmp_path / "out"))
    code = result.files["code"].read_text()
    # one input a block (its batch read from it: targets/block_sites.py): the nn.Sequential is called
    assert code.count("(nn.Module):") == 2 and "encoder_layers = self.encoder.layers(add)" in code, code
    assert "    def forward(self, x):" in code and "x_1" not in code, code
    assert f'OrderedDict((f"encoder_layer_{{i}}", EncoderBlock()) for i in range({layers}))' in code
    assert list(result.model.state_dict()) == list(source.state_dict())
    modules = dict(result.model.named_modules())
    assert isinstance(modules["encoder.layers"], nn.Sequential) and len(modules["encoder.layers"]) == layers
    assert type(modules[f"encoder.layers.encoder_layer_{layers - 1}"]).__name__ == "EncoderBlock"
    assert {n for n, m in source.named_modules() if next(m.parameters(recurse=False), None) is not None} <= set(modules)
    assert [row["passed"] for row in result.report["blocks"]] == [True] * layers


class _Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ln_1, self.fc_1, self.fc_2 = nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.ln_2, self.fc_3 = nn.LayerNorm(dim), nn.Linear(dim, dim)

    def forward(self, x):
        x = x + self.fc_2(torch.nn.functional.gelu(self.fc_1(self.ln_1(x))))
        return x + torch.tanh(self.fc_3(self.ln_2(x)))


class _Encoder(nn.Module):
    """Named blocks beside the encoder's own LayerNorm (keras-hub ViT's ``vit_encoder.transformer_block_1``)."""

    def __init__(self):
        super().__init__()
        self.block_1, self.block_2, self.block_3 = _Block(), _Block(), _Block()
        self.ln = nn.LayerNorm(8)

    def forward(self, x):
        return self.ln(self.block_3(self.block_2(self.block_1(x))))


class _Wrapped(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.encoder = nn.Linear(4, 8), _Encoder()

    def forward(self, x):
        return self.encoder(self.embed(x))


def test_named_blocks_beside_other_layers_are_held_one_by_one(tmp_path):
    """Note [blocks held one by one] in targets/torch_xla/containers.py: one class, each block by its name."""
    torch.manual_seed(0)
    source = _Wrapped().eval()
    result = portx.convert(source, example_inputs=(torch.randn(2, 5, 4),), to="torch-xla",
                           output=Output(out=tmp_path / "out"))
    assert result.report["verification"]["passed"], result.report["verification"]
    code = result.files["code"].read_text()
    assert code.count("(nn.Module):") == 2, code
    for i in (1, 2, 3):
        assert f"self.encoder.block_{i} = _Block()" in code and f"= self.encoder.block_{i}(" in code, code
    assert list(result.model.state_dict()) == list(source.state_dict())


def _keras_hub_gpt2(layers):
    keras_hub = pytest.importorskip("keras_hub")
    import keras

    keras.utils.set_random_seed(0)
    return keras_hub.models.GPT2Backbone(vocabulary_size=100, num_layers=layers, hidden_dim=32, intermediate_dim=64,
                                         num_heads=2, max_sequence_length=16)


@pytest.mark.parametrize("source", ["keras_hub_gpt2", "decoder"])
def test_twelve_layers_stay_one_class_in_one_loop(source, tmp_path):
    """Namespace cuts names at 48 characters: ``transformer_layer_10_self_attention_attention_out`` (49) lost its last
    letter and blocks 10 and 11 were a second class (Note [names in longer blocks] in keras_jax/style.py)."""
    model, kwargs = (_keras_hub_gpt2(12), {}) if source == "keras_hub_gpt2" else \
        (small_decoder(12)[0], {"example_inputs": small_decoder(12)[1]})
    result = portx.convert(model, to="torch-xla", output=Output(out=tmp_path / "out"), verify=False, **kwargs)
    code = result.files["code"].read_text()
    assert code.count("(nn.Module):") == 2 and code.count("for block in self.") == 1, code
    assert "for _ in range(12)" in code
