"""Hostile PyTorch files: nothing stored in them runs without --trust-pickle, names are sanitized,
every refusal is exit 2 with one line, no traceback and no OUT.

Each case builds its file in the test from a real torch.export / TorchScript / torch.save archive.
"""
import json
import re
import sys

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from portx.cli import main
from tests.support.pt2_hostile import (Small, export_small, payload, raw_pickle, rename_everywhere, rewrite,
                                       strings_at)


def _use_pickle(kind, member, blob_name):
    def edit(config):
        entry = next(iter(config["config"].values()))
        entry["use_pickle"], entry["path_name"] = True, blob_name
    return edit


def _set_first(key, value):
    def edit(doc):
        strings_at(doc, key)[0][key] = value
    return edit


def _rename_param(new):
    def edit(doc):
        rename_everywhere(doc, "fc1.weight", new)
    return edit


def _weights_key(old, new):
    def edit(config):
        config["config"][new] = config["config"].pop(old)
    return edit


def _deep(n):
    return ("[" * n + "]" * n).encode()


# (id, build(src, dst, marker) -> path, exit code, message regex); src is a clean archive of Small
EXEC_CASES = [
    ("legacy-weights-pickle", lambda s, d, m: rewrite(s, d, members={"data/weights/model.pt": payload(m)}),
     2, "legacy pickled weight"),
    ("legacy-constants-pickle", lambda s, d, m: rewrite(s, d, members={"data/constants/model.pt": payload(m)}),
     2, "legacy pickled"),
    ("sample-inputs-pickle", lambda s, d, m: rewrite(s, d, members={"data/sample_inputs/model.pt": payload(m)}),
     2, "example inputs"),
    ("sample-inputs-raw-pickle", lambda s, d, m: rewrite(s, d, members={"data/sample_inputs/model.pt":
                                                                         raw_pickle(m)}), 2, "example inputs"),
    ("weights-use-pickle", lambda s, d, m: rewrite(s, d, members={"data/weights/evil": payload(m)},
                                                   configs={"weights": _use_pickle("weights", "", "evil")}),
     2, "as a pickle"),
    ("constants-use-pickle", lambda s, d, m: rewrite(s, d, members={"data/constants/tensor_9": payload(m)},
                                                     configs={"constants": _use_pickle("constants", "", "tensor_9")}),
     2, "as a pickle"),
    ("constants-opaque-obj", lambda s, d, m: rewrite(s, d, members={"data/constants/opaque_obj_0": raw_pickle(m)},
                                                     configs={"constants": _use_pickle("constants", "", "opaque_obj_0")}),
     2, "as a pickle"),
    ("constants-custom-obj", lambda s, d, m: rewrite(s, d, members={"data/constants/custom_obj_0": raw_pickle(m)},
                                                     configs={"constants": _use_pickle("constants", "", "custom_obj_0")}),
     2, "as a pickle"),
    ("aotinductor-member", lambda s, d, m: rewrite(s, d, members={"data/aotinductor/model/evil.so": b"\x7fELF"}),
     2, "AOTInductor"),
    ("guards-code", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: doc.update(
        guards_code=[f"open({str(m)!r}, 'w') is None"])), 0, ""),
    ("sympy-expr-eval", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: strings_at(doc, "sizes")[0]["sizes"]
                                                .__setitem__(0, {"as_expr": {"expr_str": f"__import__('builtins').open({str(m)!r}, 'w')",
                                                                             "hint": None}})),
     2, "not a shape"),
    ("range-constraint-eval", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: doc["range_constraints"].update(
        {f"open({str(m)!r}, 'w')": {"min_val": 0, "max_val": 4}})), 2, "shape"),
    ("param-name-getattr-injection", lambda s, d, m: rewrite(
        s, d, edit_json=_rename_param(f'fc1.w"); open({str(m)!r}, "w"); ("'),
        configs={"weights": _weights_key("fc1.weight", f'fc1.w"); open({str(m)!r}, "w"); ("')}), 0, ""),
    ("input-default-arg-injection", lambda s, d, m: rewrite(
        s, d, edit_json=lambda doc: rename_everywhere(doc, "x", f"x=open({str(m)!r}, 'w')")), 0, ""),
    ("input-newline-injection", lambda s, d, m: rewrite(
        s, d, edit_json=lambda doc: rename_everywhere(doc, "x", f"x):\n    open({str(m)!r}, 'w')\ndef f(x")), 0, ""),
    ("node-name-injection", lambda s, d, m: rewrite(
        s, d, edit_json=lambda doc: rename_everywhere(doc, "relu", f"relu = open({str(m)!r}, 'w')#")), 0, ""),
    ("stack-trace-comment-escape", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: [
        meta.__setitem__("stack_trace", f'File "a.py", line 1, in f\n    x\nopen({str(m)!r}, "w")')
        for meta in (n["metadata"] for n in strings_at(doc, "metadata") if isinstance(n.get("metadata"), dict))]),
     0, ""),
    ("module-stack-newline", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: [
        meta.__setitem__("nn_module_stack", f"L__self__,,M;L__fc1\nopen({str(m)!r}),fc1\n,torch.nn.Linear")
        for meta in (n["metadata"] for n in strings_at(doc, "metadata") if isinstance(n.get("metadata"), dict))]),
     0, ""),
    ("in-spec-kwarg-injection", lambda s, d, m: rewrite(s, d, edit_json=lambda doc: [
        g.__setitem__("in_spec", g["in_spec"].replace('\\"context\\": \\"[]\\"', '\\"context\\": \\"[\\\\\\"' + "a':open("
                                                      + repr(str(m)) + "),'b" + '\\\\\\"]\\"'))
        for g in strings_at(doc, "in_spec")]), None, ""),
    ("op-target-injection", lambda s, d, m: rewrite(s, d, edit_json=_set_first(
        "target", f"torch.ops.aten.relu.default; open({str(m)!r}, 'w')")), 2, "not an operator name"),
    ("weights-path-traversal", lambda s, d, m: rewrite(s, d, configs={"weights": lambda c: next(iter(
        c["config"].values())).__setitem__("path_name", "../../../etc/passwd")}), 2, "points at"),
    ("member-path-traversal", lambda s, d, m: rewrite(s, d, members={"../evil.txt": b"x"}), 2, ""),
]


