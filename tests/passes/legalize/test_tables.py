"""The op tables are complete and consistent with the registry, the legalize rules and the pipelines."""
import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

import portx  # noqa: F401
from portx.cli import main
from portx.passes.legalize import ALIASES, NODE_RULES, TABLES, load_table, rules_of, table_problems, tables
from portx.passes.pipeline import PIPELINES


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_op_has_a_row_and_every_row_is_valid(name):
    assert table_problems(name) == []


@pytest.mark.parametrize("target", sorted(TABLES))
def test_every_rule_a_table_names_is_run_by_that_targets_pipeline(target):
    # op rows: the pipeline's first legalize step applies this very table, after only the source-level
    # clean-ups and the shared decompositions (whose output it legalizes); dtype rows: the pass is listed
    passes = [fn.__name__ for fn in PIPELINES[target]]
    step = f"legalize_for_{target.replace('-', '_')}"
    assert step in passes and set(passes[:passes.index(step)]) <= {"remove_dead_nodes", "fuse_idioms", "fuse_attention",
                                                                   "decompose"}, passes
    for kind, rows in load_table(target).items():
        for key, row in rows.items():
            for rule in rules_of(row["status"]):
                assert rule in NODE_RULES if kind == "op" else rule in passes, f"{target}: {kind}.{key} {rule}"


def test_tables_are_named_by_target_and_the_old_names_still_work():
    assert sorted(TABLES) == ["keras-jax", "torch-xla"]
    assert load_table("tpu") == load_table("keras-jax") and load_table("torch_xla") == load_table("torch-xla")
    assert set(ALIASES.values()) <= set(TABLES)
    with pytest.raises(KeyError, match="unknown op table 'tpu2'"):
        load_table("tpu2")


def test_no_rule_module_imports_the_tables():
    # tables.py imports the rules to check rows against them; a rule importing it back is a cycle
    folder = Path(tables.__file__).parent
    for path in folder.glob("*.py"):
        if path.name in ("__init__.py", "tables.py", "driver.py"):
            continue
        imported = {node.module for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"tables", "driver"}, f"{path.name} imports {imported & {'tables', 'driver'}}"


def test_a_missing_row_is_reported(monkeypatch):
    real = tables.load_table

    def without_conv(name):
        table = real(name)
        table["op"].pop("conv")
        table["op"]["no_such_op"] = {"status": "rewrite:not_a_rule", "why": "x", "source": "y"}
        return table

    monkeypatch.setattr(tables, "load_table", without_conv)
    problems = tables.table_problems("keras-jax")
    assert "op conv has no row" in problems
    assert "row op.no_such_op names no registered op" in problems
    assert any("unregistered rule rewrite:not_a_rule" in p for p in problems)


@pytest.mark.parametrize("name", ["keras-jax", "tpu"])
def test_ops_command_prints_the_keras_jax_table(name):
    run = CliRunner().invoke(main, ["ops", "--target", name])
    assert run.exit_code == 0, run.output
    assert "resize" in run.output and "native" in run.output
    assert "rewrite:cast_float64_to_float32" in run.output
    assert load_table(name)["op"]["conv"]["source"].startswith("http")


@pytest.mark.parametrize("name", ["torch-xla", "torch_xla"])
def test_ops_command_prints_the_torch_xla_table(name):
    run = CliRunner().invoke(main, ["ops", "--target", name])
    assert run.exit_code == 0, run.output
    assert "resize_cubic_as_matmul" in run.output and "pytorch/xla/issues/7267" in run.output
    assert "pattern nonzero" in run.output


@pytest.mark.parametrize("name", sorted(TABLES))
def test_status_counts_cover_every_op_row(name):
    from portx.ir import REGISTRY
    from portx.passes.legalize import status_counts

    counts = status_counts(name)
    assert sum(counts.values()) == len(REGISTRY) and counts["rewrite"] >= 3


def test_a_rule_named_for_the_wrong_op_is_reported(monkeypatch):
    real = tables.load_table

    def misrouted(name):
        table = real(name)
        table["op"]["conv"]["status"] = "rewrite:resize_cubic_as_matmul"
        table["dtype"]["int64"]["status"] = "rewrite:resize_cubic_as_matmul"
        return table

    monkeypatch.setattr(tables, "load_table", misrouted)
    problems = tables.table_problems("torch-xla")
    assert any("rule resize_cubic_as_matmul rewrites ['resize'], not conv" in p for p in problems)
    assert any("row dtype.int64: rule resize_cubic_as_matmul rewrites single nodes" in p for p in problems)
