"""The emitted torch model's tp_plan(): parallelize_module on 2 and 4 CPU processes (gloo) gives one process's
output (1e-5), with the weights split (targets/torch_xla/sharding.py, Note [torch plan])."""
import numpy as np
import torch

from portx.passes.pipeline import run_passes
from portx.targets.codegen import import_by_path
from portx.targets.torch_xla.emitter import emit_torch
from portx.targets.torch_xla.sharding import plan_patterns, plan_rows, resolve
from tests.support.harness import lower_torch
from tests.support.tiny_llama import tiny_llama
from tests.support.tp_child import run_tp_plan


def test_tp_plan_on_2_and_4_gloo_processes_matches_one_process(tmp_path):
    model, inputs = tiny_llama()
    graph = run_passes(lower_torch(model, *inputs)[0], "torch-xla")
    emitted = emit_torch(graph, tmp_path)
    module = import_by_path(tmp_path / "model.py")
    plan = module.tp_plan()
    assert type(plan["layers.*.self_attn.q_proj"]).__name__ == "ColwiseParallel"  # one row for every block
    assert type(plan["layers.*.mlp.down_proj"]).__name__ == "RowwiseParallel" and "layers.0.mlp.down_proj" not in plan
    # the patterns shard the same submodules the same way as one row per block did
    rows = plan_rows(graph, module.load_model(), emitted["module_of"])
    paths = [name for name, _ in module.load_model().named_modules()]
    resolved = {path: (style, why) for key, style, why in plan_patterns(rows, paths) for path in resolve(key, paths)}
    assert len(plan_patterns(rows, paths)) < len(rows) and resolved == {p: (s, w) for p, s, w in rows}
    assert type(plan["embed_tokens"]).__name__ == "RowwiseParallel" and "lm_head" in plan
    ids = inputs[0].numpy()
    with torch.no_grad():
        want = module.load_model()(torch.from_numpy(ids)).numpy()
    total = sum(p.numel() for p in module.load_model().parameters())
    for world in (2, 4):
        got, local = run_tp_plan(tmp_path, [ids], world)
        assert np.max(np.abs(got - want)) <= 1e-5, (world, np.max(np.abs(got - want)))
        assert local <= 1.05 * total / world, (world, local, total)  # only the norm scales stay whole


def test_plan_patterns_keep_the_numbers_rows_share():
    # the zoo GPT's MLP is an nn.Sequential: its linears are blocks.N.mlp.0 and .2, the GELU between them .1
    paths = ["", "blocks", *(f"blocks.{b}.{part}" for b in range(2) for part in ("mlp", "mlp.0", "mlp.1", "mlp.2"))]
    rows = [(f"blocks.{b}.{part}", style, "MLP pair") for b in range(2)
            for part, style in (("mlp.0", "ColwiseParallel()"), ("mlp.2", "RowwiseParallel()"))]
    assert plan_patterns(rows, paths) == [("blocks.*.mlp.0", "ColwiseParallel()", "MLP pair"),
                                          ("blocks.*.mlp.2", "RowwiseParallel()", "MLP pair")]
    assert plan_patterns(rows[:3], paths) == [("blocks.*.mlp.0", "ColwiseParallel()", "MLP pair"),
                                              ("blocks.0.mlp.2", "RowwiseParallel()", "MLP pair")]
    # a pattern that would also name a submodule without a row (a third block) stays one row per path
    assert plan_patterns(rows, [*paths, "blocks.2", "blocks.2.mlp", "blocks.2.mlp.0", "blocks.2.mlp.2"]) == rows