@pytest.fixture(scope="module")
def clean_pt2(tmp_path_factory):
    return export_small(tmp_path_factory.mktemp("src") / "model.pt2")


def _check_one_line(run):
    assert "Traceback" not in run.output and "Logging error" not in run.output, run.output
    assert run.exit_code != 70, run.output


@pytest.mark.parametrize("case", EXEC_CASES, ids=[c[0] for c in EXEC_CASES])
@pytest.mark.parametrize("command", ["convert", "inspect"])
def test_hostile_pt2_runs_nothing(tmp_path, clean_pt2, case, command):
    name, build, code, message = case
    marker = tmp_path / "marker"
    src = build(clean_pt2, tmp_path / "evil.pt2", marker)
    out = tmp_path / "out"
    args = ["convert", str(src), "-o", str(out), "--no-verify"] if command == "convert" else ["inspect", str(src)]
    run = CliRunner().invoke(main, args)
    if command == "convert" and out.exists():  # converted: importing the emitted code must not run it either
        spec = __import__("importlib.util").util.spec_from_file_location("emitted_" + name.replace("-", "_"),
                                                                          out / "model.py")
        module = __import__("importlib.util").util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.load_model()(torch.randn(2, 4).numpy())
    assert not marker.exists(), f"{name}: the payload ran ({run.output})"
    _check_one_line(run)
    if code is None:  # either converted with the name sanitized, or refused cleanly
        assert run.exit_code in (0, 2), run.output
    else:
        assert run.exit_code == code, run.output
    if run.exit_code == 2:
        assert re.search(message, run.output), run.output
        assert len([ln for ln in run.output.splitlines() if ln.startswith("portx:")]) == 1, run.output
        assert not out.exists() and not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


def test_renamed_names_are_reported(tmp_path, clean_pt2):
    src = rewrite(clean_pt2, tmp_path / "m.pt2", edit_json=lambda doc: rename_everywhere(doc, "x", "class"))
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out"), "--json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.output[run.output.index("{"):])
    assert any("renamed 'class'" in w for w in report["warnings"]), report["warnings"]
    assert report["verification"]["passed"]


@pytest.mark.parametrize("name", ["class", "lambda", "a\nb", "0x", "x-y", "é", "__import__('os')", ""])
def test_keyword_and_odd_input_names_convert_sanitized(tmp_path, clean_pt2, name):
    src = rewrite(clean_pt2, tmp_path / "m.pt2", edit_json=lambda doc: rename_everywhere(doc, "x", name))
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    _check_one_line(run)
    assert run.exit_code in (0, 2), run.output
    if run.exit_code == 0:
        code = (tmp_path / "out" / "model.py").read_text()
        compile(code, "model.py", "exec")
        assert "__import__('os')" not in code


