"""Layout passes: channels-last (keras-jax) and channels-first (torch-xla) graphs, permute sinking, I/O layouts.

Each case is a text-IR graph; the pass must keep the NumPy reference results (inputs and outputs
transposed where ``set_io_layout`` changed them) and leave exactly the stated number of permutes.
"""
import ast

import numpy as np
import pytest

import portx  # noqa: F401  (registers ops)
from portx.verification.compare import compare_arrays, make_inputs, run_reference
from portx.ir import format_graph, parse_graph, validate
from portx.ops.shape import PERMUTE, RESHAPE
from portx.passes.layout import (graph_arrays, inner_transposes, io_layouts, set_io_layout, sink_permutes,
                                 source_arrays, to_channels_first, to_channels_last)
from portx.passes.layout.reshape import grouped_order, reshape_groups
from portx.passes.layout.sink import count_permutes

CONV = "stride=(1, 1), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1"


def normalized(graph):
    """``graph`` with every node's default attributes filled in (text IR may leave them out)."""
    return validate(graph.replace(nodes=tuple(n.replace(attrs=n.op.normalize_attrs(n.attrs)) for n in graph.nodes)))


def check(text, transform, permutes, io_layout="source"):
    """Apply ``transform`` (and ``set_io_layout``); same reference results, ``permutes`` permutes left."""
    before = normalized(parse_graph(text) if isinstance(text, str) else text)
    after = validate(set_io_layout(transform(before), io_layout))
    arrays = make_inputs(after, 0)
    want = run_reference(before, source_arrays(after, arrays))
    got = run_reference(after, arrays)
    for value, expected, have in zip(after.outputs, graph_arrays(after, [want[v] for v in before.outputs]),
                                     [got[v] for v in after.outputs]):
        row = compare_arrays(expected, have, 1e-5, 1e-5)
        assert row["passed"], f"output {value.name}: {row}\n{format_graph(after)}"
    assert count_permutes(after) == permutes, format_graph(after)
    return after


def test_inverse_permutes_around_elementwise_ops_cancel():
    check("""graph g(%x: float32[1x3x4x5]) {
      %a: float32[1x4x5x3] = permute(%x) {perm=(0, 2, 3, 1)}
      %b: float32[1x4x5x3] = relu(%a) {}
      %c: float32[1x4x5x3] = cast(%b) {dtype='float32'}
      %d: float32[1x3x4x5] = permute(%c) {perm=(0, 3, 1, 2)}
      return %d
    }""", sink_permutes, 0)


CNN = f"""graph g(%x: float32[2x3x6x6]) {{
  param %w1: float32[4x3x3x3]
  param %b1: float32[4]
  param %bias: float32[1x4x1x1]
  param %w2: float32[5x4x3x3]
  %c1: float32[2x4x6x6] = conv(%x, %w1, %b1) {{{CONV}}}
  %a: float32[2x4x6x6] = add(%c1, %bias) {{}}
  %r: float32[2x4x6x6] = relu(%a) {{}}
  %p: float32[2x4x3x3] = max_pool(%r) {{kernel=(2, 2), stride=(2, 2), pads=((0, 0), (0, 0)), dilation=(1, 1)}}
  %c2: float32[2x5x3x3] = conv(%p, %w2, _) {{{CONV}}}
  %s: float32[2x5x3x3] = sigmoid(%c2) {{}}
  return %s
}}"""


def test_cnn_keeps_one_permute_per_image_input_and_output():
    after = check(CNN, to_channels_last, 2)
    assert all(n.attrs["channels_last"] for n in after.nodes if n.op.name in ("conv", "max_pool"))
    rows = io_layouts(after)
    assert [(r["layout"], r["source_layout"], r["transposed_inside"]) for r in rows["inputs"] + rows["outputs"]] == \
        [("NCHW", "NCHW", True), ("NCHW", "NCHW", True)]


