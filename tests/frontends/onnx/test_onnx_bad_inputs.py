"""Bad ONNX input: one clear line, the documented exit code, nothing read from outside the model's folder,
no half-written OUT (Note [onnx loading])."""
import os

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from portx.cli import main
from portx.errors import BadInput, UnsupportedOps
from portx.frontends import load
from portx.frontends.onnx.files import newest_opset

F = TensorProto.FLOAT


def _model(nodes, opset=17, inits=(), extra_opsets=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, [2, 3])],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets)


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _save(model, path):
    onnx.save(model, str(path))
    return path


def test_corrupt_file_exits_2_naming_the_file(tmp_path):
    good = _save(_model([helper.make_node("Relu", ["x"], ["y"])]), tmp_path / "good.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(good.read_bytes()[:-7] + b"\xff\xff\xff")
    run = _cli("convert", bad, "-o", tmp_path / "out")
    assert run.exit_code == 2, run.output
    assert "bad.onnx" in run.output and "Traceback" not in run.output
    assert not (tmp_path / "out").exists()


def test_unknown_ops_and_custom_domains_are_listed_together_with_node_names(tmp_path):
    nodes = [helper.make_node("NotAnOp", ["x"], ["a"], name="mystery"),
             helper.make_node("Secret", ["a"], ["b"], name="vendor_node", domain="com.example"),
             helper.make_node("Relu", ["b"], ["y"], name="fine")]
    path = _save(_model(nodes, extra_opsets=["com.example"]), tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOps, match=r"2 unsupported ops: NotAnOp at mystery .*com\.example::Secret at "
                                              r"vendor_node \[custom domain com\.example\]"):
        load(str(path))
    run = _cli("convert", path, "-o", tmp_path / "out")
    assert run.exit_code == 3 and "mystery" in run.output and "vendor_node" in run.output


def test_onnx_ops_without_a_rule_are_all_named():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("NonZero", ["a"], ["nz"], name="where_nonzero"),
             helper.make_node("Cast", ["nz"], ["c"], to=F), helper.make_node("Identity", ["x"], ["y"]),
             helper.make_node("Unique", ["a"], ["h"], name="unique_1")]
    model = _model(nodes)
    model.graph.output.extend([helper.make_tensor_value_info("c", F, [2, None]), helper.make_tensor_value_info("h", F, [None])])
    with pytest.raises(UnsupportedOps, match=r"2 unsupported ops: NonZero at where_nonzero; Unique at unique_1"):
        load(model).lower()


def test_opset_too_old_says_how_to_upgrade():
    with pytest.raises(BadInput, match=r"opset 11 is older than portx reads \(13\).*onnx.version_converter"):
        load(_model([helper.make_node("Relu", ["x"], ["y"])], opset=11))


def test_opset_newer_than_installed_onnx_is_refused():
    with pytest.raises(BadInput, match=rf"opset {newest_opset() + 1} is newer than the installed onnx"):
        load(_model([helper.make_node("Relu", ["x"], ["y"])], opset=newest_opset() + 1))


def test_checker_failure_is_its_first_line():
    model = _model([helper.make_node("Relu", ["nowhere"], ["y"])])
    with pytest.raises(BadInput, match=r"fails onnx.checker: .*nowhere"):
        load(model)


def _external(tmp_path, location):
    """A model whose initializer ``w`` keeps its data at ``location`` (relative to the model's folder)."""
    tensor = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value=location)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [2, 3])],
                              [tensor])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("location,expect", [
    ("../secret.bin", "outside the model's folder"),
    ("/etc/passwd", "outside the model's folder"),
    ("link.bin", "links outside the model's folder"),
    ("missing.bin", "which is missing"),
])
def test_external_data_outside_the_folder_is_refused_before_reading(tmp_path, location, expect):
    (tmp_path / "secret.bin").write_bytes(np.ones(6, np.float32).tobytes())
    path = _external(tmp_path, location)
    if location == "link.bin":
        os.symlink(tmp_path / "secret.bin", path.parent / "link.bin")
    with pytest.raises(BadInput, match=expect):
        load(str(path))


def test_external_data_next_to_the_model_is_read(tmp_path):
    path = _external(tmp_path, "m.onnx.data")
    (path.parent / "m.onnx.data").write_bytes(np.full(6, 2, np.float32).tobytes())
    src = load(str(path))
    assert src.lower().params["w"].tolist() == [[2.0] * 3] * 2
    assert src.run(np.zeros((2, 3), np.float32))[0].tolist() == [[2.0] * 3] * 2


def test_input_spec_may_change_only_free_dims():
    model = _model([helper.make_node("Relu", ["x"], ["y"])])
    with pytest.raises(BadInput, match=r"--input for x gives shape \(4, 3\); the model declares \(2, 3\)"):
        load(model, inputs=["x:4x3"])


def test_a_huge_constant_is_refused_before_folding():
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["big"]), helper.make_node("Relu", ["x"], ["y"])]
    model = _model(nodes, inits=[("shape", np.array([1 << 20, 1 << 20], np.int64))])
    model.graph.output.append(helper.make_tensor_value_info("big", F, [1 << 20, 1 << 20]))
    with pytest.raises(BadInput, match="has more than"):
        load(model).lower()


def _declared(path, nodes, inputs, out_shape, inits):
    """A model whose inputs declare ``inputs`` ({name: dims with dim_params}) and whose graph may fix them."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, d) for n, d in inputs.items()],
                              [helper.make_tensor_value_info("y", F, out_shape)],
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_dim_param_the_graph_fixes_is_pinned_with_a_warning(tmp_path):
    """Note [contradicted dim_param]: 'feat' feeds a (12, 4) weight; the default example (8) cannot run."""
    weight = np.random.RandomState(0).randn(12, 4).astype(np.float32)
    path = _declared(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": ["batch", "feat"]},
                     ["batch", 4], {"w": weight})
    src = load(str(path))
    assert src.input_types[0].shape == (1, 12)
    assert any("declares axis 1 ('feat') free, but the graph fixes it to 12" in n for n in src.notes), src.notes


def test_dim_params_the_graph_contradicts_exit_2_in_one_line(tmp_path):
    """h * w must be 1024 (a Reshape to 3072 = 3 * 32 * 32): no single size fixes it, so the user is asked."""
    path = _declared(tmp_path / "m.onnx", [helper.make_node("Reshape", ["x", "s"], ["y"])],
                     {"x": ["batch", 3, "h", "w"]}, ["batch", 3072], {"s": np.array([-1, 3072], np.int64)})
    run = _cli("convert", path, "-o", tmp_path / "out")
    assert run.exit_code == 2, run.output
    assert "free input dims it declares (batch=1, h=8, w=8)" in run.output and "--input" in run.output
    assert len(run.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
