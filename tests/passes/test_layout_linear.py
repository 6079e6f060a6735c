"""passes/layout/rules.py: a linear whose features are stored second to last (Note [a linear into a residual])."""
from portx.ir import format_graph
from portx.passes.layout import sink_permutes
from tests.passes.test_layout import check


def test_a_linear_into_a_residual_reads_its_features_last():
    """A channels-first map flattened to tokens ``(B, C, H*W)`` stored for a ``(B, N, C)`` linear whose result
    joins a residual in logical order: one transpose before the ``linear``, as a person writes, not a weight-first
    matmul with the bias as a column and the transpose after (keras-hub MiT's ``mix_ffn``, torch-xla)."""
    after = check("""graph g(%x: float32[2x8x4x4], %r: float32[2x16x8]) {
      param %w: float32[8x8]
      param %b: float32[8]
      %p: float32[2x4x4x8] = permute(%x) {perm=(0, 2, 3, 1)}
      %f: float32[2x16x8] = reshape(%p) {shape=(2, 16, 8)}
      %g: float32[2x16x8] = relu(%f) {}
      %l: float32[2x16x8] = linear(%g, %w, %b) {}
      %o: float32[2x16x8] = add(%l, %r) {}
      return %o
    }""", sink_permutes, 1)
    assert [n.op.name for n in after.nodes] == ["reshape", "relu", "permute", "linear", "add"], format_graph(after)
