"""Note [symbols read directly] (frontends/torch/symbols.py): a live module is exported once with its free axes
symbolic and lowered once; its graph at a second size comes from torch's own symbolic shapes and the ops' shape
rules (a pad's nested (before, after) pairs too), not from lowering it again. A spy on the lowering counts the
walks; the emitted models run at other batch sizes and lengths and match the source."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
from portx.options import Checks, Output
import portx.frontends.torch.source as torch_source
from portx.targets import find_target
from tests.test_hf_text import _model
from tests.support.counting import counted


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(8 * 8 * 8, 5)

    def forward(self, x):
        return self.head(self.conv(x).flatten(1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x).reshape(x.shape[0], 2, 2).softmax(-1)


@pytest.fixture
def walks(monkeypatch):
    """The number of times a conversion lowers (walks) a torch program."""
    return counted(monkeypatch, torch_source, "walk_program")


def _found(report):
    return {r["symbol"]: (r["free"], r.get("found_by")) for r in report["dynamic"]}


def _matches(result, to, module, inputs):
    got = find_target(to).run(result.model, [x.numpy() for x in inputs])[0]
    with torch.no_grad():
        want = module(*inputs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make, shape, to", [(SmallCNN, (2, 3, 16, 16), "keras-jax"), (SmallCNN, (2, 3, 16, 16),
                                              "torch-xla"), (MLP, (3, 12), "keras-jax")], ids=["cnn", "cnn-torch", "mlp"])
def test_a_cnn_and_an_mlp_are_lowered_once(make, shape, to, walks, tmp_path):
    module = make().eval()
    result = portx.convert(module, example_inputs=(torch.randn(*shape),), to=to, out=tmp_path / "o", grad=False)
    assert walks[0] == 1, walks
    assert _found(result.report) == {"batch": (True, "symbolic export")}, result.report["warnings"]
    for n in (1, 3, 8):
        _matches(result, to, module, (torch.randn(n, *shape[1:], generator=torch.Generator().manual_seed(n)),))


class Sequence(nn.Module):
    """A linear layer over a sequence; ``pad``: first ``F.pad`` by a size read from ``x.shape`` (the pad's (before,
    after) pairs are nested in a tuple)."""

    def __init__(self, pad=False):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.pad = nn.Linear(6, 4), pad

    def forward(self, x):
        return self.fc(F.pad(x, (0, 0, x.shape[1] // 2, 1)) if self.pad else x).softmax(1)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_pad_by_a_run_time_size_is_read_from_the_symbols(to, walks, tmp_path):
    """Before: its pads (nested pairs) were never rewritten from torch's shapes, so the export was lowered twice."""
    module = Sequence(pad=True).eval()
    result = portx.convert(module, example_inputs=(torch.randn(2, 8, 6),), to=to, out=tmp_path / "o", grad=False,
                           dynamic=["x:1"])
    assert walks[0] == 1, walks
    assert _found(result.report) == {"batch": (True, "symbolic export"), "x_1": (True, "symbolic export")}, \
        result.report["warnings"]
    for n, length in ((1, 12), (3, 8), (5, 20)):
        _matches(result, to, module, (torch.randn(n, length, 6, generator=torch.Generator().manual_seed(n)),))


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_batch_of_one_with_a_dynamic_axis_is_traced_at_two_once(to, walks, tmp_path):
    """Note [batch of one]: before, ``--dynamic x:1`` kept a batch of 1 traced at 1, then exported and lowered again
    at 2 (two walks); now it is traced at 2 from the start, and still verified at the user's 1."""
    module = Sequence().eval()
    result = portx.convert(module, example_inputs=(torch.randn(1, 8, 6),), to=to, out=tmp_path / "o", grad=False,
                           dynamic=["x:1"])
    assert walks[0] == 1, walks
    rows = {r["symbol"]: r for r in result.report["dynamic"]}
    assert rows["batch"]["free"] and rows["x_1"]["free"] and rows["batch"]["example_size"] == 1
    assert [c["size"] for c in rows["batch"]["verified"]] == [1, 8] and result.report["verification"]["passed"]
    assert result.report["verification"]["inputs"][0][1] == [1, 8, 6]
    for n, length in ((1, 5), (3, 8)):
        _matches(result, to, module, (torch.randn(n, length, 6, generator=torch.Generator().manual_seed(n)),))


def test_a_hugging_face_decoder_keeps_batch_and_length_free_from_one_lowering(walks, tmp_path):
    module = _model("llama", "eager")
    ids = torch.randint(1, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    result = portx.convert(module, example_inputs=(ids, torch.ones(2, 8, dtype=torch.long)), to="keras-jax",
                           out=tmp_path / "o", grad=False, dynamic=["input_ids:1", "attention_mask:1"])
    assert walks[0] == 1, walks
    assert _found(result.report) == {"batch": (True, "symbolic export"),
                                     "input_ids_1": (True, "symbolic export")}, result.report["warnings"]
    for batch, length in ((1, 5), (3, 8), (8, 13)):
        ids = torch.randint(1, 100, (batch, length), generator=torch.Generator().manual_seed(length))
        mask = torch.ones(batch, length, dtype=torch.long)
        mask[0, length // 2:] = 0
        _matches(result, "keras-jax", module, (ids, mask))


class FoldedFromSize(nn.Module):
    """A constant folded from a moving size (``torch.ones(length).mean()``): its value at another length is not in
    torch's shapes (Note [symbols read directly])."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        return self.fc(x) * torch.ones(x.shape[1]).mean()


def test_what_the_symbols_do_not_settle_is_lowered_twice_and_said_so(walks, tmp_path):
    """The constant's value at the second length is unknown to torch's shapes, so the one export is lowered again
    there. (Channels-last inputs and outputs, the case this test used, are read directly now:
    tests/session/test_channels_last_symbols.py.)"""
    module = FoldedFromSize().eval()
    result = portx.convert(module, example_inputs=(torch.randn(2, 8, 6),), to="keras-jax", dynamic=["x:1"],
                           checks=Checks(grad=False), output=Output(out=tmp_path / "o"))
    assert _found(result.report) == {"batch": (True, "symbolic export"),
                                     "x_1": (True, "symbolic export, lowered twice")}, result.report["warnings"]
    assert walks[0] == 2
    _matches(result, "keras-jax", module, (torch.randn(3, 11, 6),))


class SpelledNumbers(nn.Module):
    """Numbers the program spells that equal the example's sizes by chance (Note [literal or size]): BART's
    position offset (``+ 2`` at batch 2) and T5's ``max_exact`` (a relative distance ``< 8`` at length 8)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.pos = nn.Embedding(50, 8), nn.Embedding(40, 8)

    def forward(self, ids):
        n = torch.arange(ids.shape[1])
        distance = (n[None, :] - n[:, None]).abs()
        bucket = torch.where(distance < 8, distance, 8 + distance // 2)
        return self.emb(ids) + self.pos(n + 2) + bucket.float().mean(-1, keepdim=True)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_number_equal_to_the_example_size_stays_a_number(to, walks, tmp_path):
    module = SpelledNumbers().eval()
    ids = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(0))
    result = portx.convert(module, example_inputs=(ids,), to=to, out=tmp_path / "o", grad=False, dynamic=["ids:1"])
    assert walks[0] == 1, walks
    assert _found(result.report) == {"batch": (True, "symbolic export"),
                                     "ids_1": (True, "symbolic export")}, result.report["warnings"]
    for batch, length in ((1, 5), (3, 11), (8, 13)):
        ids = torch.randint(0, 50, (batch, length), generator=torch.Generator().manual_seed(length))
        _matches(result, to, module, (ids,))