def test_channels_last_io_drops_the_boundary_permutes():
    after = check(CNN, to_channels_last, 0, io_layout="channels-last")
    assert after.inputs[0].type.shape == (2, 6, 6, 3) and after.outputs[0].type.shape == (2, 3, 3, 5)
    rows = io_layouts(after)
    assert [(r["layout"], r["source_layout"]) for r in rows["inputs"] + rows["outputs"]] == \
        [("NHWC", "NCHW"), ("NHWC", "NCHW")]
    assert after.meta["io_layout"] == rows


AXES = f"""graph g(%x: float32[1x3x6x6]) {{
  param %w1: float32[4x3x3x3]
  param %w2: float32[4x3x3x3]
  param %w3: float32[2x8x3x3]
  param %scale: float32[4x1x1]
  %c1: float32[1x4x6x6] = conv(%x, %w1, _) {{{CONV}}}
  %c2: float32[1x4x6x6] = conv(%x, %w2, _) {{{CONV}}}
  %sm: float32[1x4x6x6] = softmax(%c1) {{axis=1}}
  %pd: float32[1x4x8x9] = pad(%sm) {{pads=((0, 0), (0, 0), (1, 1), (1, 2)), mode='reflect', value=0.0}}
  %sl: float32[1x4x6x9] = slice(%pd) {{axis=2, start=1, end=7, step=1}}
  %sl2: float32[1x4x6x6] = slice(%sl) {{axis=3, start=0, end=6, step=1}}
  %cat: float32[1x8x6x6] = concat(%sl2, %c2) {{axis=1}}
  %p0: float32[1x2x6x6], %p1: float32[1x6x6x6] = split(%cat) {{sizes=(2, 6), axis=1}}
  %m: float32[1x6x1x1] = mean(%p1) {{axes=(2, 3), keepdims=True}}
  %mx: float32[1x6x6] = amax(%p1) {{axes=(3,), keepdims=False}}
  %mx4: float32[1x6x6x1] = reshape(%mx) {{shape=(1, 6, 6, 1)}}
  %e: float32[1x6x6x6] = mul(%p1, %m) {{}}
  %e2: float32[1x6x6x6] = add(%e, %mx4) {{}}
  %f: float32[1x6x6x6] = flip(%e2) {{axes=(3,)}}
  %ro: float32[1x6x6x6] = roll(%f) {{shifts=(1,), axes=(2,)}}
  %g: bool[1x6x6x6] = gt(%ro, %p1) {{}}
  %wh: float32[1x6x6x6] = where(%g, %ro, %p1) {{}}
  %sc: float32[1x4x6x6] = mul(%c2, %scale) {{}}
  %j: float32[1x8x6x6] = concat(%wh, %p0) {{axis=1}}
  %out: float32[1x2x6x6] = conv(%j, %w3, _) {{{CONV}}}
  %ls: float32[1x4x6x6] = log_softmax(%sc) {{axis=1}}
  return %out, %ls
}}"""


def test_axis_ops_between_convolutions_run_channels_last():
    after = check(AXES, to_channels_last, 3)  # one input, two image outputs
    axes = {n.outputs[0].name: n.attrs.get("axis", n.attrs.get("axes")) for n in after.nodes}
    assert axes["sm"] == 3 and axes["cat"] == 3 and axes["m"] == (1, 2) and axes["f"] == (2,)


def test_flatten_into_linear_reorders_the_weight_instead_of_transposing():
    after = check(f"""graph g(%x: float32[2x3x5x5]) {{
      param %w: float32[5x3x3x3]
      param %fc: float32[7x45]
      param %fcb: float32[7]
      %c: float32[2x5x3x3] = conv(%x, %w, _) {{stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}}
      %f: float32[2x45] = reshape(%c) {{shape=(2, 45)}}
      %y: float32[2x7] = linear(%f, %fc, %fcb) {{}}
      return %y
    }}""", to_channels_last, 1)
    assert any(name.endswith(".reordered") for name in after.params)


