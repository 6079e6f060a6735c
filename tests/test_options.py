"""The option groups (options.py) and their CLI decorators (cli/options.py): one spelling, one check, everywhere."""
import inspect as pyinspect
import math
import warnings

import pytest
from click.testing import CliRunner

from portx.cli import main
from portx.errors import BadInput, BadValue
from portx.options import DEFAULT_ATOL, Checks, Output, Shapes, Trust, grouped

TRUST_FLAGS = ("--trust-pickle", "--trust-savedmodel", "--unsafe-keras", "--trust-remote-code")


#: the commands that read a source (a SRC argument): each takes the whole Trust group (Note [one trust])
READERS = sorted(name for name, command in main.commands.items() if any(p.name == "src" for p in command.params))


@pytest.mark.parametrize("command", READERS)
def test_every_command_takes_every_trust_flag(command):
    text = CliRunner().invoke(main, [command, "--help"]).output
    assert all(flag in text for flag in TRUST_FLAGS), text
    assert {"convert", "verify", "inspect"} <= set(READERS)


@pytest.mark.parametrize("kwargs, match", [
    ({"atol": math.nan}, "--atol nan: a tolerance must be a finite number >= 0"),
    ({"rtol": -1.0}, "--rtol -1.0: a tolerance must be a finite number >= 0"),
    ({"atol": True}, "--atol True"),
    ({"seed": -3}, "--seed -3: must be 0 or more")])
def test_checks_refuse_bad_values_when_made(kwargs, match):
    with pytest.raises(BadValue, match=match):
        Checks(**kwargs)


def test_shapes_refuse_a_bad_static_batch_and_keep_tuples():
    with pytest.raises(BadValue, match="--static-batch 0: a batch size is a whole number >= 1"):
        Shapes(static_batch=0)
    assert Shapes(inputs=["x:1x2"], dynamic=None) == Shapes(inputs=("x:1x2",))


def test_flat_keywords_map_into_the_groups_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"convert\(\): flat keyword arguments \(atol, out, unsafe_keras\)"):
        groups = grouped("convert", {"atol": 1e-3, "out": "o", "unsafe_keras": True}, trust=Trust(),
                         shapes=Shapes(), checks=Checks(rtol=0.0), output=Output())
    assert groups["checks"] == Checks(atol=1e-3, rtol=0.0)
    assert groups["output"].out == "o" and groups["trust"] == Trust(unsafe_keras=True)
    with pytest.raises(BadValue, match="--atol nan"):  # a flat tolerance is checked as a grouped one
        grouped("convert", {"atol": math.nan}, checks=Checks())


@pytest.mark.parametrize("entry", ["convert", "verify", "inspect", "assert_equivalent"])
def test_the_deprecation_warning_points_at_the_callers_line(entry, tmp_path):
    import portx.api
    import portx.testing

    call = getattr(portx.testing if entry == "assert_equivalent" else portx.api, entry)
    args = {"convert": (), "verify": (tmp_path,), "inspect": (), "assert_equivalent": (tmp_path,)}[entry]
    flat = {"inspect": {"unsafe_keras": True}}.get(entry, {"atol": 1e-3})
    with warnings.catch_warnings(record=True) as caught, pytest.raises(BadInput):
        warnings.simplefilter("always")
        line = pyinspect.currentframe().f_lineno + 1
        call(tmp_path / "missing.pt2", *args, **flat)
    [warning] = [w for w in caught if issubclass(w.category, DeprecationWarning) and "flat keyword" in str(w.message)]
    assert (warning.filename, warning.lineno) == (__file__, line)


def test_an_unknown_flat_keyword_names_itself():
    with pytest.raises(BadInput, match=r"verify\(\) got unexpected keyword arguments out"):
        grouped("verify", {"out": "o"}, checks=Checks())


def test_a_group_may_be_a_folder_or_a_dict_and_anything_else_names_the_argument(tmp_path):
    groups = grouped("convert", {}, output=tmp_path / "o", checks={"atol": 1e-3})
    assert groups["output"] == Output(out=tmp_path / "o") and groups["checks"] == Checks(atol=1e-3)
    with pytest.raises(BadInput, match=r"convert\(\): checks= has no field tol"):
        grouped("convert", {}, checks={"tol": 1})
    with pytest.raises(BadInput, match=r"convert\(\): trust= takes portx.options.Trust, not bool"):
        grouped("convert", {}, trust=True)
    with pytest.raises(BadValue, match="--atol nan"):  # a dict is checked as the group is
        grouped("convert", {}, checks={"atol": math.nan})


def test_convert_takes_at_most_eight_parameters():
    import portx.api

    params = [p for p in pyinspect.signature(portx.api.convert).parameters.values() if p.kind != p.VAR_KEYWORD]
    assert len(params) <= 8, [p.name for p in params]
    assert Checks().atol == DEFAULT_ATOL


def test_a_bad_tolerance_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    run = CliRunner().invoke(main, ["inspect", "--help"])
    assert run.exit_code == 0
    run = CliRunner().invoke(main, ["verify", str(tmp_path / "m.pt2"), str(tmp_path / "out"), "--atol", "nan"])
    assert run.exit_code == 2 and run.output.strip().startswith("portx: --atol nan: a tolerance must be"), run.output


def test_verify_and_inspect_pass_unsafe_keras_to_the_loader(tmp_path):
    """Note [one trust]: ``verify`` and ``inspect`` read a Lambda model with --unsafe-keras, as ``convert`` does."""
    import keras

    x = keras.Input((4,))
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)).save(tmp_path / "lam.keras")
    src, out = str(tmp_path / "lam.keras"), str(tmp_path / "missing")
    for command in (["verify", src, out], ["inspect", src]):
        refused = CliRunner().invoke(main, command)
        assert refused.exit_code == 2 and "--unsafe-keras" in refused.output, refused.output
        read = CliRunner().invoke(main, [*command, "--unsafe-keras"])
        assert "--unsafe-keras" not in read.output, read.output  # past the loader: OUT is missing, or Lambda is listed
    assert "missing: no such folder" in CliRunner().invoke(main, ["verify", src, out, "--unsafe-keras"]).output
    import portx

    with pytest.raises(BadInput, match="unsafe-keras"):
        portx.load(src)
    assert portx.load(src, trust=Trust(unsafe_keras=True)).lower().nodes  # portx.load takes the group too


def test_verify_rechecks_what_convert_converted_with_a_trust_flag(tmp_path):
    """Note [one trust], end to end: what ``convert --trust-pickle`` wrote from a full pickle, ``verify
    --trust-pickle`` re-checks (exit 0); without the flag verify refuses the source (exit 2) rather than unpickle it.
    (A Keras Lambda needs --unsafe-keras to load, and both commands take it (above), but portx converts no Lambda.)"""
    import torch

    torch.manual_seed(0)
    torch.save(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), tmp_path / "full.pt")
    src, out = str(tmp_path / "full.pt"), str(tmp_path / "out")
    converted = CliRunner().invoke(main, ["convert", src, "-o", out, "--input", "x:2x4", "--trust-pickle",
                                          "--no-grad", "--no-shard-proof"])
    assert converted.exit_code == 0, converted.output
    refused = CliRunner().invoke(main, ["verify", src, out, "--input", "x:2x4"])
    assert refused.exit_code == 2 and "--trust-pickle" in refused.output, refused.output
    verified = CliRunner().invoke(main, ["verify", src, out, "--input", "x:2x4", "--trust-pickle", "--samples", "2"])
    assert verified.exit_code == 0 and f"verified: {out} matches" in verified.output, verified.output
