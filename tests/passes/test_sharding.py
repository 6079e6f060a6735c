"""passes/sharding.py: roles read from the graph (Note [sharding roles]), specs for a mesh, bad meshes."""
import warnings

import pytest
import torch
from torch import nn

from portx.errors import BadInput
from portx.passes.legalize import PortxWarning
from portx.passes.pipeline import run_passes
from portx.passes.sharding import parse_mesh, partition_spec, plan_sharding, sharding_roles
from tests.support.harness import lower_torch
from tests.support.tiny_llama import tiny_llama


@pytest.fixture(scope="module")
def llama_graph():
    model, inputs = tiny_llama()
    return run_passes(lower_torch(model, *inputs)[0], "keras-jax")


def test_llama_attention_mlp_embeddings_and_head_get_megatron_roles(llama_graph):
    roles = llama_graph.meta["sharding"]["roles"]
    for i in (0, 1):
        for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"):
            assert roles[f"layers.{i}.{name}.weight"] == ("colwise", (0, 1)), name
        for name in ("self_attn.o_proj", "mlp.down_proj"):
            assert roles[f"layers.{i}.{name}.weight"] == ("rowwise", (1, 0)), name
    assert roles["embed_tokens.weight"] == roles["lm_head.weight"] == ("vocab", (0, 1))
    assert roles["norm.weight"][0] == "fsdp"  # a test model's vectors are a large share (Note [small weights])


def test_norm_scales_stay_whole_when_small_against_the_model(llama_graph):
    roles = sharding_roles(llama_graph, small_bytes=1024)
    assert {roles[n][0] for n in roles if "layernorm" in n or n == "norm.weight"} == {"small"}


def test_plan_for_a_2x4_mesh_splits_columns_rows_and_vocabulary(llama_graph):
    plan = plan_sharding(llama_graph, {"batch": 2, "model": 4})
    assert plan["layers.0.self_attn.q_proj.weight"].spec == ("model", None)
    assert plan["layers.0.mlp.down_proj.weight"].spec == (None, "model")
    assert plan["embed_tokens.weight"].spec == ("model", None)
    split = sum(1 for s in plan.values() if "model" in s.spec)
    assert split == len(plan)  # every weight of this model divides 4 ways


class Misnamed(nn.Module):
    """An attention block whose layer names say the opposite of what they do: roles follow the graph."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.output, self.down = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.query, self.key = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.output(x).split(c, -1))
        x = x + self.down(nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, c))
        return x + self.key(torch.relu(self.query(x)))


def test_roles_come_from_the_graph_not_the_layer_names():
    graph = run_passes(lower_torch(Misnamed().eval(), torch.randn(2, 5, 16))[0], "keras-jax")
    roles = graph.meta["sharding"]["roles"]
    assert roles["output.weight"][0] == roles["output.bias"][0] == roles["query.weight"][0] == "colwise"
    assert roles["down.weight"][0] == roles["key.weight"][0] == "rowwise"
    assert roles["down.bias"][0] == "small"  # a row-split linear's bias is added once, after the reduction


def test_an_mlp_chain_pairs_its_first_two_linears_only():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    roles = run_passes(lower_torch(model, torch.randn(2, 8))[0], "keras-jax").meta["sharding"]["roles"]
    assert [roles[f"{i}.weight"][0] for i in (0, 2, 4)] == ["colwise", "rowwise", "fsdp"]


def test_a_mesh_that_divides_no_dim_keeps_the_weight_whole_and_names_it(llama_graph):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_sharding(llama_graph, {"model": 3})  # 64, 32 and 16 are not multiples of 3
    (warning,) = [w for w in caught if issubclass(w.category, PortxWarning)]
    assert "layers.0.self_attn.k_proj.weight (16, 32) (colwise)" in str(warning.message)
    assert plan["layers.0.self_attn.k_proj.weight"].spec == (None, None)


def test_the_next_dim_is_taken_when_the_first_does_not_divide():
    assert partition_spec((16, 32), (0, 1), 32) == (None, "model")
    assert partition_spec((16, 32), (0, 1), 16) == ("model", None)
    assert partition_spec((16, 32), (), 4) == (None, None)
    assert partition_spec((6, 10), (0, 1), 4) is None


def test_parse_mesh():
    assert parse_mesh("batch=2,model=4", 8) == {"batch": 2, "model": 4}
    assert parse_mesh("model=8", 8) == {"model": 8}


@pytest.mark.parametrize("text, message", [
    ("batch=2,tensor=4", "'tensor=4' is not AXIS=SIZE"),
    ("batch=2,model=x", "'model=x' is not AXIS=SIZE"),
    ("model=4,model=2", "'model=2' is not AXIS=SIZE with a new axis"),
    ("model=0", "'model=0'"),
    ("batch=4,model=4", "16 devices, but 8 exist"),
])
def test_bad_mesh_is_one_line(text, message):
    with pytest.raises(BadInput, match=message) as caught:
        parse_mesh(text, 8)
    assert "\n" not in str(caught.value)
