"""The IR core: types, graph, validation, text form, (de)serialization, the op registry, and layering."""
import ast
import pathlib

import numpy as np
import pytest
import torch
from torch import nn

import portx  # noqa: F401  (registers ops)
from portx.frontends.torch import export_module, lower_exported
from portx.ir import (IMPORT_RULES, REGISTRY, REQUIRED, Graph, IRError, Node, OpDef, TensorType, Value,
                      format_graph, load_graph, lookup, param_value, parse_graph, save_graph, validate, window)

SRC = pathlib.Path(portx.__file__).parent

SMALL = """
graph small(%x: float32[2x4]) {
  param %fc.weight: float32[3x4]
  param %fc.bias: float32[3]
  %h: float32[2x3] = linear(%x, %fc.weight, %fc.bias) {}  # fc
  %r: float32[2x3] = relu(%h) {}  # act
  %y: float32[2x3] = add(%r, %h) {}  # skip
  return %y
}
"""


@pytest.fixture
def small():
    return validate(parse_graph(SMALL))


# -- types and containers -------------------------------------------------------------------------
def test_tensor_type_basics():
    t = TensorType([1, 3, 8, 8], "float32")
    assert t.shape == (1, 3, 8, 8) and t.rank == 4 and t.is_static
    assert str(t) == "float32[1x3x8x8]" and str(TensorType((), "int64")) == "int64[scalar]"
    assert t.with_shape((2,)) == TensorType((2,), "float32") and t.with_dtype("int8").dtype == "int8"
    assert not TensorType(("batch", 3), "float32").is_static
    with pytest.raises(ValueError, match="unknown dtype 'float99'"):
        TensorType((1,), "float99")


def test_value_identity_and_repr():
    a, b = Value("x", TensorType((1,), "float32")), Value("x", TensorType((1,), "float32"))
    assert a != b and a == a and len({a, b}) == 2  # identity, not name, tells values apart
    assert repr(a) == "%x: float32[1]"


def test_node_and_graph_helpers(small):
    linear, relu, add = small.nodes
    assert relu.output is relu.outputs[0] and relu.where() == "node act (relu)"
    assert relu.replace(scope="other").scope == "other" and relu.scope == "act"
    assert small.producers()[relu.output] is relu
    assert small.users()[linear.output] == [relu, add]
    weight = small.param_values["fc.weight"]
    assert small.is_param(weight) and not small.is_param(small.inputs[0]) and not small.is_param(None)
    assert small.weight_bytes() == (12 + 3) * 4
    assert param_value("w", np.zeros((2, 3), np.int8)).type == TensorType((2, 3), "int8")
    assert "> " + "%r: float32[2x3] = relu(%h) {}  # act" in window(small, relu)


# -- validate -------------------------------------------------------------------------------------
def test_validate_accepts_and_returns_graph(small):
    assert validate(small) is small


def test_validate_use_before_definition(small):
    with pytest.raises(IRError, match=r"node act \(relu\): input %h is used before it is defined"):
        validate(small.replace(nodes=small.nodes[1:] + small.nodes[:1]))


def test_validate_too_few_inputs(small):
    add = small.nodes[2]
    bad = add.replace(inputs=add.inputs[:1])
    with pytest.raises(IRError, match="needs 2 inputs, got 1"):
        validate(small.replace(nodes=small.nodes[:2] + (bad,)))


def test_validate_too_many_inputs(small):
    relu = small.nodes[1]
    bad = relu.replace(inputs=relu.inputs * 2)
    with pytest.raises(IRError, match="takes 1 inputs, got 2"):
        validate(small.replace(nodes=(small.nodes[0], bad)))


def test_validate_wrong_recorded_type(small):
    relu = small.nodes[1]
    bad = relu.replace(outputs=(Value("r", TensorType((2, 4), "float32")),))
    with pytest.raises(IRError, match=r"output %r is float32\[2x4\], shape rule says float32\[2x3\]"):
        validate(small.replace(nodes=(small.nodes[0], bad), outputs=bad.outputs))


