"""``nn.MultiheadAttention`` keeps the source's keys (targets/torch_xla/held.py, Note [held parameters]): the
emitted module declares it and reads ``in_proj_weight`` / ``out_proj``, so the source's ``state_dict()`` loads
into the converted module as it is; the Keras target names the projections' layers after the same paths."""
import numpy as np
import pytest
import torch
from torch import nn

import portx


class Attend(nn.Module):
    """Pre-norm attention and a head; an optional key padding mask as a second input. ``kind``: ``self``-attention,
    ``cross``-attention on a memory (the packed weight read in two slices), ``kdim`` (separate q/k/v weights for keys
    and values of other widths) or ``bias_kv`` (``add_bias_kv=True``)."""

    def __init__(self, batch_first, need_weights, kind="self"):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        extra = {"kdim": 6, "vdim": 4} if kind == "kdim" else {"add_bias_kv": True} if kind == "bias_kv" else {}
        self.attn = nn.MultiheadAttention(8, 2, batch_first=batch_first, **extra)
        self.head = nn.Linear(8, 3)
        self.need_weights, self.kind = need_weights, kind

    def forward(self, x, other=None):
        """``other``: the key padding mask (self-attention, bias_kv) or the memory (cross, kdim)."""
        h = self.norm(x)
        mask, memory = (None, other) if self.kind in ("cross", "kdim") else (other, None)
        k, v = (memory[..., :6], memory[..., 6:]) if self.kind == "kdim" else (memory, memory) if \
            self.kind == "cross" else (h, h)
        out = self.attn(h, k, v, key_padding_mask=mask, need_weights=self.need_weights)[0]
        return self.head(x + out)


CASES = [pytest.param(True, False, False, id="batch-first"), pytest.param(False, False, False, id="seq-first"),
         pytest.param(True, True, False, id="batch-first-padding-mask"),
         pytest.param(False, True, False, id="seq-first-padding-mask"),
         pytest.param(True, False, True, id="batch-first-need-weights"),
         pytest.param(False, False, True, id="seq-first-need-weights")]
#: the other configurations (Note [held parameters]): the keys follow the source's, in its order
KINDS = ["cross", "kdim", "bias_kv"]


def _case(batch_first, padding, need_weights, kind="self"):
    torch.manual_seed(0)
    source = Attend(batch_first, need_weights, kind).eval()
    x = torch.randn(2, 5, 8) if batch_first else torch.randn(5, 2, 8)
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    if kind in ("cross", "kdim"):
        memory = torch.randn(2, 7, 10 if kind == "kdim" else 8)
        return source, (x, memory if batch_first else memory.transpose(0, 1))
    return source, (x, mask) if padding else (x,)


def _loads_the_source_state_dict(source, inputs, result):
    model = result.model
    assert list(model.state_dict()) == list(source.state_dict())
    assert isinstance(model.attn, nn.MultiheadAttention)
    fresh = type(model)()
    fresh.load_state_dict(source.state_dict(), strict=True)
    fresh.eval()
    with torch.no_grad():
        np.testing.assert_allclose(fresh(*inputs).numpy(), source(*inputs).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch_first, padding, need_weights", CASES)
def test_multihead_attention_keeps_the_source_keys_and_loads_its_state_dict(batch_first, padding, need_weights,
                                                                           tmp_path):
    source, inputs = _case(batch_first, padding, need_weights)
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=inputs)  # verifies
    _loads_the_source_state_dict(source, inputs, result)
    code = result.files["code"].read_text()
    assert "self.attn.in_proj_weight" in code and "self.attn.out_proj(" in code and "_column" not in code


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_first", [True, False], ids=["batch-first", "seq-first"])
def test_other_multihead_attention_configurations_keep_the_source_keys(kind, batch_first, tmp_path):
    source, inputs = _case(batch_first, False, False, kind)
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=inputs)  # verifies
    _loads_the_source_state_dict(source, inputs, result)
    code = result.files["code"].read_text()
    assert {"kdim": "kdim=6, vdim=4", "bias_kv": "add_bias_kv=True"}.get(kind, "MultiheadAttention(8, 2)") in code


@pytest.mark.parametrize("batch_first, padding, need_weights", CASES[:3] + CASES[4:5])
def test_multihead_attention_to_keras_names_its_projections_after_the_source(batch_first, padding, need_weights,
                                                                            tmp_path):
    source, inputs = _case(batch_first, padding, need_weights)
    result = portx.convert(source, out=tmp_path / "out", to="keras-jax", example_inputs=inputs)  # verifies
    names = {layer.name for layer in result.model.layers}
    assert {"attn_in_proj", "attn_out_proj"} <= names, sorted(names)
