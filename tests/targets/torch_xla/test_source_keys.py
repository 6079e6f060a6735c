"""The emitted module's state_dict keys are the source's, in the source's order (Note [the source's keys] in
src/portx/targets/torch_xla/key_order.py): statements in the order the source registers, a tied parameter under each
of its keys, a buffer the source reads at its source name."""
import torch
from torch import nn

import portx
from portx.targets.torch_xla.runtime import load_folder
from tests.ops.embedding.test_embedding import TiedLM  # wte, ln, lm_head tied to wte


class _Late(nn.Module):
    """A block that registers ``fc2`` and a persistent index buffer before ``fc1``, which its forward applies first."""

    def __init__(self):
        super().__init__()
        self.fc2 = nn.Linear(16, 8)
        self.register_buffer("order", torch.arange(23, -1, -1) % 8)
        self.fc1 = nn.Linear(8, 16)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x))).index_select(1, self.order)[:, :8]


class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 3)
        self.blocks = nn.Sequential(_Late(), _Late())

    def forward(self, x):
        return self.head(self.blocks(x))


def _convert(model, inputs, tmp_path):
    model = model.eval()
    result = portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "out")  # verifies
    return model, result


def test_a_tied_parameter_is_the_source_s_under_each_key(tmp_path):
    torch.manual_seed(0)
    model, result = _convert(TiedLM(vocab=11).eval(), (torch.randint(0, 11, (2, 5)),), tmp_path)
    code = result.files["code"].read_text()
    assert "self.lm_head.weight = self.wte.weight" in code, code
    assert list(result.model.state_dict()) == list(model.state_dict()) == ["wte.weight", "ln.weight", "ln.bias",
                                                                            "lm_head.weight"]
    assert result.model.lm_head.weight is result.model.wte.weight
    built = load_folder(tmp_path / "out")  # load_model(), as a user runs it
    assert built.lm_head.weight is built.wte.weight
    built.load_state_dict(model.state_dict(), strict=True)  # the source's state_dict loads as it is
    assert built.lm_head.weight is built.wte.weight


def test_statements_and_buffers_follow_the_source_s_order_and_names(tmp_path):
    torch.manual_seed(0)
    model, result = _convert(_Stack(), (torch.randn(2, 8),), tmp_path)
    code = result.files["code"].read_text()
    assert "self.blocks[0].register_buffer('order'" in code, code  # on its module, at the source's name
    assert list(result.model.state_dict()) == list(model.state_dict()), (list(result.model.state_dict()),
                                                                         list(model.state_dict()))
    result.model.load_state_dict(model.state_dict(), strict=True)


class _Computed(nn.Module):
    """A buffer computed in ``__init__`` with ``persistent=False`` (no state_dict key), read as it is and folded."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 24)
        self.register_buffer("order", torch.arange(23, -1, -1) % 8, persistent=False)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 24), persistent=False)

    def forward(self, x):
        return (self.fc(x) * self.scale.unsqueeze(0)).index_select(1, self.order)


def test_a_computed_buffer_is_non_persistent_and_loads_apart(tmp_path):
    """Note [computed buffers] in src/portx/targets/torch_xla/shards.py: the source's keys and no other, strict loads
    of the source's state_dict; the values come from buffers.safetensors, read by load_model (one file or shards)."""
    torch.manual_seed(0)
    model, x = _Computed().eval(), torch.randn(2, 8)
    for out, shard in (tmp_path / "one", None), (tmp_path / "shards", "500B"):
        result = portx.convert(model, example_inputs=(x,), to="torch-xla",
                               output=portx.Output(out=out, max_shard_size=shard))  # verifies, module_on's model too
        code = result.files["code"].read_text()
        assert "persistent=False)" in code and "load_buffers(model)" in code, code
        assert list(result.model.state_dict()) == list(model.state_dict()) == ["fc.weight", "fc.bias"]
        assert (out / "buffers.safetensors").is_file() and (shard is None) == (out / "model.safetensors").is_file()
        built = load_folder(out)  # load_model(), as a user runs it
        built.load_state_dict(model.state_dict(), strict=True)
        torch.testing.assert_close(built(x), model(x))