def test_validate_wrong_dtype(small):
    relu = small.nodes[1]
    bad = relu.replace(outputs=(Value("r", TensorType((2, 3), "float16")),))
    with pytest.raises(IRError, match="shape rule says float32"):
        validate(small.replace(nodes=(small.nodes[0], bad), outputs=bad.outputs))


def test_validate_duplicate_output_names(small):
    relu = small.nodes[1]
    clash = relu.replace(outputs=(Value("h", relu.output.type),))
    with pytest.raises(IRError, match="output name %h is defined twice"):
        validate(small.replace(nodes=(small.nodes[0], clash), outputs=clash.outputs))


def test_validate_input_and_param_share_a_name(small):
    x = small.inputs[0]
    twin = Value("fc.weight", x.type)
    with pytest.raises(IRError, match="reuse a name"):
        validate(small.replace(inputs=(twin,)))


@pytest.mark.parametrize("array", [np.zeros((3, 5), np.float32), np.zeros((3, 4), np.float64), None],
                         ids=["shape", "dtype", "missing"])
def test_validate_param_array_mismatch(small, array):
    params = dict(small.params)
    if array is None:
        del params["fc.weight"]
    else:
        params["fc.weight"] = array
    with pytest.raises(IRError, match=r"parameter fc.weight: stored array does not match its type float32\[3x4\]"):
        validate(small.replace(params=params))


def test_validate_undefined_graph_output(small):
    with pytest.raises(IRError, match="graph output %ghost is never defined"):
        validate(small.replace(outputs=(Value("ghost", TensorType((1,), "float32")),)))


def test_validate_unknown_attribute(small):
    relu = small.nodes[1]
    with pytest.raises(IRError, match=r"has no attribute\(s\) \['alpha'\]"):
        validate(small.replace(nodes=(small.nodes[0], relu.replace(attrs={"alpha": 1.0})), outputs=relu.outputs))


# -- text form and files --------------------------------------------------------------------------
class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.conv(x), approximate="tanh")
        y = self.fc(y.clamp(max=2.0).permute(0, 2, 3, 1))
        return torch.where(y > 0, y, 0.1 * y), torch.div(y, 3, rounding_mode="floor")


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    return validate(lower_exported(export_module(Small(), [torch.randn(1, 3, 8, 8)])))


def test_text_round_trip(lowered):
    text = format_graph(lowered)
    again = parse_graph(text, lowered.params)
    assert format_graph(again) == text
    validate(again)
    assert {"conv", "gelu", "clamp", "linear", "where", "div"} <= {n.op.name for n in again.nodes}


def test_parse_errors_say_what_was_expected():
    with pytest.raises(ValueError, match="must start with 'graph NAME"):
        parse_graph("model(%x: float32[1])")
    with pytest.raises(ValueError, match="bad type 'float32<1>'"):
        parse_graph("graph g(%x: float32[1]) {\n  %y: float32<1> = relu(%x) {}\n  return %y\n}")


def test_save_load_round_trip(lowered, tmp_path):
    save_graph(lowered, tmp_path / "ir")
    loaded = validate(load_graph(tmp_path / "ir"))
    assert format_graph(loaded) == format_graph(lowered)
    assert list(loaded.params) == list(lowered.params)
    for name, array in lowered.params.items():
        assert loaded.params[name].dtype == array.dtype and np.array_equal(loaded.params[name], array)


# -- the op registry ------------------------------------------------------------------------------
@pytest.fixture
def scratch_ops():
    """Declares throwaway ops and removes them afterwards, so the registry stays as shipped."""
    made = []

    def declare(*args, **kwargs):
        op = OpDef(*args, **kwargs)
        made.append(op.name)
        return op

    yield declare
    for name in made:
        REGISTRY.pop(name, None)


def test_duplicate_declaration_rejected():
    with pytest.raises(ValueError, match="op 'relu' is declared twice"):
        OpDef("relu", ("x",))


