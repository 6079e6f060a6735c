"""Fuzzer: random ``--input`` and ``--dynamic`` strings through ``portx convert``, in-process.

Whatever the string, portx converts (exit 0) or refuses it in one line (exit 2, or 3 for an op it cannot
convert at that size), never a traceback or exit 70. CI runs the "ci" hypothesis profile (a few derandomized
examples); ``PORTX_FUZZ=1`` runs 1,000 (Note [fuzz budget]), and scripts/fuzz_campaign.py (``cli-specs``)
counts every outcome.
"""
import shutil

import pytest
import torch
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portx.cli import main
from tests.support.fuzz_budget import examples
from tests.support.pt2_hostile import Small

NAMES = ["x", "y", "X", "", "batch", "x\n", "x\x00", "\u2028", "0", "-1", "../x", "x:y"]


class _Two(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y


def sources(folder):
    """{"pt": a full pickle (no shapes: --input needed), "pt2": a two-input torch.export archive}."""
    torch.manual_seed(0)
    torch.save(Small().eval(), folder / "full.pt")
    torch.export.save(torch.export.export(_Two(), (torch.randn(2, 3), torch.randn(2, 3))), folder / "two.pt2")
    return {"pt": folder / "full.pt", "pt2": folder / "two.pt2"}


def spec_strings():
    """Shaped like a spec (NAME:SIZES[:DTYPE], NAME:AXIS[,AXIS]) with odd parts, or anything at all."""
    name = st.one_of(st.sampled_from(["x", "y"]), st.sampled_from(NAMES), st.text(max_size=3))
    part = st.one_of(st.integers(0, 4), st.integers(0, 4), st.sampled_from(
        [-1, 2 ** 31, 2 ** 63, 10 ** 30, "\u00b2", "\u0663", " 1", "1 ", "0x1", "1e3", "+1", ""]), st.text(max_size=2))
    sizes = st.lists(part, min_size=1, max_size=4).map(lambda xs: "x".join(map(str, xs)))
    axes = st.lists(part, min_size=1, max_size=3).map(lambda xs: ",".join(map(str, xs)))
    dtypes = st.sampled_from(["", "", ":float32", ":float16", ":int64", ":bool", ":int8", ":uint64", ":complex64",
                              ":str", ":float32:float32", ":"])
    shaped = st.tuples(name, st.one_of(sizes, axes), dtypes).map(lambda t: f"{t[0]}:{t[1]}{t[2]}")
    valid = st.sampled_from(["x:2x4", "x:1x4:float32", "x:8x4", "x:0x4", "x:2x3", "x:1", "x:0", "y:0", "y:1",
                             "x:0,1", "x:1,0", "y:0,0", "x:2x4:float16", "x:2x4:int64"])
    return st.one_of(valid, shaped, shaped, shaped, st.text(max_size=30))


def fuzz_specs(data, workdir, found):
    """Draw one option and its string(s) and convert (the test's body, and the campaign's); the CliRunner result."""
    option = data.draw(st.sampled_from(["--input", "--dynamic"]), label="option")
    specs = data.draw(st.lists(spec_strings(), min_size=1, max_size=2), label="specs")
    source = ["convert", str(found["pt"]), "--trust-pickle"] if option == "--input" else ["convert", str(found["pt2"])]
    shutil.rmtree(workdir / "out", ignore_errors=True)
    args = source + [a for spec in specs for a in (option, spec)] + ["-o", str(workdir / "out"), "--no-verify"]
    return CliRunner().invoke(main, args)


def check(run, workdir):
    """Exit 0, 2 or 3; no traceback, no internal error; no OUT after a refusal."""
    assert run.exit_code in (0, 2, 3), run.output
    assert "Traceback" not in run.output and "internal error" not in run.output, run.output
    assert run.exit_code == 0 or not (workdir / "out").exists()


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    return sources(tmp_path_factory.mktemp("specs"))


@settings(max_examples=examples(share=2, floor=4),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_input_and_dynamic_strings_convert_or_are_refused_cleanly(tmp_path, found, data):
    check(fuzz_specs(data, tmp_path, found), tmp_path)


REGRESSIONS = [  # (id, option, spec, message): each ended in exit 70, or in a message over several lines, before
    ("dynamic-axis-superscript-two", "--dynamic", "x:\u00b2", r"--dynamic x:\u00b2: axis '\u00b2' is not a number"),
    ("dynamic-name-with-newline", "--dynamic", "x\ny:0", r"--dynamic 'x\\ny:0': the model has no input 'x\\ny'"),
    ("input-int64-into-float-linear", "--input", "x:2x4:int64",  # Note [recorded types]: fake kernels let it through
     r"node fc1 \(aten::linear\): torch itself cannot run it on the example's inputs \(RuntimeError: mat1 and mat2 "
     r"must have the same dtype"),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c[0] for c in REGRESSIONS])
def test_campaign_regressions(tmp_path, found, case):
    import re

    _, option, spec, message = case
    source = [str(found["pt"]), "--trust-pickle"] if option == "--input" else [str(found["pt2"])]
    run = CliRunner().invoke(main, ["convert", *source, option, spec, "-o", str(tmp_path / "out")])
    check(run, tmp_path)
    lines = [line for line in run.output.splitlines() if line.startswith("portx:")]
    assert run.exit_code == 2 and len(lines) == 1 and re.search(message, lines[0]), run.output
