"""The op tables are complete and consistent with the registry and the legalize rules."""
import pytest
from click.testing import CliRunner

import portx  # noqa: F401
from portx.cli import main
from portx.optables import TABLES, load_table, table_problems


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_op_has_a_row_and_every_row_is_valid(name):
    assert table_problems(name) == []


def test_a_missing_row_is_reported(monkeypatch):
    import portx.optables as optables

    real = optables.load_table

    def without_conv(name):
        table = real(name)
        table["op"].pop("conv")
        table["op"]["no_such_op"] = {"status": "rewrite:not_a_rule", "why": "x", "source": "y"}
        return table

    monkeypatch.setattr(optables, "load_table", without_conv)
    problems = optables.table_problems("tpu")
    assert "op conv has no row" in problems
    assert "row op.no_such_op names no registered op" in problems
    assert any("unregistered rule rewrite:not_a_rule" in p for p in problems)


def test_ops_command_prints_the_tpu_table():
    run = CliRunner().invoke(main, ["ops", "--target", "tpu"])
    assert run.exit_code == 0, run.output
    assert "resize" in run.output and "native" in run.output
    assert "rewrite:cast_float64_to_float32" in run.output
    assert load_table("tpu")["op"]["conv"]["source"].startswith("http")


def test_ops_command_prints_the_torch_xla_table():
    run = CliRunner().invoke(main, ["ops", "--target", "torch_xla"])
    assert run.exit_code == 0, run.output
    assert "resize_cubic_as_matmul" in run.output and "pytorch/xla/issues/7267" in run.output
    assert "pattern nonzero" in run.output


@pytest.mark.parametrize("name", sorted(TABLES))
def test_status_counts_cover_every_op_row(name):
    from portx.ir import REGISTRY
    from portx.optables import status_counts

    counts = status_counts(name)
    assert sum(counts.values()) == len(REGISTRY) and counts["rewrite"] >= 3


def test_a_rule_named_for_the_wrong_op_is_reported(monkeypatch):
    import portx.optables as optables

    real = optables.load_table

    def misrouted(name):
        table = real(name)
        table["op"]["conv"]["status"] = "rewrite:resize_cubic_as_matmul"
        return table

    monkeypatch.setattr(optables, "load_table", misrouted)
    assert any("rule resize_cubic_as_matmul rewrites ['resize'], not conv" in p
               for p in optables.table_problems("torch_xla"))