def test_global_pool_flatten_linear_needs_no_inner_permute():
    check(f"""graph g(%x: float32[2x3x4x4]) {{
      param %w: float32[5x3x3x3]
      param %fc: float32[7x5]
      %c: float32[2x5x4x4] = conv(%x, %w, _) {{{CONV}}}
      %p: float32[2x5x1x1] = adaptive_avg_pool(%c) {{size=(1, 1)}}
      %f: float32[2x5] = reshape(%p) {{shape=(2, 5)}}
      %y: float32[2x7] = linear(%f, %fc, _) {{}}
      return %y
    }}""", to_channels_last, 1)


def test_a_pooled_map_leaves_in_a_permute_not_a_reshape_naming_its_sizes():
    """Note [size-1 spatial dims]: the (N, 5, 1, 1) pool output, stored NHWC, goes back to NCHW by the permute a
    person writes (it moves no data: not counted), not by reshape(N, 5, 1, 1)."""
    after = check(f"""graph g(%x: float32[2x3x4x4]) {{
      param %w: float32[5x3x3x3]
      %c: float32[2x5x4x4] = conv(%x, %w, _) {{{CONV}}}
      %p: float32[2x5x1x1] = adaptive_avg_pool(%c) {{size=(1, 1)}}
      return %p
    }}""", to_channels_last, 1)
    last = after.producers()[after.outputs[0]]
    assert last.op is PERMUTE and last.attrs["perm"] == (0, 3, 1, 2), format_graph(after)


def test_patch_embedding_transposes_cancel():
    """conv -> flatten(2) -> transpose(1, 2), as in a ViT: the source's own transpose cancels the conv's."""
    check(f"""graph g(%x: float32[2x3x8x8]) {{
      param %w: float32[6x3x4x4]
      %c: float32[2x6x2x2] = conv(%x, %w, _) {{stride=(4, 4), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}}
      %f: float32[2x6x4] = reshape(%c) {{shape=(2, 6, 4)}}
      %t: float32[2x4x6] = permute(%f) {{perm=(0, 2, 1)}}
      %n: float32[2x4x6] = layer_norm(%t, _, _) {{normalized_shape=(6,), eps=1e-05}}
      return %n
    }}""", to_channels_last, 1)


def test_layer_norm_over_a_spatial_axis_stays_logical():
    """layer_norm over W of an NHWC-stored value is not on the stored last axis: one transpose back."""
    check(f"""graph g(%x: float32[1x3x5x5]) {{
      param %w: float32[4x3x3x3]
      %c: float32[1x4x5x5] = conv(%x, %w, _) {{{CONV}}}
      %n: float32[1x4x5x5] = layer_norm(%c, _, _) {{normalized_shape=(5,), eps=1e-05}}
      return %n
    }}""", to_channels_last, 2)


def test_resizes_as_matmuls_and_repeats_run_channels_last():
    """What legalization makes of bilinear and integer nearest resizes contracts stored axes in place."""
    check(f"""graph g(%x: float32[1x3x4x5]) {{
      param %w: float32[4x3x3x3]
      param %w2: float32[2x8x3x3]
      param %cols: float32[5x10]
      param %rows: float32[8x4]
      %c: float32[1x4x4x5] = conv(%x, %w, _) {{{CONV}}}
      %u1: float32[1x4x4x10] = matmul(%c, %cols) {{}}
      %u2: float32[1x4x8x10] = matmul(%rows, %u1) {{}}
      %s: float32[1x4x4x1x5x1] = reshape(%c) {{shape=(1, 4, 4, 1, 5, 1)}}
      %e: float32[1x4x4x2x5x2] = expand(%s) {{shape=(1, 4, 4, 2, 5, 2)}}
      %n: float32[1x4x8x10] = reshape(%e) {{shape=(1, 4, 8, 10)}}
      %cat: float32[1x8x8x10] = concat(%u2, %n) {{axis=1}}
      %y: float32[1x2x8x10] = conv(%cat, %w2, _) {{{CONV}}}
      return %y
    }}""", to_channels_last, 2)