@pytest.mark.parametrize("module_name", ["class", "a b", "weird'quote"])
def test_submodule_names_that_are_not_identifiers(tmp_path, module_name):
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module(module_name, nn.Linear(4, 3))

        def forward(self, x):
            return getattr(self, module_name)(x).relu()

    src = export_small(tmp_path / "m.pt2", Odd().eval())
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    _check_one_line(run)
    assert run.exit_code == 0, run.output


MALFORMED = [  # (id, build(src, dst) -> path, message regex)
    ("model-json-deep", lambda s, d: rewrite(s, d, members={"models/model.json": _deep(100_000)}), "nested too deeply"),
    ("model-json-not-json", lambda s, d: rewrite(s, d, members={"models/model.json": b"{not json"}), "not readable"),
    ("model-json-list", lambda s, d: rewrite(s, d, members={"models/model.json": b"[1, 2]"}), "not a program"),
    ("model-json-not-utf8", lambda s, d: rewrite(s, d, members={"models/model.json": b"\xff\xfe{}"}), "not readable"),
    ("no-model-json", lambda s, d: rewrite(s, d, drop=["models/model.json"]), "no models"),
    ("no-archive-version", lambda s, d: rewrite(s, d, drop=["archive_version"]), "archive_version"),
    ("two-programs", lambda s, d: rewrite(s, d, members={"models/other.json": b"{}"}), "2 programs"),
    ("weights-config-deep", lambda s, d: rewrite(s, d, members={"data/weights/model_weights_config.json":
                                                               _deep(50_000)}), "nested too deeply"),
    ("weights-config-no-table", lambda s, d: rewrite(s, d, members={"data/weights/model_weights_config.json":
                                                                   b'{"config": 3}'}), "config"),
    ("weights-member-missing", lambda s, d: rewrite(s, d, drop=["data/weights/weight_0"]), "not a readable"),
    ("weights-member-short", lambda s, d: rewrite(s, d, members={"data/weights/weight_0": b"\x00" * 3}),
     "not a readable"),
    ("graph-inputs-wrong-type", lambda s, d: rewrite(s, d, edit_json=lambda doc: doc["graph_module"]["graph"]
                                                     .__setitem__("inputs", 5)), "not a readable"),
    ("name-not-a-string", lambda s, d: rewrite(s, d, edit_json=_set_first("as_tensor", {"name": 7})), "expected a name"),
    ("archive-two-roots", lambda s, d: _two_roots(s, d), "one top folder"),
    ("out-spec-garbage", lambda s, d: rewrite(s, d, edit_json=lambda doc: [g.__setitem__("out_spec", "{[")
                                                                        for g in strings_at(doc, "out_spec")]),
     "pytree spec"),
]


def _two_roots(src, dst):
    import zipfile

    rewrite(src, dst)
    with zipfile.ZipFile(dst, "a") as z:
        z.writestr("other/x", b"1")
    return dst


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_pt2_is_exit_2_one_line(tmp_path, clean_pt2, case):
    _, build, message = case
    src = build(clean_pt2, tmp_path / "bad.pt2")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(out)])
    _check_one_line(run)
    assert run.exit_code == 2, run.output
    assert re.search(message, run.output), run.output
    assert not out.exists()


def test_deep_json_is_refused_under_a_raised_recursion_limit(tmp_path, clean_pt2):
    """A deep Keras model's model.py raises the process's recursion limit (Note [deep graphs]); with it raised,
    json.loads on a hostile nesting would overflow the C stack and kill the process instead of raising
    RecursionError. The nesting is scanned for first, so the refusal is the same one line."""
    src = rewrite(clean_pt2, tmp_path / "bad.pt2", members={"models/model.json": _deep(400_000)})
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    finally:
        sys.setrecursionlimit(limit)
    _check_one_line(run)
    assert run.exit_code == 2 and "nested too deeply" in run.output, run.output


def test_trust_pickle_still_loads_a_legacy_weight_member(tmp_path, clean_pt2):
    """With the flag the user vouches for the file: torch reads it as it is (the payload runs)."""
    marker = tmp_path / "marker"
    src = rewrite(clean_pt2, tmp_path / "m.pt2", members={"data/sample_inputs/model.pt": payload(marker)})
    CliRunner().invoke(main, ["inspect", str(src), "--trust-pickle"])
    assert marker.exists()


