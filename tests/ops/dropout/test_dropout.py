"""dropout: torch nn.Dropout / nn.Dropout1d/2d/3d / F.dropout -> IR ``dropout`` -> both targets' emitted
layers, compared in inference mode (the identity), and the layer each target writes so that training
drops like the source."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from portx.ir import parse_graph, validate
from portx.passes.fold import drop_dropout
from portx.passes.pipeline import run_passes
from tests.support.harness import check_torch_op

EXACT = {"atol": 0.0, "rtol": 0.0}

# (module or function, input shape, the dropout's shared axes in the IR)
CASES = [
    pytest.param(nn.Dropout(0.5), (2, 6), (), id="dropout"),
    pytest.param(nn.Dropout(0.1), (2, 3, 4, 4), (), id="dropout-4d"),
    pytest.param(nn.Dropout1d(0.2), (2, 3, 5), (2,), id="dropout1d"),
    pytest.param(nn.Dropout2d(0.2), (2, 3, 4, 4), (2, 3), id="dropout2d"),
    pytest.param(nn.Dropout3d(0.3), (1, 2, 2, 3, 3), (2, 3, 4), id="dropout3d"),
    pytest.param(lambda x: F.dropout(x * 2, 0.25, training=False), (2, 5), (), id="functional-eval"),
]


@pytest.mark.parametrize("fn, shape, axes", CASES)
def test_dropout_case(target, fn, shape, axes):
    torch.manual_seed(0)
    module = fn.eval() if isinstance(fn, nn.Module) else fn
    graph = check_torch_op(module, torch.randn(shape), target=target, **EXACT)
    if isinstance(fn, nn.Module):  # F.dropout(training=False) is no dropout at all in torch's graph
        (node,) = [n for n in graph.nodes if n.op.name == "dropout"]
        assert tuple(node.attrs["axes"]) == axes and node.attrs["rate"] == fn.p


def test_dropout_survives_decompositions_with_its_rate(target):
    """A program with an op that needs decomposing still keeps its dropout (Note [kept dropout])."""
    module = nn.Sequential(nn.Dropout(0.3), nn.Hardshrink(0.2), nn.Dropout2d(0.1)).eval()
    graph = check_torch_op(module, torch.randn(2, 3, 4, 4), target=target, **EXACT)
    assert [(n.attrs["rate"], n.attrs["axes"]) for n in graph.nodes if n.op.name == "dropout"] == \
        [(0.3, ()), (0.1, (2, 3))]


def test_channels_last_moves_the_shared_axes():
    graph = validate(parse_graph("""
graph model(%x: float32[1x3x4x4]) {
  param %w: float32[3x3x1x1]
  %c: float32[1x3x4x4] = conv(%x, %w, _) {dilation=(1, 1), groups=1, pads=((0, 0), (0, 0)), stride=(1, 1)}
  %d: float32[1x3x4x4] = dropout(%c) {rate=0.2, axes=(2, 3)}
  %y: float32[1x3x4x4] = conv(%d, %w, _) {dilation=(1, 1), groups=1, pads=((0, 0), (0, 0)), stride=(1, 1)}
  return %y
}"""))
    (node,) = [n for n in run_passes(graph, "keras-jax").nodes if n.op.name == "dropout"]
    assert tuple(node.attrs["axes"]) == (1, 2)  # NHWC: the spatial axes


def test_drop_dropout_records_what_it_removed_and_keeps_an_output_that_is_an_input():
    graph = validate(parse_graph("""
graph model(%x: float32[2x3]) {
  %a: float32[2x3] = relu(%x)  # fc
  %d: float32[2x3] = dropout(%a) {rate=0.5, axes=()}  # drop
  %e: float32[2x3] = dropout(%x) {rate=0.5, axes=()}  # first
  return %d, %e
}"""))
    dropped = drop_dropout(graph)
    assert [n.op.name for n in dropped.nodes] == ["relu", "dropout"]
    assert dropped.outputs[0] is graph.nodes[0].outputs[0]
    assert dropped.meta["dropped"] == [{"scope": "drop", "kind": "Dropout", "after": "a"}]


def test_a_zero_rate_dropout_leaves_the_graph_in_every_mode():
    """Note [zero-rate dropout]: rate 0 is the identity while training too, so the default (training) passes remove
    it, unrecorded; a dropout of another rate stays."""
    graph = validate(parse_graph("""
graph model(%x: float32[2x3]) {
  %a: float32[2x3] = relu(%x)  # fc
  %d: float32[2x3] = dropout(%a) {rate=0.0, axes=()}  # zero
  %e: float32[2x3] = dropout(%d) {rate=0.5, axes=()}  # half
  return %e
}"""))
    kept = run_passes(graph, "torch-xla")
    assert [(n.op.name, n.scope) for n in kept.nodes] == [("relu", "fc"), ("dropout", "half")]
    assert kept.nodes[1].inputs[0] is kept.nodes[0].outputs[0] and "dropped" not in kept.meta


def _blocks_with_zero_dropout():
    """Two Keras blocks named ``layer_{i}_*`` each with a Dropout(0.0), as keras-hub's Llama writes them (its
    dropout defaults to 0), and no dropout before them: one nn.Dropout(0.0) shared model-wide was declared in the
    first block and read by the second, which left both flat (Note [zero-rate dropout])."""
    import keras

    keras.utils.set_random_seed(0)
    x = keras.Input((4, 8))
    h = keras.layers.Dense(8, name="embedding")(x)
    for i in range(3):
        a = keras.layers.MultiHeadAttention(2, 4, name=f"layer_{i}_attention")(h, h)
        a = keras.layers.Dropout(0.0, name=f"layer_{i}_attention_dropout")(a)
        h = keras.layers.LayerNormalization(name=f"layer_{i}_norm")(keras.layers.Add(name=f"layer_{i}_add")([h, a]))
        f = keras.layers.Dense(8, activation="gelu", name=f"layer_{i}_dense")(h)
        f = keras.layers.Dropout(0.0, name=f"layer_{i}_dense_dropout")(f)
        h = keras.layers.Add(name=f"layer_{i}_add_1")([h, f])
    return keras.Model(x, h)


def test_blocks_with_zero_rate_dropouts_are_written_once(target, tmp_path):
    import portx
    from tests.support.structured_code import assert_structured

    result = portx.convert(_blocks_with_zero_dropout(), out=tmp_path / "out", to=target, grad=False)  # verifies
    assert result.ok and result.report["verification"]["passed"]
    assert assert_structured(result, target)["defs"] == 1
    assert "Dropout" not in result.files["code"].read_text()
