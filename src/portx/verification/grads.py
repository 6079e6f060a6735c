"""Gradient verification: the converted model and its source give the same gradients of one scalar loss.

The loss is ``sum_k sum(output_k * R_k)`` with seeded random weights ``R_k`` (one per floating output),
so every output element contributes with its own weight. Both sides are differentiated in inference
mode (BatchNorm with its statistics, no dropout): PyTorch with ``torch.autograd``, Keras with
``jax.grad`` over ``stateless_call``. Which framework differentiates which model is declared, not probed: the
source says it (``Source.differentiable()``), and the converted model is given as a ``Differentiable`` with its
target's ``framework`` (frontends/base.py). Compared:

- the gradient with respect to every floating input, element by element (inputs in the source layout;
  with another ``--io-layout`` they are skipped);
- the gradient with respect to every trainable parameter, paired with the source's by the IR parameter both
  came from (Note [gradient pairing] in grad_pairs.py). A converted weight may be stored transposed (a Keras
  kernel is a PyTorch weight transposed), so the two gradients are compared as sorted value lists: any
  re-arrangement of the same numbers passes, different numbers do not. Parameters found on one side only
  are listed as unmatched, not failed.

``start_gradients`` traces the converted model's program early and compiles it in the background
(grad_program.py), so ``convert`` overlaps that compile with its other checks.

Example:
    >>> converted = Differentiable(model, target.framework)
    >>> started = start_gradients(src, graph, converted, seed=0)          # optional; returns at once
    >>> report = compare_gradients(src, graph, converted, seed=0, started=started, origins=emitted["origins"])
    >>> report.passed, report.inputs[0].max_rel, report.matched                # a typed ``Gradients``
"""
from __future__ import annotations

import numpy as np

from ..frontends.base import KERAS, Differentiable
from ..passes.layout import source_arrays
from ..session.report_sections import GradientRow, Gradients
from .compare import compare_arrays, make_inputs, random_outputs
from .grad_pairs import converted_weights, parameter_pairs
from .grad_program import abstract_program, compiled, keras_program, start_program
from .memory import release

__all__ = ["GRAD_ATOL", "GRAD_RTOL", "compare_gradients", "lower_gradients", "start_gradients", "settled",
           "gradient_problem", "gradients"]

#: gradients add up more rounding than outputs (a backward pass per layer): 10x the output tolerances
GRAD_ATOL, GRAD_RTOL = 1e-4, 1e-3

def _torch_gradients(module, arrays, weights):
    import torch

    inputs = [torch.from_numpy(np.require(a, requirements="C")) for a in arrays]
    for t in inputs:
        if t.is_floating_point():
            t.requires_grad_(True)
    params = {name: p for name, p in module.named_parameters() if p.requires_grad}
    out = torch.utils._pytree.tree_leaves(module(*inputs))
    loss = sum((o.float() * torch.from_numpy(w)).sum() for o, w in zip(out, weights) if w is not None)
    wrt = [t for t in inputs if t.requires_grad] + list(params.values())
    grads = torch.autograd.grad(loss, wrt, allow_unused=True)
    numpy = [None if g is None else g.detach().float().numpy() for g in grads]
    floats = iter(numpy[: len(wrt) - len(params)])
    input_grads = [next(floats) if t.requires_grad else None for t in inputs]
    return input_grads, dict(zip(params, numpy[len(wrt) - len(params):]))


def _keras_gradients(model, arrays, weights, started=None):
    use = started is not None and started.model is model and started.arrays is arrays and started.weights is weights
    run, args, floats, trainable = started.get() if use else _now(model, arrays, weights)
    g_params, g_inputs = run(*args)
    input_grads = [None] * len(arrays)
    for i, g in zip(floats, g_inputs):
        input_grads[i] = np.asarray(g)
    return input_grads, {v.path: np.asarray(g) for v, g in zip(trainable, g_params)}


def _now(model, arrays, weights):
    lowered, *rest = keras_program(model, arrays, weights)
    return (compiled(lowered), *rest)


def gradients(of: Differentiable, arrays, weights, started=None):
    """(input gradients or None per input, {parameter name: gradient}) of ``sum(out_k * weights_k)``.

    ``of``: a ``keras.Model`` (KERAS) or a torch module (TORCH; a loaded source's unlifted program too);
    ``started`` is its program from ``start_gradients``, compiling in the background (grad_program.py).
    """
    if of.framework == KERAS:
        return _keras_gradients(of.model, arrays, weights, started)
    return _torch_gradients(of.model, arrays, weights)


def _loss_inputs(src, graph, seed):
    """(the source's ``Differentiable``, inputs, output weights) of the gradient check, or (None, the skipped
    ``Gradients``, None)."""
    reference = src.differentiable()
    if reference.model is None:
        return None, Gradients(passed=None, skipped=reference.why), None
    arrays = make_inputs(graph, seed=seed)
    rng = np.random.default_rng(seed + 1)
    random = random_outputs(graph)  # a random draw's gradient differs by its draw: left out of the loss
    weights = [rng.normal(size=v.type.shape).astype(np.float32) if v.type.dtype.startswith(("float", "bfloat"))
               and v.name not in random else None for v in graph.outputs]
    if all(w is None for w in weights):
        return None, Gradients(passed=None, skipped="no floating output to differentiate" + (
            " (outputs of random ops are left out)" if random else "")), None
    return reference, arrays, weights


