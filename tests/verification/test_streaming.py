"""Block-by-block verification (verification/streaming.py): a decoder cut into its blocks, each emitted and run on
the source's own values, weights handed back after their last use, and an error found in the block that makes it."""
import gc
import weakref

import numpy as np
import pytest
import torch

import portx
from portx.frontends import load
from portx.passes.pipeline import inference_skip
from portx.targets import TARGETS
from portx.verification.compare import make_inputs
from portx.verification.recheck import prepared
from portx.passes.blocks import block_of
from portx.verification.segment_trace import segment_node_errors
from portx.verification.streaming import segments, stream_verify

transformers = pytest.importorskip("transformers")


class Logits(torch.nn.Module):
    """A causal LM called on ids, returning its logits (no cache)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits


@pytest.fixture(scope="module")
def decoder():
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    src = load(Logits(transformers.LlamaForCausalLM(config).eval()),
               example_inputs=(torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(0)),))
    return src, src.lower()


def _graph(src, graph, target):
    return prepared(graph, target, inference_skip(False, False), "source")


def test_block_of_is_the_path_to_the_first_number():
    assert block_of("model.model.layers.3.self_attn.q_proj") == "model.model.layers.3"
    assert block_of("features.0") == "features.0"
    assert block_of("model.lm_head") == block_of("") == ""


def test_segments_are_the_blocks_and_the_glue_between_them(decoder):
    src, graph = decoder
    segs = segments(_graph(src, graph, TARGETS["keras-jax"]))
    assert [s.key for s in segs] == ["", "model.model.layers.0", "model.model.layers.1", ""]
    params = [p for s in segs for p in s.params]
    assert sorted(params) == sorted(set(params))  # each weight read by one segment only
    assert all(s.outputs for s in segs)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_each_block_verifies_on_the_source_values_and_every_weight_is_released_once(decoder, to):
    src, graph = decoder
    target = TARGETS[to]
    graph = _graph(src, graph, target)
    released, freed = [], []
    report = stream_verify(src, graph, target, make_inputs(graph, seed=0), release=lambda k, t: released.append(k),
                           release_params=freed.extend)
    assert report["passed"], report
    blocks = [row.block for row in report["segments"]]
    assert blocks == ["(glue)", "model.model.layers.0", "model.model.layers.1", "(glue)"]
    assert all(o.paired for row in report["segments"] for o in row.outputs)  # every boundary from the source
    assert report["outputs"][0]["passed"] and report["outputs"][0]["max_abs"] < 1e-5
    assert sorted(released) == sorted(set(released)) and set(src.program.state_dict) <= set(released)
    assert sorted(freed) == sorted(graph.params)


def test_the_source_runs_only_as_far_as_the_next_block_needs(decoder):
    """Note [one read per block]: block 0 is verified before the source reads block 1's weights."""
    src, graph = decoder
    target = TARGETS["keras-jax"]
    graph = _graph(src, graph, target)
    events = []
    report = stream_verify(src, graph, target, make_inputs(graph, seed=0),
                           release=lambda key, tensor: events.append(("source", key)),
                           release_params=lambda names: events.append(("block", " ".join(names))))
    assert report["passed"], report
    block_0 = min(i for i, (who, what) in enumerate(events) if who == "block" and ".layers.0." in what)
    source_1 = min(i for i, (who, what) in enumerate(events) if who == "source" and ".layers.1." in what)
    assert block_0 < source_1, events


def _recording(target, models, alive):
    """``target``'s class, whose ``build`` records how many models it built before are still alive (``alive``)."""
    class Recording(type(target)):
        def build(self, sub):
            alive.append(sum(ref() is not None for ref in models))
            model = super().build(sub)
            models.append(weakref.ref(model))
            return model

    return Recording


def _with_gc_off(decoder, run) -> tuple:
    """``run(src, graph, target)`` on keras-jax with the cyclic GC off: (its result, whether each segment model was
    alive when the next was built, how many are alive at the end)."""
    src, graph = decoder
    keras_jax = TARGETS["keras-jax"]
    graph = _graph(src, graph, keras_jax)
    models, alive = [], []
    Recording = _recording(keras_jax, models, alive)
    gc.disable()
    try:
        result = run(src, graph, Recording())
        return result, alive, sum(ref() is not None for ref in models)
    finally:
        gc.enable()


def test_a_forgotten_segment_model_is_freed_before_the_next_is_built(decoder):
    """Note [dropped segment models]: the glue's Keras model (a web of reference cycles) is gone when the first
    block's model is built, and that block's when the head's is, whenever the cyclic GC would run (off here)."""
    report, alive, _ = _with_gc_off(decoder, lambda src, graph, target: stream_verify(
        src, graph, target, make_inputs(graph, seed=0)))
    assert report["passed"], report
    assert alive == [0, 0, 0]  # the glue, block 0 (block 1 reuses its model), the head


def test_a_traced_segment_model_is_freed_once_read(decoder):
    """Note [dropped segment models], for the per-segment trace (verification/segment_trace.py): each traced
    segment's Keras model is gone before the next is built, and the last once the trace returns (GC off here)."""
    errors, alive, left = _with_gc_off(decoder, lambda src, graph, target: segment_node_errors(
        target, graph, make_inputs(graph, seed=0), []))
    assert errors.segments and len(alive) == len(errors.segments) and errors.rows, errors.skipped
    assert alive == [0] * len(alive) and left == 0


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_wrong_weight_fails_its_own_block_only(decoder, to):
    """On keras-jax the second block reuses the first block's model with its own weights (Target.rebind)."""
    src, graph = decoder
    target = TARGETS[to]
    graph = _graph(src, graph, target)
    name = next(p for s in segments(graph) if s.key.endswith("layers.1") for p in s.params
                if graph.params[p].ndim == 2)
    params = dict(graph.params)
    params[name] = params[name] + np.float32(0.5)
    report = stream_verify(src, graph.replace(params=params), target, make_inputs(graph, seed=0))
    verdicts = [(row.block, row.passed) for row in report["segments"]]
    assert verdicts == [("(glue)", True), ("model.model.layers.0", True), ("model.model.layers.1", False),
                        ("(glue)", True)]  # the head runs on the source's values, so the error stays in its block
    assert not report["passed"]


class _SquareCnn(torch.nn.Module):
    """Two convs on an 8x8 image with 8 channels: a value (2, 8, 8, 8) has one shape in either layout."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
        self.body = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.body(self.stem(x)).mean(dim=(2, 3)))


def test_a_channels_last_value_is_paired_in_the_order_the_ir_stores_it(tmp_path, monkeypatch):
    """On keras-jax the layout pass stores the convs' values as NHWC (Note [stored orders]); the source's NCHW value
    of the same shape was paired as it was, so a correct CNN failed its first block (max abs 3.5 on tiny_cnn)."""
    monkeypatch.setenv("PORTX_WEIGHT_BUDGET", "100B")  # Note [weight budget]: streamed, block by block
    torch.manual_seed(0)
    result = portx.convert(_SquareCnn().eval(), to="keras-jax", out=tmp_path / "out",
                           example_inputs=(torch.randn(2, 3, 8, 8),), grad=False)
    ver = result.report["verification"]
    assert ver["mode"] == "streaming" and ver["passed"] is True, ver
    outs = {row["block"]: row["outputs"] for row in result.report["blocks"] if row["block"] != "(glue)"}
    assert sorted(outs) == ["body.0", "body.1", "stem.0", "stem.1"], outs  # no row "not paired" (x_nhwc is glue)
    assert all(o["paired"] and o["max_abs"] < 1e-5 for row in outs.values() for o in row), outs