def test_torchscript_needs_trust_and_says_why(tmp_path):
    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.trace(Small().eval(), (torch.randn(2, 4),)), path)
    for command in (["convert", str(path), "-o", str(tmp_path / "out")], ["inspect", str(path)]):
        run = CliRunner().invoke(main, [*command, "--input", "x:2x4"])
        assert run.exit_code == 2 and "TorchScript" in run.output and "runs code" in run.output, run.output
        assert "--trust-pickle" in run.output
    run = CliRunner().invoke(main, ["inspect", str(path), "--input", "x:2x4", "--trust-pickle"])
    assert run.exit_code == 0, run.output


def test_dynamic_dim_stays_free_and_a_static_one_is_freed_by_its_shape_rules(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3)).eval()
    src = export_small(tmp_path / "dyn.pt2", model, torch.randn(3, 4),
                       dynamic_shapes=({0: torch.export.Dim("batch")},))
    run = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["dynamic"][0]["free"] and not report["warnings"], report
    static = export_small(tmp_path / "static.pt2", model, torch.randn(3, 4))
    run = CliRunner().invoke(main, ["convert", str(static), "-o", str(tmp_path / "out2")])
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "out2" / "report.json").read_text())  # Note [static batch]
    assert report["dynamic"][0]["free"] and report["dynamic"][0]["found_by"] == "the ops' shape rules", report
    assert all(check["passed"] for check in report["dynamic"][0]["verified"]), report


@pytest.mark.parametrize("spec", ["x:1000000x1000000000", "x:99999999999999999999", "x:46341x46341x2"])
def test_huge_input_spec_is_refused_before_allocating(tmp_path, spec):
    path = tmp_path / "full.pt"
    torch.save(Small().eval(), path)
    run = CliRunner().invoke(main, ["inspect", str(path), "--trust-pickle", "--input", spec])
    assert run.exit_code == 2 and "elements" in run.output, run.output


def test_bare_tensor_example_inputs_are_accepted(tmp_path):
    import portx

    result = portx.convert(Small().eval(), example_inputs=torch.randn(2, 4), out=tmp_path / "out")
    assert result.report["verification"]["passed"]
    with pytest.raises(portx.errors.BadInput, match="tuple of tensors"):
        portx.convert(Small().eval(), example_inputs=3.0, out=tmp_path / "out2")


def test_state_dict_hint_is_runnable_advice(tmp_path):
    torch.save(Small().state_dict(), tmp_path / "sd.pt")
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "sd.pt"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2
    assert "torch.export.save(torch.export.export(model.eval(), (x,))" in run.output, run.output


def test_unimportable_pickle_names_what_it_needs(tmp_path, monkeypatch):
    (tmp_path / "nosuchpk.py").write_text("import torch\nclass Net(torch.nn.Linear):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    torch.save(__import__("nosuchpk").Net(4, 3), tmp_path / "full.pt")
    monkeypatch.delitem(sys.modules, "nosuchpk")
    (tmp_path / "nosuchpk.py").unlink()
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "full.pt"), "--trust-pickle", "--input", "x:2x4",
                                    "-o", str(tmp_path / "out")])
    assert run.exit_code == 2, run.output
    assert "needs nosuchpk" in run.output and "PYTHONPATH" in run.output and "import the module" not in run.output


LIVE = ["legacy-weights-pickle", "legacy-constants-pickle", "sample-inputs-pickle", "sample-inputs-raw-pickle",
        "weights-use-pickle", "constants-use-pickle", "constants-opaque-obj", "guards-code", "sympy-expr-eval",
        "input-default-arg-injection"]


@pytest.mark.parametrize("name", LIVE)
def test_the_payloads_are_live_against_plain_torch(tmp_path, clean_pt2, name):
    """The matrix is not vacuous: plain torch.export.load (+ .module() and a call) runs these payloads."""
    build = next(c[1] for c in EXEC_CASES if c[0] == name)
    marker = tmp_path / "marker"
    src = build(clean_pt2, tmp_path / "evil.pt2", marker)
    try:
        torch.export.load(str(src)).module()(torch.randn(2, 4))
    except Exception:  # noqa: BLE001 - most payloads break the program after they ran
        pass
    assert marker.exists()


def test_float16_input_for_a_float32_model_names_the_mistake(tmp_path):
    """Found by the random-seed fuzz step (--hypothesis-seed=1697565394): was exit 70."""
    path = tmp_path / "full.pt"
    torch.save(Small().eval(), path)
    run = CliRunner().invoke(main, ["inspect", str(path), "--trust-pickle", "--input", "x:4:float16"])
    assert run.exit_code == 2 and "float16 but the model's weights are float32" in run.output, run.output
