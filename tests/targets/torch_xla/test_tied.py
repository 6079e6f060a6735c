"""A language model's output layer tied to its embedding, to torch-xla: an ``nn.Embedding`` and an ``nn.Linear`` as
the source declares them, the head's weight assigned the embedding's and the head called, as a person ties them
(Note [tied modules] in src/portx/targets/torch_xla/modules.py); the source's keys load strictly, the tie holds."""
import torch

import portx
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