KERAS_STYLE = f"""graph g(%x: float32[1x6x6x3]) {{
  param %w: float32[4x3x3x3]
  param %b: float32[4]
  %a: float32[1x3x6x6] = permute(%x) {{perm=(0, 3, 1, 2)}}
  %c: float32[1x4x6x6] = conv(%a, %w, _) {{{CONV}}}
  %d: float32[1x6x6x4] = permute(%c) {{perm=(0, 2, 3, 1)}}
  %e: float32[1x6x6x4] = add(%d, %b) {{}}
  %r: float32[1x6x6x4] = relu(%e) {{}}
  %f: float32[1x4x6x6] = permute(%r) {{perm=(0, 3, 1, 2)}}
  %p: float32[1x4x3x3] = max_pool(%f) {{kernel=(2, 2), stride=(2, 2), pads=((0, 0), (0, 0)), dilation=(1, 1)}}
  %y: float32[1x3x3x4] = permute(%p) {{perm=(0, 2, 3, 1)}}
  return %y
}}"""


def test_keras_style_pairs_cancel_for_channels_first():
    """A Keras frontend's NHWC -> NCHW -> op -> NHWC pairs: torch-xla keeps only the boundary ones."""
    after = check(KERAS_STYLE, to_channels_first, 2)
    assert [r["layout"] for r in io_layouts(after)["inputs"]] == ["NHWC"]
    after = check(KERAS_STYLE, to_channels_first, 0, io_layout="channels-first")
    assert after.inputs[0].type.shape == (1, 3, 6, 6)


def test_keras_style_graph_has_no_permute_channels_last():
    check(KERAS_STYLE, to_channels_last, 0)


def test_source_permutes_are_never_multiplied():
    """Attention-style head transposes: the attention runs in the order its operands are stored in (its
    ``layout``), so neither head transpose is left (and never more than the source had)."""
    text = """graph g(%x: float32[2x5x8]) {
      param %w: float32[24x8]
      %q: float32[2x5x24] = linear(%x, %w, _) {}
      %h: float32[2x5x3x8] = reshape(%q) {shape=(2, 5, 3, 8)}
      %t: float32[2x3x5x8] = permute(%h) {perm=(0, 2, 1, 3)}
      %a: float32[2x3x5x8] = attention(%t, %t, %t, _) {is_causal=False, scale=0.5, enable_gqa=False}
      %b: float32[2x5x3x8] = permute(%a) {perm=(0, 2, 1, 3)}
      %y: float32[2x5x24] = reshape(%b) {shape=(2, 5, 24)}
      return %y
    }"""
    after = check(text, to_channels_last, 0)
    assert [n.attrs["layout"] for n in after.nodes if n.op.name == "attention"] == [(0, 2, 1, 3)]


def test_reshape_groups_pair_runs_of_equal_size():
    assert reshape_groups((2, 3, 4, 5), (2, 3, 20)) == [([0], [0]), ([1], [1]), ([2, 3], [2])]
    assert reshape_groups((1, 6, 1), (2, 3)) == [([1], [0, 1])]
    assert reshape_groups((4, 6), (6, 4)) == [([0, 1], [0, 1])]
    assert reshape_groups((0, 2), (2, 0)) is None


def test_grouped_order_moves_each_run_to_its_first_stored_axis():
    merge = [([0], [0]), ([1, 2], [1]), ([3], [2]), ([4], [3])]  # (N, c, g, H, W) -> (N, C, H, W)
    assert grouped_order((0, 3, 4, 2, 1), (1, 4, 2, 8, 8), merge) == (0, 3, 4, 1, 2)
    assert grouped_order((0, 1, 2, 3, 4), (1, 4, 2, 8, 8), merge) == (0, 1, 2, 3, 4)
    # a size-1 axis outside every run keeps its stored place
    assert grouped_order((0, 2, 1), (2, 1, 6), [([0], [0]), ([2], [1])]) == (0, 2, 1)


