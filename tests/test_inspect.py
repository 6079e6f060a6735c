"""``api.inspect`` returns an ``InspectReport`` (session/report.py) whose ``to_dict()`` is the dict it returned
before, and ``portx inspect --json``'s object; ``inspect(...)["ops"]`` still works, with a DeprecationWarning."""
import json

import pytest
from click.testing import CliRunner

import portx
from portx.cli import main
from portx.frontends import load
from portx.passes.legalize import status_of
from portx.session.report import InspectReport, OpRow
from portx.session.sections import inventory
from portx.targets import find_target
from tests.support.paths import SAMPLE


def _old_dict(source, target):
    """What ``api.inspect`` returned before it was typed (its code then)."""
    graph = load(str(source)).lower()
    rows = inventory(graph)
    for op, row in rows.items():
        row.update(status_of(find_target(target, "--target").table, op))
    return {"ops": rows, "nodes": len(graph.nodes), "weight_bytes": graph.weight_bytes(),
            "inputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
            "outputs": [[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs]}


def test_inspect_is_typed_and_its_dict_is_the_old_one():
    info = portx.inspect(str(SAMPLE), target="tpu")
    assert isinstance(info, InspectReport) and all(isinstance(row, OpRow) for row in info.ops.values())
    assert info.ops["conv"].count == 3 and info.ops["conv"].status == "native" and info.nodes > 0
    assert info.to_dict() == _old_dict(SAMPLE, "tpu")
    run = CliRunner().invoke(main, ["inspect", str(SAMPLE), "--target", "tpu", "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.output) == info.to_dict()
    assert "source" not in portx.inspect(str(SAMPLE)).to_dict()["ops"]["conv"]  # no target: no table columns


def test_a_key_read_still_works_with_a_deprecation_warning():
    info = portx.inspect(str(SAMPLE))
    with pytest.warns(DeprecationWarning, match=r'inspect\(\.\.\.\)\.ops'):
        assert info["ops"]["conv"]["count"] == info.ops["conv"].count
