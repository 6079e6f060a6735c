"""The ONNX frontend on models built with ``onnx.helper``: folding, control flow, free dims, the ops' odd forms,
each lowered, emitted for both targets and compared with onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from portx.errors import UnsupportedOps
from portx.frontends import load
from portx.verification.compare import compare_arrays
from tests.support.harness import TARGETS, emit_and_run

F = TensorProto.FLOAT


def make(nodes, inputs, outputs, inits=(), opset=17, name="g"):
    """A checked-by-portx ModelProto: ``inputs``/``outputs`` are (name, elem type, shape) triples."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(model, target, atol=1e-5):
    """Lower, emit for ``target``, run; compare with onnxruntime. Returns the IR graph."""
    src = load(model)
    graph = src.lower()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(v.type.shape).astype(v.type.dtype) for v in graph.inputs]
    want = src.run(*arrays)
    got, _ = emit_and_run(graph, arrays, target)
    for w, g in zip(want, got):
        row = compare_arrays(w, np.asarray(g).astype(w.dtype), atol, 1e-4)
        assert row["passed"], row
    return graph


def _w(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _shape_arithmetic():
    """Reshape to (Shape(x)[0], -1) then MatMul: the shape path folds away."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["flat"]), helper.make_node("MatMul", ["flat", "w"], ["y"])]
    inits = [("zero", np.array(0, np.int64)), ("ax", np.array([0], np.int64)), ("minus1", np.array([-1], np.int64)),
             ("w", _w(24, 5))]
    return make(nodes, [("x", F, ["N", 4, 6])], [("y", F, ["N", 5])], inits)


def _if_constant():
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", F, None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F, None)])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    return make(nodes, [("x", F, [2, 3])], [("y", F, [2, 3])], [("cond", np.array(True))])


def _loop_static():
    """Three iterations: acc += x, and every acc is a scan output (stacked)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])])
    nodes = [helper.make_node("Loop", ["trips", "cond", "init"], ["acc", "scans"], body=body)]
    return make(nodes, [("x", F, [2])], [("acc", F, [2]), ("scans", F, [3, 2])],
                [("trips", np.array(3, np.int64)), ("cond", np.array(True)), ("init", np.zeros(2, np.float32))])


def _einsum_and_gemm():
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk"),
             helper.make_node("Reshape", ["s", "flat"], ["s2"]),
             helper.make_node("Gemm", ["s2", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    return make(nodes, [("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 5, 4])], [("y", F, [6, 7])],
                [("flat", np.array([6, 5], np.int64)), ("w", _w(7, 5)), ("c", _w(7, seed=2))])


def _resize_pad_slice():
    """Resize the torch way and two ways only the matrix form covers, then Pad, a reversed Slice, Split."""
    scales = np.array([1, 1, 2, 1.5], np.float32)
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["a"], mode="linear"),
             helper.make_node("Resize", ["x", "", "scales"], ["b"], mode="linear", coordinate_transformation_mode="asymmetric"),
             helper.make_node("Resize", ["x", "", "scales"], ["c"], mode="nearest", nearest_mode="round_prefer_floor"),
             helper.make_node("Add", ["a", "b"], ["ab"]), helper.make_node("Add", ["ab", "c"], ["abc"]),
             helper.make_node("Pad", ["abc", "pads"], ["p"], mode="reflect"),
             helper.make_node("Slice", ["p", "starts", "ends", "axes", "steps"], ["s"]),
             helper.make_node("Split", ["s", "split"], ["y0", "y1"], axis=2)]
    inits = [("scales", scales), ("pads", np.array([0, 0, 1, 2, 0, 0, 1, 2], np.int64)),
             ("starts", np.array([-1], np.int64)), ("ends", np.array([-100], np.int64)), ("axes", np.array([3], np.int64)),
             ("steps", np.array([-2], np.int64)), ("split", np.array([3, 7], np.int64))]
    return make(nodes, [("x", F, [1, 2, 4, 4])], [("y0", F, [1, 2, 3, 5]), ("y1", F, [1, 2, 7, 5])], inits, opset=18)


MODELS = {"shape_arithmetic": _shape_arithmetic, "if_constant": _if_constant, "loop_static": _loop_static,
          "einsum_gemm": _einsum_and_gemm, "resize_pad_slice": _resize_pad_slice}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_helper_model(name, target):
    graph = check(MODELS[name](), target)
    ops = {n.op.name for n in graph.nodes}
    if name == "shape_arithmetic":
        assert ops == {"reshape", "matmul"}, ops
    if name == "if_constant":
        assert ops == {"relu"}


def test_free_dims_come_from_dim_param_and_resize_reinfers():
    src = load(_shape_arithmetic())
    assert src.dynamic_dims() == [{"symbol": "N", "sites": [[0, 0]], "min": 1, "max": None, "declared": True}]
    assert src.lower().inputs[0].type.shape == (1, 4, 6)
    bigger = src.resized({(0, 0): 5})
    assert bigger.lower().outputs[0].type.shape == (5, 5)
    with pytest.raises(Exception, match="fixes axis 1 to 4"):
        src.resized({(0, 1): 3})


def test_loop_with_data_dependent_count_is_refused_as_not_static():
    model = _loop_static()
    del model.graph.initializer[0]  # the trip count becomes an input
    model.graph.input.append(helper.make_tensor_value_info("trips", TensorProto.INT64, []))
    with pytest.raises(UnsupportedOps, match=r"Loop at Loop_0 \[Loop whose trip count .* no static TPU form"):
        load(model).lower()


def test_intermediates_pair_node_outputs_with_ir_values():
    """onnxruntime's value of every node output that became an IR value, keyed by the IR name."""
    src = load(_einsum_and_gemm())
    graph = src.lower()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs]
    found = src.intermediates(arrays)
    names = {v.name for n in graph.nodes for v in n.outputs}
    assert found and set(found) <= names
    final = graph.outputs[0].name
    assert np.allclose(found[final], src.run(*arrays)[0], atol=1e-6)


def test_every_import_rule_names_a_real_onnx_op():
    """Rules are registered under ONNX op types, checked against the installed onnx's schemas."""
    from portx.ir import IMPORT_RULES

    unknown = sorted(name for name in IMPORT_RULES["onnx"] if not onnx.defs.has(name))
    assert not unknown, f"import rules for op types ONNX does not define: {unknown}"


def test_gather_elements_on_constants_with_many_choices_folds_like_numpy():
    """BERT's exported token-type ids: GatherElements on a (1, 64) buffer; onnx.reference gets > 32 choices wrong."""
    table = np.arange(64, dtype=np.int64)[None] * 3
    index = np.array([[0, 5, -1, 40, 63, 7, 2, 33]], dtype=np.int64)
    nodes = [helper.make_node("GatherElements", ["table", "index"], ["picked"], axis=1),
             helper.make_node("Cast", ["picked"], ["pf"], to=F),
             helper.make_node("Add", ["x", "pf"], ["y"])]
    model = make(nodes, [("x", F, [1, 8])], [("y", F, [1, 8])], inits=[("table", table), ("index", index)])
    src = load(model)
    graph = src.lower()
    assert not any(n.op.name == "gather" for n in graph.nodes)  # folded to a constant
    x = np.zeros((1, 8), np.float32)
    np.testing.assert_array_equal(src.run(x)[0], np.take_along_axis(table, index % 64, 1).astype(np.float32))
    check(model, "torch-xla")