def start_gradients(src, graph, converted: Differentiable, seed=0):
    """The converted Keras model's gradient program for ``compare_gradients(..., started=)``, traced now and
    compiled on a background thread while other checks run; None when there is nothing to compile."""
    reference, arrays, weights = _loss_inputs(src, graph, seed)
    if reference is None or converted.framework != KERAS:
        return None
    return start_program(converted.model, arrays, weights)


def settled(started) -> None:
    """Wait for ``start_gradients``' background compile to end (None: nothing to wait for); Note [gradient
    compile]: convert waits before the trace, whose own compile and buffers would stack on it."""
    if started is not None:
        started.settled()
        release(collect=False)  # the compile's own memory, given back before the trace's


def compare_gradients(src, graph, converted: Differentiable, seed=0, atol=GRAD_ATOL, rtol=GRAD_RTOL, started=None,
                      origins=None) -> Gradients:
    """Compare the gradients of the ``converted`` model with the source's (see the module docstring).

    Returns report["gradients"], a ``Gradients`` (session/report_sections.py): ``inputs`` and ``parameters`` rows,
    ``matched``, ``unmatched_source``, ``unmatched_converted``; ``passed`` None (with ``skipped``) when there is
    nothing to compare.
    ``started``: ``start_gradients``' program for the same model and seed (its inputs are reused).
    ``origins``: the emitter's (Note [gradient pairing]); without them no parameter is paired.
    """
    reference, arrays, weights = _loss_inputs(src, graph, seed)
    if reference is None:
        return arrays
    if started is not None and started.model is converted.model:
        arrays, weights = started.arrays, started.weights
    same_layout = not graph.meta.get("io_perms")
    try:
        # the converted side first: its background compile's memory is given back before the source's backward
        got_in, got_params = gradients(converted, arrays, weights, started)
        want_in, want_params = gradients(reference, source_arrays(graph, arrays), weights)
    except Exception as exc:  # a framework refusing to differentiate (an integer path, a custom op): say so
        return Gradients(passed=None, skipped=f"gradients could not be computed: {type(exc).__name__}: {exc}"[:300])
    rows = []
    if same_layout:
        for value, want, got in zip(graph.inputs, want_in, got_in):
            if want is not None and got is not None:
                rows.append(GradientRow(name=value.name, **compare_arrays(want, got, atol, rtol)))
    pairs = parameter_pairs(graph, origins or {}, converted_weights(converted))
    split = {}  # source weight -> the converted weights made from it (a Keras GRU bias: torch's two biases)
    for converted, source in sorted(pairs.items(), key=lambda p: (p[1], p[0])):
        if source in want_params and converted in got_params:
            split.setdefault(source, []).append(converted)
    params = [row for row in (_parameter_row(source, want_params.get(source), " + ".join(parts),
                                             np.concatenate([np.ravel(np.asarray(got_params[c])) for c in parts]),
                                             atol, rtol)
                              for source, parts in split.items()) if row is not None]
    paired_source, paired_converted = set(pairs.values()), set(pairs)
    checked = rows + params
    return Gradients(passed=all(r.passed for r in checked) if checked else None, atol=atol, rtol=rtol,
                     inputs=rows, parameters=params, matched=len(params),
                     unmatched_source=sorted(k for k in want_params if k not in paired_source),
                     unmatched_converted=sorted(k for k in got_params if k not in paired_converted))


def lower_gradients(src, graph, converted: Differentiable, seed=0) -> Gradients:
    """report["gradients"] above the weight budget: the converted model's gradient program lowered on abstract
    weights for the CPU and TPU (Note [abstract gradients] in grad_program.py); "passed" is None, nothing is
    compared. Example: ``lower_gradients(src, graph, Differentiable(abstract, KERAS), 0).abstract["platforms"]``."""
    reference, arrays, weights = _loss_inputs(src, graph, seed)
    if reference is None:
        return arrays
    lowered = abstract_program(converted.model, arrays, weights)
    shown = ", ".join(f"{platform} {result}" for platform, result in lowered["platforms"].items())
    return Gradients(passed=None, abstract=lowered, skipped=f"weights above the budget: the gradient program was "
                     f"lowered on abstract weights ({shown}); numbers are compared only where the weights fit")


def _parameter_row(name, want, other, got, atol, rtol) -> GradientRow | None:
    """One parameter's row: the source's gradient ``want`` against the converted ``got`` as sorted values."""
    if want is None and got is None:  # unused by the loss on both sides
        return None
    want = np.zeros_like(got) if want is None else want  # unused on one side only: a zero gradient
    got = np.zeros_like(want) if got is None else got
    if want.size != got.size:
        row = {"passed": False, "max_abs": None, "max_rel": None, "problem": f"{want.size} elements, converted {got.size}"}
    else:
        row = compare_arrays(np.sort(want, axis=None), np.sort(got, axis=None), atol, rtol)
    return GradientRow(name=name, converted=other, **row)


def gradient_problem(grads: Gradients) -> str:
    """One line for a failed comparison: how many tensors differ and the first, e.g. for report warnings."""
    rows = grads.failed()
    return (f"gradients differ from the source's at {len(rows)} of {len(grads.inputs) + grads.matched} "
            f"tensors, first {rows[0].name}: {rows[0].problem}")
