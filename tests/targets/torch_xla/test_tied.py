"""A language model's output layer tied to its embedding, to torch-xla: an ``nn.Embedding`` and an ``nn.Linear`` as
the source declares them, the head's weight assigned the embedding's and the head called, as a person ties them
(Note [tied modules] in src/portx/targets/torch_xla/modules.py); the source's keys load strictly, the tie holds."""
import pytest
import torch

import portx
from portx.targets.torch_xla.runtime import load_folder
from tests.ops.embedding import test_embedding as embedding_tests  # its TiedLM: wte, ln, lm_head tied to wte


def test_a_tied_head_is_a_linear_holding_the_embedding_s_weight(tmp_path):
    torch.manual_seed(0)
    model = embedding_tests.TiedLM(vocab=11).eval()
    ids = torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(0))
    result = portx.convert(model, example_inputs=(ids,), to="torch-xla", out=tmp_path / "out",
                           checks=portx.Checks(grad=False))
    assert result.report["verification"]["passed"], result.report["verification"]
    code = result.files["code"].read_text()
    assert "self.wte = nn.Embedding(11, 8)" in code and "self.lm_head = nn.Linear(8, 11, bias=False)" in code, code
    assert "self.lm_head.weight = self.wte.weight" in code and "self.lm_head(" in code, code
    assert "F.linear" not in code and "F.embedding" not in code and "nn.Module()" not in code, code
    assert list(result.model.state_dict()) == list(model.state_dict())
    assert result.model.wte.weight is result.model.lm_head.weight  # one parameter, as in the source
    result.model.load_state_dict(model.state_dict(), strict=True)
    torch.testing.assert_close(result.model(ids), model(ids), atol=1e-5, rtol=1e-5)
    assert "'wte'" not in code and "'lm_head'" not in code, code  # tp_plan() leaves a tied pair whole


class _Stack(torch.nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed_tokens, self.fc = torch.nn.Embedding(vocab, dim), torch.nn.Linear(dim, dim)

    def forward(self, ids):
        return torch.relu(self.fc(self.embed_tokens(ids)))


class _Seq2Seq(torch.nn.Module):
    """T5's and BART's ties (transformers 5): ``shared``, which nothing calls, and the encoder's and decoder's
    ``embed_tokens`` hold one table, and with ``head`` the LM head too."""

    def __init__(self, head, vocab=11, dim=8):
        super().__init__()
        self.shared, self.encoder, self.decoder = torch.nn.Embedding(vocab, dim), _Stack(vocab, dim), _Stack(vocab, dim)
        self.encoder.embed_tokens.weight = self.decoder.embed_tokens.weight = self.shared.weight
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False) if head else None
        if head:
            self.lm_head.weight = self.shared.weight

    def forward(self, src, tgt):
        y = self.encoder(src).mean(1, keepdim=True) + self.decoder(tgt)
        return self.lm_head(y) if self.lm_head is not None else y


@pytest.mark.parametrize("head", [True, False])
def test_embeddings_tied_to_one_nothing_calls_keep_every_key(head, tmp_path):
    """Note [tied modules]: a key of the tied table that no node reads (``shared.weight``) is an ``nn.Embedding``
    holding it, which each reader's module takes; the decoder's embedding is its own module, not the encoder's."""
    torch.manual_seed(0)
    model = _Seq2Seq(head).eval()
    ids = torch.randint(0, 11, (2, 5)), torch.randint(0, 11, (2, 4))
    result = portx.convert(model, example_inputs=ids, to="torch-xla", out=tmp_path / "out",
                           checks=portx.Checks(grad=False))  # verifies
    code = result.files["code"].read_text()
    assert "self.shared = nn.Embedding(11, 8)" in code and "self.decoder.embed_tokens(" in code, code
    for key in ["encoder.embed_tokens", "decoder.embed_tokens"] + ["lm_head"] * head:
        assert f"self.{key}.weight = self.shared.weight" in code, code
    assert list(result.model.state_dict()) == list(model.state_dict())
    built = load_folder(tmp_path / "out")  # load_model(), as a user runs it
    built.load_state_dict(model.state_dict(), strict=True)
    assert built.decoder.embed_tokens.weight is built.shared.weight is built.encoder.embed_tokens.weight
    torch.testing.assert_close(built(*ids), model(*ids), atol=1e-5, rtol=1e-5)