def test_duplicate_import_rule_rejected(scratch_ops):
    op = scratch_ops("scratch_twice", ("x",))
    with pytest.raises(ValueError, match="torch op 'aten::relu' has two import rules"):
        op.imports("torch", "aten::relu")(lambda call: None)
    assert IMPORT_RULES["torch"]["aten::relu"][0] is REGISTRY["relu"]


def test_attribute_normalization(scratch_ops):
    op = scratch_ops("scratch_attrs", ("x", "bias?"), {"axis": REQUIRED, "eps": 1e-5})
    assert op.normalize_attrs({"axis": 1}) == {"axis": 1, "eps": 1e-5}
    unknown = r"op scratch_attrs has no attribute\(s\) \['bogus'\]; known: \['axis', 'eps'\]"
    with pytest.raises(ValueError, match=unknown):
        op.normalize_attrs({"axis": 1, "bogus": 2}, "node n")
    with pytest.raises(ValueError, match=r"op scratch_attrs needs attribute\(s\) \['axis'\]"):
        op.normalize_attrs({})
    assert op.min_inputs() == 1 and not op.variadic
    assert scratch_ops("scratch_many", ("*xs",)).variadic


def test_lookup_names_the_problem():
    assert lookup("relu") is REGISTRY["relu"]
    with pytest.raises(KeyError, match="unknown IR op 'nope'"):
        lookup("nope")


#: ops torch reaches only through an ATen name that another op's rule owns (the variant decides)
VIA_OTHER_RULES = {"complex_abs": "aten::abs of a complex tensor (elementwise abs owns the name)",
                   "bitcast": "aten::view.dtype (the reshape rule owns aten::view)",
                   "eigvalsh": "aten::_linalg_eigh with compute_v=False (eigh owns the name)",
                   "svdvals": "aten::_linalg_svd with compute_uv=False (svd owns the name)",
                   "cholesky_info": "aten::linalg_cholesky_ex's info output (cholesky owns the name)"}
#: ops only Keras / JAX sources reach: torch has no such op, and its decompositions never produce it
NO_TORCH_OP = {"cbrt": "torch has no cbrt; keras.ops.cbrt / lax.cbrt import it (the torch emit writes sign * |x|^(1/3))"}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_op_is_complete(name):
    op = REGISTRY[name]
    missing = [part for part, ok in [("infer", op.infer_rule), ("reference", op.reference_rule),
                                     ("keras-jax emit rule", op.emit_rules.get("keras-jax") or op.has("decomposed")),
                                     ("torch import name", op.import_names.get("torch") or name in VIA_OTHER_RULES or name in NO_TORCH_OP)]
               if not ok]
    assert not missing, f"op {name} lacks: {', '.join(missing)}"


def test_rule_functions_have_descriptive_names():
    for op in REGISTRY.values():
        rules = [op.infer_rule, op.reference_rule, *op.emit_rules.values()]
        assert all(getattr(r, "__name__", "_") not in ("_", "<lambda>") for r in rules if r), op.name


# -- layering -------------------------------------------------------------------------------------
def _portx_imports(path: pathlib.Path):
    """(line, absolute module) for every import in ``path``, relative ones resolved."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
                yield from ((node.lineno, n) for n in names)
            else:
                yield node.lineno, node.module


_FORBIDDEN_EVERYWHERE = ("torch", "keras", "jax", "tensorflow")


@pytest.mark.parametrize("layer, allowed", [("ir", ("portx.ir",)),
                                             ("ops", ("portx.ir", "portx.errors", "portx.ops"))])
def test_imports_point_one_way(layer, allowed):
    bad = []
    for path in sorted((SRC / layer).rglob("*.py")):
        for line, module in _portx_imports(path):
            top = module.split(".")[0]
            inside = module == "portx" or module.startswith("portx.")
            if (inside and not module.startswith(allowed)) or top in _FORBIDDEN_EVERYWHERE:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_import_checker_sees_relative_imports():
    modules = {m for _, m in _portx_imports(SRC / "ops" / "conv" / "__init__.py")}
    assert "portx.ir" in modules and "portx.ops._util" in modules
