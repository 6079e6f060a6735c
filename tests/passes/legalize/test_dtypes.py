"""Dtype legality passes: before/after pairs in text IR."""
import warnings

import numpy as np
import pytest

import portx  # noqa: F401  (registers ops)
from portx.ir import format_graph, parse_graph, validate
from portx.passes.legalize import PortxWarning, cast_float64_to_float32, narrow_int64_to_int32

F64 = """
graph model(%x: float64[2x3]) {
  param %w: float64[3]
  %y: float64[2x3] = mul(%x, %w) {}  # scale
  %z: float32[2x3] = cast(%y) {dtype='float32'}  # out
  return %z
}
"""

F32 = """
graph model(%x: float32[2x3]) {
  param %w: float32[3]
  %y: float32[2x3] = mul(%x, %w) {}  # scale
  %z: float32[2x3] = cast(%y) {dtype='float32'}  # out
  return %z
}
"""


def test_float64_becomes_float32_with_a_warning_naming_scopes():
    before = validate(parse_graph(F64))
    with pytest.warns(PortxWarning, match="float64 -> float32 .*scale"):
        after = validate(cast_float64_to_float32(before))
    assert format_graph(after) == format_graph(parse_graph(F32))
    np.testing.assert_array_equal(after.params["w"], before.params["w"].astype(np.float32))


def test_float32_graph_is_untouched():
    graph = parse_graph(F32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cast_float64_to_float32(graph) is graph


def test_int64_params_that_fit_become_int32():
    graph = parse_graph("""
graph model(%x: int64[4]) {
  param %k: int64[4]
  %y: int64[4] = add(%x, %k) {}  # shift
  return %y
}""", params={"k": np.arange(4, dtype=np.int64)})
    with pytest.warns(PortxWarning, match="inputs x: int64 -> int32"):
        after = validate(narrow_int64_to_int32(graph))
    assert after.params["k"].dtype == np.int32 and after.outputs[0].type.dtype == "int32"


def test_int64_params_that_do_not_fit_are_kept():
    graph = parse_graph("""
graph model(%x: int32[2]) {
  param %k: int64[2]
  %y: int64[2] = add(%x, %k) {}  # big
  return %y
}""", params={"k": np.array([0, 2**40], dtype=np.int64)})
    with pytest.warns(PortxWarning, match="do not fit int32"):
        after = narrow_int64_to_int32(graph)
    assert after.params["k"].dtype == np.int64


def test_int64_narrowing_names_the_scopes_and_casts():
    graph = parse_graph("""
graph model(%x: float32[4]) {
  param %k: int64[4]
  %i: int64[4] = cast(%x) {dtype='int64'}  # ids
  %y: int64[4] = add(%i, %k) {}  # shift
  return %y
}""", params={"k": np.arange(4, dtype=np.int64)})
    with pytest.warns(PortxWarning, match=r"int64 -> int32 \(TPUs emulate 64-bit integers\) at: ids, shift"):
        after = validate(narrow_int64_to_int32(graph))
    assert [n.attrs.get("dtype") for n in after.nodes] == ["int32", None]
    assert after.outputs[0].type.dtype == "int32"
