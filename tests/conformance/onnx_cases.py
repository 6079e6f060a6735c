"""ONNX's own node test cases, run through portx to both emitters (shared by the test and benchmarks/onnx_coverage.py).

The onnx wheel ships the case generators, not the data: ``collect_testcases()`` builds every case (about 10 s).
Each case is one node with its inputs and expected outputs. Two adjustments make a case what an exporter
would write, and nothing else:

- operands portx needs as constants (shapes, axes, pads, scales, bounds: ``CONSTANT_OPERANDS``) are baked
  into initializers, as exporters write them (a TPU program is static);
- a case generated at an opset below 13 whose op has the same schema at 13 is re-labelled opset 13.

A case passes when both its IR and the emitted model give ONNX's expected outputs (values compared; the
keras-jax target narrows int64 to int32 by design). ``XFAIL`` (``onnx_xfail.toml``) lists the cases that do
not pass, each with its reason.

Example:
    >>> cases = claimed_cases()
    >>> run_case(cases["test_relu"], "keras-jax")      # None when it passes, else the problem
"""
import functools
import tomllib
import warnings
from pathlib import Path

import numpy as np

import portx  # noqa: F401  (registers ops)
from portx.errors import PortxError
from portx.frontends import load
from portx.ir import IMPORT_RULES
from portx.verification.compare import compare_arrays

__all__ = ["CONSTANT_OPERANDS", "XFAIL", "XFAIL_FILE", "claimed_ops", "claimed_cases", "case_op", "prepared_model",
           "run_case", "quick_subset", "TARGETS"]

TARGETS = ("keras-jax", "torch-xla")
XFAIL_FILE = Path(__file__).with_name("onnx_xfail.toml")
#: case name -> reason (both targets), or {target: reason}
XFAIL = tomllib.loads(XFAIL_FILE.read_text(encoding="utf-8")).get("xfail", {})
#: ONNX op -> positions of the operands portx reads as constants (baked into initializers)
CONSTANT_OPERANDS = {"Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Squeeze": (1,),
                     "Unsqueeze": (1,), "Split": (1,), "Pad": (1, 2, 3), "Resize": (1, 2, 3), "CumSum": (1,),
                     "Clip": (1, 2), "Dropout": (1, 2), "ConstantOfShape": (0,), "Range": (0, 1, 2),
                     "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,),
                     "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,), "ReduceLogSumExp": (1,),
                     "ReduceSumSquare": (1,), "If": (0,), "Loop": (0, 1), "Trilu": (1,), "OneHot": (1, 2),
                     "CenterCropPad": (1,), "CastLike": (1,)}
#: ops the walker resolves itself or folds (Note [onnx walk], Note [onnx control flow])
_WALKER_OPS = ("If", "Loop", "Constant", "ConstantOfShape", "Range")
#: expected outputs are compared at these tolerances (ONNX's own are rtol 1e-3)
ATOL, RTOL = 1e-5, 1e-3


def claimed_ops() -> set:
    """The ONNX op types the frontend claims: every import rule, and what the walker folds or unrolls."""
    return set(IMPORT_RULES.get("onnx", {})) | set(_WALKER_OPS)


def case_op(case) -> str:
    """The op a node case tests (its one node's op type)."""
    return case.model.graph.node[0].op_type


@functools.lru_cache(maxsize=1)
def claimed_cases() -> dict:
    """{case name: TestCase} for every node case of a claimed op (``_expanded`` function bodies left out)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    claimed = claimed_ops()
    return {c.name: c for c in cases if "_expanded" not in c.name and len(c.model.graph.node) == 1
            and c.model.graph.node[0].domain in ("", "ai.onnx") and case_op(c) in claimed}


def prepared_model(case):
    """The case's model with constant operands baked and its opset raised to 13 where the schema agrees."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    node = model.graph.node[0]
    inputs = arrays(case.data_sets[0][0])
    names = [n for n in node.input if n]
    baked = {node.input[i] for i in CONSTANT_OPERANDS.get(node.op_type, ()) if i < len(node.input) and node.input[i]}
    keep = [info for info in model.graph.input if info.name not in baked]
    for name, array in zip(names, inputs):
        if name in baked:
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), name))
    del model.graph.input[:]
    model.graph.input.extend(keep)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < 13:
            schema = onnx.defs.get_schema(node.op_type, opset.version)
            if onnx.defs.get_schema(node.op_type, 13).since_version == schema.since_version:
                opset.version = 13
    feeds = [a for n, a in zip(names, inputs) if n not in baked]
    return model, feeds


def arrays(values) -> list:
    """Case data as NumPy arrays (some cases store TensorProtos, for bfloat16 and float8)."""
    import onnx
    from onnx import numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v if isinstance(v, list) else np.asarray(v)
            for v in values]  # a list is an ONNX sequence, which portx does not take


def run_case(case, target) -> str | None:
    """None when ``case`` converts for ``target`` and gives ONNX's expected outputs, else the problem (one line)."""
    from tests.support.harness import emit_and_run

    try:
        model, feeds = prepared_model(case)
        expected = arrays(case.data_sets[0][1])
        src = load(model)
        graph = src.lower("model")
        got, _ = emit_and_run(graph, feeds, target)
    except PortxError as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    except Exception as exc:  # noqa: BLE001 - a failing emitter or loader is this case's result
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
    if len(got) != len(expected):
        return f"{len(got)} outputs, ONNX expects {len(expected)}"
    for i, (want, have) in enumerate(zip(expected, got)):
        want, have = np.asarray(want), np.asarray(have)
        if want.dtype.kind in "iub" and have.dtype.kind in "iub":
            have = have.astype(want.dtype)
        row = compare_arrays(want.astype(np.float64) if want.dtype.kind == "f" else want,
                             have.astype(np.float64) if have.dtype.kind == "f" else have, ATOL, RTOL)
        if not row["passed"]:
            return f"output {i}: {row.get('problem') or 'max_abs %s' % row.get('max_abs')}"
    return None


def xfail_reason(name, target) -> str | None:
    """The listed reason ``name`` fails on ``target``, or None."""
    entry = XFAIL.get(name)
    return entry.get(target) if isinstance(entry, dict) else entry