def test_channel_shuffle_keeps_one_permute_channels_last():
    """ShuffleNet's shuffle between convolutions: boundary permutes plus one, none around the convs."""
    conv = "{stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}"
    text = """graph g(%x: float32[1x3x8x8]) {
      param %w: float32[8x3x1x1]
      param %v: float32[4x8x1x1]
      %c: float32[1x8x8x8] = conv(%x, %w, _) CONV
      %s: float32[1x2x4x8x8] = reshape(%c) {shape=(1, 2, 4, 8, 8)}
      %t: float32[1x4x2x8x8] = permute(%s) {perm=(0, 2, 1, 3, 4)}
      %m: float32[1x8x8x8] = reshape(%t) {shape=(1, 8, 8, 8)}
      %y: float32[1x4x8x8] = conv(%m, %v, _) CONV
      return %y
    }""".replace("CONV", conv)
    check(text, to_channels_last, 3)
    rows = inner_transposes(to_channels_last(normalized(parse_graph(text))))  # Note [carried permutes]
    assert [(r["origin"], r["carries"], r["perm"], r["feeds"]) for r in rows] == [("source", "t", [0, 1, 2, 4, 3],
                                                                                    ["reshape"])]


def test_spatial_ops_flip_back_to_channels_first():
    """to_channels_first on a channels_last graph: every spatial op flips, results unchanged.

    One permute of the shared input, one per output (the global pool's (1, 4, 1, 1) is a reshape).
    """
    after = check(_spatial_graph(), to_channels_first, 1 + len(SPATIAL_OUTPUTS) - 1)
    assert not any(n.attrs.get("channels_last") for n in after.nodes)
    producers = after.producers()
    assert all(producers[v].op in (PERMUTE, RESHAPE) for v in after.outputs)


def _spatial_case():
    """One NHWC input read by channels_last spatial ops covering every Keras rule path."""
    cl = "channels_last=True"
    rows = [
        ("same", "1x7x7x6", "conv(%x, %w1, %b1) {stride=(1, 1), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=1, CL}"),
        ("asym", "1x3x3x6", "conv(%x, %w1, _) {stride=(2, 2), pads=((0, 1), (1, 0)), dilation=(1, 1), groups=1, CL}"),
        ("dw", "1x7x7x8", "conv(%x, %wd, _) {stride=(1, 1), pads=((1, 1), (1, 1)), dilation=(1, 1), groups=4, CL}"),
        ("grouped", "1x7x7x6", "conv(%x, %wg2, %b1) {stride=(1, 1), pads=((1, 1), (1, 1)), dilation=(1, 1), "
                               "groups=2, CL}"),
        ("sd", "1x2x2x6", "conv(%x, %w1, _) {stride=(2, 2), pads=((0, 0), (0, 0)), dilation=(2, 2), groups=1, CL}"),
        ("up", "1x14x14x5", "conv_transpose(%x, %wt, %bt) {stride=(2, 2), padding=(1, 1), output_padding=(1, 1), "
                            "dilation=(1, 1), groups=1, CL}"),
        ("upg", "1x14x14x6", "conv_transpose(%x, %wtg, _) {stride=(2, 2), padding=(0, 0), output_padding=(0, 0), "
                             "dilation=(1, 1), groups=2, CL}"),
        ("mp", "1x4x4x4", "max_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), dilation=(1, 1), CL}"),
        ("mpd", "1x5x5x4", "max_pool(%x) {kernel=(2, 2), stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(2, 2), CL}"),
        ("ap", "1x4x4x4", "avg_pool(%x) {kernel=(3, 3), stride=(2, 2), pads=((1, 1), (1, 1)), "
                          "count_include_pad=False, ceil_mode=True, CL}"),
        ("gap", "1x1x1x4", "adaptive_avg_pool(%x) {size=(1, 1), CL}"),
        ("aap", "1x7x1x4", "adaptive_avg_pool(%x) {size=(7, 1), CL}"),  # even bins (uneven: legalized first)
        ("amp", "1x1x7x4", "adaptive_max_pool(%x) {size=(1, 7), CL}"),
        ("bn", "1x7x7x4", "batch_norm(%x, %g, %bb, %mean, %var) {eps=1e-05, CL}"),
        ("bnc", "1x7x7x4", "batch_norm(%x, %g, _, %cmean, %var) {eps=1e-05, CL}"),
        ("gn", "1x7x7x4", "group_norm(%x, %g, %bb) {groups=2, eps=1e-05, CL}"),
        ("gnc", "1x7x7x4", "group_norm(%x, %cg, %bb) {groups=2, eps=1e-05, CL}"),
        ("nn", "1x14x14x4", "resize(%x) {size=(14, 14), mode='nearest', align_corners=False, scales=None, CL}"),
        ("ng", "1x14x7x4", "resize(%x) {size=(14, 7), mode='nearest', align_corners=False, scales=None, CL}"),
        ("bl", "1x7x7x4", "resize(%x) {size=(7, 7), mode='linear', align_corners=False, scales=None, CL}"),
    ]
    params = """param %w1: float32[6x4x3x3]
      param %b1: float32[6]
      param %wd: float32[8x1x3x3]
      param %wg: float32[6x2x3x3]
      param %wt: float32[4x5x3x3]
      param %bt: float32[5]
      param %wtg: float32[4x3x2x2]
      param %g: float32[4]
      param %bb: float32[4]
      param %mean: float32[4]
      param %var: float32[4]
      param %two: float32[]"""
    computed = """%wg2: float32[6x2x3x3] = mul(%wg, %two) {}
      %cmean: float32[4] = mul(%mean, %two) {}
      %cg: float32[4] = mul(%g, %two) {}"""
    body = "\n      ".join(f"%{name}: float32[{shape}] = {expr.replace('CL', cl)}" for name, shape, expr in rows)
    text = (f"graph spatial(%x: float32[1x7x7x4]) {{\n      {params}\n      {computed}\n      {body}\n"
            f"      return {', '.join('%' + r[0] for r in rows)}\n    }}")
    return text, [r[0] for r in rows]


