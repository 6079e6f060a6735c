"""random without a tensor input: ``torch.randn(n)``, ``torch.rand(2, 3)``, ``torch.randint``, ``torch.randperm``,
``torch.empty(n).normal_()``, ``randn_like`` of a buffer and noise added to an activation. None of them is
constant-folded (Note [random ops] in frontends/torch/dynamic.py): each becomes a ``random`` node with a ``shape``
and no input, and two calls of the emitted model (both targets) draw different numbers, of the right shape and
dtype, with a free batch dim where the shape follows the input; convert's verification checks them by shape, dtype
and range, and the emitted Keras model saves and reloads."""
import os

import keras
import numpy as np
import pytest
import torch

from portx.api import convert
from portx.ops.random import RANDOM, support_problem
from portx.targets import find_target
from tests.support.harness import Wrap, lower_torch


class _Buffered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(5))

    def forward(self, x):
        return x.sum(-1, keepdim=True) + torch.randn_like(self.table)


# (module, input shape, [(output shape, numpy dtype kind, low, high, drawn: the output depends on a draw)])
CASES = {
    "noise": (Wrap(lambda x: x + torch.randn(x.shape[-1])), (2, 3), [((2, 3), "f", -np.inf, np.inf, True)]),
    "rand_output": (Wrap(lambda x: (x * 2, torch.rand(2, 3))), (2, 3),
                    [((2, 3), "f", -np.inf, np.inf, False), ((2, 3), "f", 0.0, 1.0, True)]),
    "randint": (Wrap(lambda x: torch.randint(0, 10, (64,)) + x.shape[0] * 0), (2, 3), [((64,), "i", 0, 9, True)]),
    "empty_normal_": (Wrap(lambda x: torch.empty(64).normal_(2.0, 0.5) + x.mean()), (2, 3),
                      [((64,), "f", -np.inf, np.inf, True)]),
    "randperm": (Wrap(lambda x: (x, torch.randperm(8))), (2, 3), [((2, 3), "f", -np.inf, np.inf, False), ((8,), "i", 0, 7, True)]),
    "buffer_randn_like": (_Buffered(), (2, 3), [((2, 5), "f", -np.inf, np.inf, True)]),
}


def _call(target, model, x):
    if target == "keras-jax":
        out = model(x)
        return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    with torch.no_grad():
        out = model(torch.from_numpy(x))
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_input_random_is_drawn_at_every_call(case, target, tmp_path):
    module, shape, outputs = CASES[case]
    torch.manual_seed(0)
    graph, _, _ = lower_torch(module, torch.randn(shape))
    drawn = [n for n in graph.nodes if n.op is RANDOM and not n.inputs]
    assert drawn and all(n.attrs["shape"] for n in drawn), [n.op.name for n in graph.nodes]
    result = convert(module, to=target, out=tmp_path / "o", example_inputs=(torch.randn(shape),))
    ver = result.report["verification"]
    assert ver["passed"] is True and any("random" in row for row in ver["outputs"]), ver
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    first, second = _call(target, result.model, x), _call(target, result.model, x)
    assert len(first) == len(outputs)
    for a, b, (want, kind, low, high, drawn) in zip(first, second, outputs):
        assert a.shape == want and a.dtype.kind == kind, (a.shape, a.dtype)
        assert np.all((a >= low) & (a <= high)), (a.min(), a.max())
        assert np.array_equal(a, b) != drawn, "a drawn output repeats its numbers, or a computed one changed"


def test_randperm_draws_permutations(target, tmp_path):
    result = convert(Wrap(lambda x: (x, torch.randperm(8))), to=target, out=tmp_path / "o",
                     example_inputs=(torch.randn(2, 3),))
    x = np.zeros((2, 3), np.float32)
    perms = [tuple(_call(target, result.model, x)[1].tolist()) for _ in range(4)]
    assert all(sorted(p) == list(range(8)) for p in perms) and len(set(perms)) > 1


def test_a_draw_whose_shape_follows_the_batch_keeps_it_free(target, tmp_path):
    module = Wrap(lambda x: x + torch.randn(x.shape[0], 3))
    result = convert(module, to=target, out=tmp_path / "o", example_inputs=(torch.randn(2, 3),))
    assert result.report["verification"]["passed"] is True
    out = _call(target, result.model, np.zeros((5, 3), np.float32))[0]
    assert out.shape == (5, 3) and out.std() > 0.1


def test_the_keras_model_saves_reloads_and_still_draws(tmp_path):
    result = convert(Wrap(lambda x: (x + torch.randn(x.shape[-1]), torch.rand(2, 3))), to="keras-jax",
                     out=tmp_path / "o", example_inputs=(torch.randn(2, 3),))
    path = os.path.join(tmp_path, "saved.keras")
    result.model.save(path)
    reloaded = keras.saving.load_model(path)
    x = np.zeros((4, 3), np.float32)
    (a, r1), (b, r2) = _call("keras-jax", reloaded, x), _call("keras-jax", reloaded, x)
    assert a.shape == (4, 3) and r1.shape == (2, 3) and not np.array_equal(r1, r2) and not np.array_equal(a, b)
    assert [type(layer).__name__ for layer in reloaded.layers].count("RandomSample") == 2


def test_the_reference_draws_the_shape_and_checks_permutations():
    node = next(n for n in lower_torch(Wrap(lambda x: (x, torch.randperm(6))), torch.randn(2))[0].nodes
                if n.op is RANDOM)
    draw = RANDOM.reference_rule(**node.attrs)
    assert sorted(draw.tolist()) == list(range(6)) and support_problem(node, draw) == ""
    assert "outside" in support_problem(node, np.zeros(6))


def test_a_model_with_no_inputs_draws_at_every_call(target, tmp_path):
    result = convert(Wrap(lambda: (torch.randn(3) * 2 + torch.arange(3.0), torch.arange(4))), to=target,
                     out=tmp_path / "o", example_inputs=())
    assert result.report["verification"]["passed"] is True
    run = (lambda m: [np.asarray(o) for o in m()]) if target == "keras-jax" else \
        (lambda m: [o.numpy() for o in m()])
    (a, steps), (b, _) = run(result.model), run(result.model)
    assert a.shape == (3,) and a.dtype == np.float32 and not np.array_equal(a, b)
    np.testing.assert_array_equal(steps, np.arange(4))
    if target == "keras-jax":
        result.model.save(tmp_path / "draw.keras")
        reloaded = keras.saving.load_model(tmp_path / "draw.keras")
        (c, steps), (d, _) = run(reloaded), run(reloaded)
        assert c.shape == (3,) and not np.array_equal(c, d)
        np.testing.assert_array_equal(steps, np.arange(4))
