"""passes/free_dims.py: the constants a free dim may shape (rows repeated, aranges per line, causal bands), and the
repeated blocks found again after the nodes it puts first."""
import numpy as np
import torch
from torch import nn

import portx
from portx.passes.free_dims import band_of, row_kind
from portx.passes.static_batch import _by_literals


def test_an_arange_per_line_is_a_row_of_starts_and_steps():
    angles = np.arange(6, dtype=np.float32)[:, None] * np.array([1.0, 0.5, 0.25], np.float32) + 2.0
    start, step = row_kind(angles, 0)
    assert start.shape == step.shape == (1, 3)
    np.testing.assert_array_equal(step, [[1.0, 0.5, 0.25]])
    assert row_kind(np.cos(angles), 0) is None


def test_causal_and_sliding_window_masks_are_bands():
    causal = np.tril(np.ones((5, 5), bool))[None, None]
    assert band_of(causal, {2: None, 3: None}) == (2, 3, None, 0)
    offsets = np.arange(5)[None, :] - np.arange(5)[:, None]
    window = (offsets <= 0) & (offsets >= -2)
    assert band_of(window, {0: None, 1: None}) == (0, 1, -2, 0)
    assert band_of(np.eye(5, dtype=bool)[[1, 0, 2, 3, 4]], {0: None, 1: None}) is None  # not a band


def test_a_size_torch_computed_is_rewritten_before_a_multiple_of_one():
    """Note [sizes before multiples]: the ViT's attention output unmerged to (L, B, E) at batch 2 -> 3."""
    rewrites = [c["shape"] for c in _by_literals({"shape": (16, 2, 16)}, {2: {3}, 4: {6}, 32: {48}})]
    assert rewrites[:4] == [(16, 2, 16), (16, 3, 16), (24, 2, 16), (16, 2, 24)]
    assert [c["shape"] for c in _by_literals({"shape": (32, 16)}, {2: {3}, 32: {48}})][:3] == \
        [(32, 16), (48, 16), (32, 24)]  # a merged (b * s) row axis torch computed, then 16 as 8 * 2


class CausalSinusoid(nn.Module):
    """Self-attention with a causal mask and sinusoidal positions, both computed in forward from arange."""

    def forward(self, x):
        length = x.shape[1]
        angles = torch.arange(length)[:, None] * torch.tensor([1.0, 0.5, 0.25, 0.125])[None, :]
        x = x + torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        scores = (x @ x.transpose(1, 2)).masked_fill(~causal, float("-inf"))
        return scores.softmax(-1) @ x


def test_causal_masks_and_position_tables_computed_in_forward_keep_the_length_free(tmp_path):
    result = portx.convert(CausalSinusoid(), example_inputs=(torch.randn(2, 6, 8),), to="keras-jax",
                           out=tmp_path / "o", dynamic=["x:1"], grad=False)
    rows = {row["symbol"]: row for row in result.report["dynamic"]}
    assert rows["x_1"]["free"], result.report["warnings"]
    assert [c["size"] for c in rows["x_1"]["verified"]] == [6, 9] and all(c["passed"] for c in rows["x_1"]["verified"])


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


class OnesThenBlocks(nn.Module):
    """A constant of the batch's size (rewritten into nodes put first) before two blocks of a ModuleList."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        x = x * torch.ones(x.shape[0], 1, 8).cumsum(1)
        for block in self.blocks:
            x = block(x)
        return x


def test_the_nodes_free_dims_put_first_leave_each_block_on_its_own_nodes():
    from portx.frontends import load
    from portx.session.dims import lower_for
    from portx.targets import TARGETS

    torch.manual_seed(0)
    graph = lower_for(load(OnesThenBlocks().eval(), example_inputs=(torch.randn(2, 4, 8),)), TARGETS["torch-xla"])
    assert graph.meta["free"]["dims"], "the batch is free"
    blocks = graph.meta["blocks"]  # Note [blocks after free dims]
    assert [b["key"] for b in blocks] == ["blocks.0", "blocks.1"] and blocks[0]["kind"] == blocks[1]["kind"]
    for block in blocks:
        scopes = {n.scope for n in graph.nodes[block["start"]:block["stop"]] if n.scope}
        assert scopes and all(s.startswith(block["key"]) for s in scopes), (block, scopes)


class _CountingBlock(nn.Module):
    """A block that reads a constant of the batch's size itself: free dims put its nodes first, under its scope."""

    def __init__(self):
        super().__init__()
        self.fc, self.out, self.norm = nn.Linear(8, 16), nn.Linear(16, 8), nn.LayerNorm(8)

    def forward(self, x):
        h = torch.relu(self.fc(x * torch.ones(x.shape[0], 1, 8).cumsum(1)))
        return self.norm(x + torch.sigmoid(self.out(h)))


class CountingBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([_CountingBlock() for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_a_block_whose_nodes_free_dims_put_first_is_still_one_block_written_once(tmp_path):
    """Note [a block's own nodes]: the nodes put first are glue; each block is its longest stretch (a keras-hub
    Llama's layers grow their rotary positions and mask so, and were left flat)."""
    from portx.frontends import load
    from portx.session.dims import lower_for
    from portx.targets import TARGETS
    from tests.support.structured_code import assert_structured

    torch.manual_seed(0)
    model, x = CountingBlocks().eval(), torch.randn(2, 4, 8)
    graph = lower_for(load(model, example_inputs=(x,)), TARGETS["torch-xla"])
    assert graph.meta["free"]["dims"] and graph.nodes[0].scope.startswith("blocks.0"), "a block's nodes put first"
    blocks = graph.meta["blocks"]
    assert [b["key"] for b in blocks] == [f"blocks.{i}" for i in range(4)] and len({b["kind"] for b in blocks}) == 1
    result = portx.convert(model, example_inputs=(x,), to="torch-xla", out=tmp_path / "o", grad=False)
    assert result.report["verification"]["passed"] and result.report["dynamic"][0]["free"]
    assert assert_structured(result, "torch-xla")["defs"] == 1  # one class, shorter than the flat form
