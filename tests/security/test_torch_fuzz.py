"""Fuzzers: random mutations of a .pt2's JSON members, and random --input specs.

Whatever the mutation, portx answers with exit 0, 1, 2 or 3, one line and no traceback, never runs
a payload, and leaves no OUT behind on failure. CI runs the "ci" hypothesis profile (a few
derandomized examples each); ``PORTX_FUZZ=1`` runs 1,000 random examples per property.
"""
import json
import shutil

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portx.cli import main
from portx.frontends.input_spec import parse_input_spec
from tests.support.pt2_hostile import export_small, mutate, rewrite

MEMBERS = ["models/model.json", "data/weights/model_weights_config.json",
           "data/constants/model_constants_config.json"]


def _paths(doc, prefix=()):
    """Every (path, value) in a JSON document, containers included."""
    yield prefix, doc
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


def hostile_values(marker):
    payload = f"__import__('builtins').open({str(marker)!r}, 'w')"
    return st.one_of(
        st.sampled_from([payload, f'x"); {payload}; ("', f"x=({payload})", f"a\n{payload}", "class", "", "-1",
                         "Symbol('s0', positive=True)", "Float('1.5', precision=53)", "Float('2.5', precision=999999)",
                         "torch.ops.aten.nonexistent.default", "../../etc/passwd",
                         "[1, {\"type\": \"os.system\", \"context\": \"null\", \"children_spec\": []}]"]),
        st.text(max_size=12), st.integers(min_value=-2**70, max_value=2**70), st.none(), st.booleans(),
        st.floats(allow_nan=True), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4),
                                                                                       st.integers(), max_size=2))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return export_small(tmp_path_factory.mktemp("fuzz") / "model.pt2")


def run_mutation(clean, workdir, member, index, value, delete, command):
    """Apply one mutation and run ``command``; returns the CliRunner result."""
    import zipfile

    with zipfile.ZipFile(clean) as z:
        doc = json.loads(z.read(f"model/{member}"))
    paths = [p for p, _ in _paths(doc)]
    path = paths[index % len(paths)]
    doc = mutate(doc, path, value, delete)
    src = rewrite(clean, workdir / "m.pt2", members={member: json.dumps(doc).encode()})
    # convert verifies too (forward and gradients): a mutation that loads reaches every stage
    args = ["inspect", str(src)] if command == "inspect" else ["convert", str(src), "-o", str(workdir / "out"),
                                                               "--grad"]
    return CliRunner().invoke(main, args)


def fuzz_pt2(data, workdir, clean, command):
    """Draw one mutation of ``clean``'s JSON members and run ``command`` on it (the test's body, and the campaign's
    in scripts/fuzz_campaign.py); returns the CliRunner result."""
    member = data.draw(st.sampled_from(MEMBERS), label="member")
    index = data.draw(st.integers(min_value=0, max_value=10_000), label="path index")
    value = data.draw(hostile_values(workdir / "marker"), label="value")
    delete = data.draw(st.booleans(), label="delete")
    return run_mutation(clean, workdir, member, index, value, delete, command)


def check(run, workdir):
    """Exit 0-3, no traceback, no payload ran, no OUT after a refusal."""
    assert run.exit_code in (0, 1, 2, 3), run.output
    assert "Traceback" not in run.output and "Logging error" not in run.output, run.output
    assert not (workdir / "marker").exists()
    if run.exit_code == 2:
        assert not (workdir / "out").exists()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_mutated_pt2_json_never_crashes_or_runs_code(tmp_path, clean, command, data):
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
    check(fuzz_pt2(data, tmp_path, clean, command), tmp_path)


@given(spec=st.one_of(st.text(max_size=30), st.from_regex(r"\A[a-z]{0,3}:?[0-9x]{0,24}(:[a-z0-9]{0,9})?\Z")))
def test_input_specs_parse_or_are_refused_cleanly(spec):
    from portx.errors import BadInput

    try:
        name, shape, dtype = parse_input_spec(spec)
    except BadInput as exc:
        assert "--input" in str(exc)
        return
    assert all(d >= 0 for d in shape) and isinstance(dtype, str)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=st.from_regex(r"\Ax:[0-9]{1,12}(x[0-9]{1,12}){0,2}(:(float32|float16|int64|bool|int8))?\Z"))
def test_input_specs_through_the_cli(tmp_path, spec):
    import torch

    from tests.support.pt2_hostile import Small

    path = tmp_path / "full.pt"
    if not path.exists():
        torch.save(Small().eval(), path)
    run = CliRunner().invoke(main, ["inspect", str(path), "--trust-pickle", "--input", spec])
    assert run.exit_code in (0, 2, 3), run.output
    assert "Traceback" not in run.output


def _recorded(name, field, value):
    """An edit of model.json's recorded type of tensor ``name``: ``field`` "size0" or "dtype"."""
    def edit(doc):
        meta = doc["graph_module"]["graph"]["tensor_values"][name]
        if field == "size0":
            meta["sizes"][0] = {"as_int": value}
        else:
            meta["dtype"] = value
    return edit


REGRESSIONS = [  # (id, edit of model.json, message): each ended in exit 70 before a campaign found it
    ("add-records-another-batch", _recorded("add", "size0", 2454),
     r"node add \(aten::add\): the program records its output as float32 \(2454, 3\), but its inputs give float32 "
     r"\(2, 3\)\. the archive's models/model\.json was edited"),
    ("input-records-another-batch", _recorded("x", "size0", 7),
     r"node fc1 \(aten::linear\): the program records its output as float32 \(2, 8\), but its inputs give float32 "
     r"\(7, 8\)"),
    ("relu-records-another-dtype", _recorded("relu", "dtype", 6),
     r"node relu \(aten::relu\): the program records its output as float16 \(2, 8\), but its inputs give float32"),
    ("module-call-graph-fqn-number",
     lambda doc: doc["graph_module"]["module_call_graph"][0].update(fqn=-1.4964383418475788e+16),
     r"torch\.export loads the archive but cannot rebuild its module \(AssertionError: expected first "
     r"module_call_graph fqn to be empty string"),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c[0] for c in REGRESSIONS])
def test_campaign_regressions(tmp_path, clean, case):
    import re
    import zipfile

    _, edit, message = case
    with zipfile.ZipFile(clean) as z:
        doc = json.loads(z.read("model/models/model.json"))
    edit(doc)
    src = rewrite(clean, tmp_path / "m.pt2", members={"models/model.json": json.dumps(doc).encode()})
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    check(run, tmp_path)
    assert run.exit_code == 2 and re.search(message, run.output), run.output
