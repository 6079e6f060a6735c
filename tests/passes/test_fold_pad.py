"""A zero pad read only by a convolution folded into its padding (passes/fold_pad.py), as before/after text IR."""
import numpy as np
import pytest

import portx  # noqa: F401
from portx.ir import format_graph, parse_graph, validate
from portx.passes.fold_pad import fold_pad_into_conv
from portx.verification.compare import run_reference


def _graph(pads, conv_pads="((0, 0), (0, 0))", mode='"constant"', value="0.0"):
    return validate(parse_graph(f"""
graph model(%x: float32[1x2x6x6], %w: float32[3x2x3x3]) {{
  %p: float32[1x2x8x8] = pad(%x) {{pads={pads}, mode={mode}, value={value}}}
  %y: float32[1x3x{{h}}x{{h}}] = conv(%p, %w) {{stride=(2, 2), pads={conv_pads}, dilation=(1, 1), groups=1}}
  return %y
}}""".replace("{h}", "3" if conv_pads == "((0, 0), (0, 0))" else "4")))


FOLDED = """
graph model(%x: float32[1x2x6x6], %w: float32[3x2x3x3]) {
  %y: float32[1x3x3x3] = conv(%x, %w) {stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1}
  return %y
}
"""


def test_a_zero_pad_before_a_convolution_is_its_padding():
    before = _graph("((0, 0), (0, 0), (1, 1), (1, 1))")
    after = validate(fold_pad_into_conv(before))
    assert format_graph(after) == format_graph(parse_graph(FOLDED))
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 2, 6, 6)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_reference(before, [x, w])[before.outputs[0]],
                                  run_reference(after, [x, w])[after.outputs[0]])


@pytest.mark.parametrize("conv_pads, mode, value", [
    ("((0, 1), (0, 1))", '"constant"', "0.0"),  # uneven together: the emitter would write a pad again
    ("((0, 0), (0, 0))", '"reflect"', "0.0"),
    ("((0, 0), (0, 0))", '"constant"', "1.0"),
], ids=["uneven", "reflect", "ones"])
def test_other_pads_stay(conv_pads, mode, value):
    graph = _graph("((0, 0), (0, 0), (1, 1), (1, 1))", conv_pads, mode=mode, value=value)
    assert fold_pad_into_conv(graph) is graph