SPATIAL, SPATIAL_OUTPUTS = _spatial_case()


def _spatial_graph():
    """SPATIAL with a positive variance and a scalar 2 (random parameters otherwise)."""
    params = dict(parse_graph(SPATIAL).params)
    params["var"] = np.abs(params["var"]) + 0.5
    params["two"] = np.array(2.0, dtype=np.float32)
    return normalized(parse_graph(SPATIAL, params))


def test_channels_last_ops_emit_keras_matching_their_reference(tmp_path):
    """Every Keras rule path of the spatial ops with channels_last=True, against the NumPy reference."""
    from portx.targets.codegen import import_by_path as import_emitted

    from portx.targets.keras_jax.emitter import emit_keras
    graph = _spatial_graph()
    arrays = make_inputs(graph, 0)
    want = run_reference(graph, arrays)
    emit_keras(graph, tmp_path)
    code = (tmp_path / "model.py").read_text()
    # only the keras.ops fallbacks written for channels-first run channels-first, between two transposes
    assigned = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Assign)]
    assert {node.targets[0].id for node in assigned if "channels_first" in ast.unparse(node.value)} <= \
        {"upg_cf_padded", "upg_cf_1"}
    got = import_emitted(tmp_path / "model.py").load_model()(arrays[0])
    for value, have in zip(graph.outputs, got):
        row = compare_arrays(want[value], np.asarray(have), 1e-5, 1e-4)
        assert row["passed"], f"{value.name}: {row}"


@pytest.mark.parametrize("mode", ["channels-last", "channels-first"])
def test_io_layout_needs_a_boundary_permute_to_drop(mode):
    """An input read directly by a channels-first op has nothing to drop for channels-last (and so on)."""
    after = check(CNN, lambda g: g, 0, io_layout=mode)
    assert after.inputs[0].type.shape == (2, 3, 6, 6)


def test_dropping_boundary_permutes_records_the_blocks_at_their_new_positions():
    from portx.frontends import load
    from portx.passes.blocks import record_blocks
    from portx.passes.pipeline import run_passes
    from tests.support.structured_models import small_resnet

    model, inputs = small_resnet()
    graph = run_passes(load(model, example_inputs=inputs).lower(), "keras-jax")
    moved = set_io_layout(graph, "channels-last")  # drops the input's permute: every node one place earlier
    assert len(moved.nodes) < len(graph.nodes)
    assert moved.meta["blocks"] == record_blocks(moved).meta["blocks"]  # Note [blocks after free dims]
