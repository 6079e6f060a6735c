"""Equivalence checks for your own test suite: ``assert_equivalent`` and the ``portx_equivalence`` fixture.

``assert_equivalent`` runs a PyTorch source and its conversion on the same inputs and raises
AssertionError with per-output max abs/rel errors (and the first diverging layer when it can tell).
This module is also a pytest plugin (entry point ``pytest11: portx``): installing portx gives every
test the ``portx_equivalence`` fixture, with tolerances from ``--portx-atol`` / ``--portx-rtol``.

Example:
    >>> from portx.testing import assert_equivalent
    >>> assert_equivalent(model, "out/", example_inputs=(torch.randn(1, 3, 32, 32),), samples=3)

    def test_converted_model(portx_equivalence):     # in a user's tests, no import beside Checks needed
        portx_equivalence("model.pt2", "out/", checks=Checks(samples=3))
"""
from __future__ import annotations

import dataclasses
import functools
import os

import numpy as np

from .options import DEFAULT_ATOL, DEFAULT_RTOL, Checks, Shapes, Trust, grouped

__all__ = ["assert_equivalent"]


def _as_array(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _input_specs(arrays) -> tuple:
    """``--input`` specs for file formats that do not record shapes (TorchScript, pickles), and an ONNX file's free
    dims: positional (``2x3x16x16:float32``), so a file whose inputs have other names than ``input0`` takes them."""
    return tuple(f"{'x'.join(str(d) for d in a.shape) or 'scalar'}:{a.dtype}" for a in arrays or ())


def _open_source(source, inputs, example_inputs, trust, dynamic):
    from .frontends import KERAS_SUFFIXES, load

    examples = example_inputs if example_inputs is not None else inputs
    if isinstance(source, (str, os.PathLike)):
        if str(source).lower().endswith(KERAS_SUFFIXES):  # Keras files record their input shapes
            return load(source, **trust.load_kwargs())
        arrays = [_as_array(x) for x in examples] if examples is not None else None
        return load(source, inputs=_input_specs(arrays), **trust.load_kwargs())
    return load(source, example_inputs=examples, free=dynamic)  # exported with those axes symbolic, as convert does


def _explain(report) -> str:
    """The AssertionError text from the typed report (``VerifyReport``): each output's errors, then the first
    diverging layer or why it is unknown."""
    lines = [f"portx: {report.out} is not equivalent to {report.source}"]
    if not report.outputs:
        lines.append(f"  {report.problem or ''}")
    for row in report.outputs:  # SampledOutput rows (session/report_rows.py)
        seed = "" if row.seed is None else f" on seed {row.seed}"
        verdict = "ok" if row.passed else f"DIFFERS{seed}: {row.problem}"
        lines.append(f"  output {row.name}: max abs {_num(row.max_abs)}, max rel {_num(row.max_rel)} "
                     f"(atol {_num(row.atol)}, rtol {_num(row.rtol)}) {verdict}")
    for dim in report.dynamic or []:  # shapes.dynamic: each free dim at convert's sizes
        sizes = ", ".join(str(c.size) + ("" if c.passed is not False else f" DIFFERS ({c.problem or ''})")
                          for c in dim.verified)
        lines.append(f"  free dim {dim.symbol} at sizes {sizes}")
    where = report.first_divergence
    if where:
        seed = "" if report.trace_seed is None else f" (seed {report.trace_seed})"
        lines.append(f"  first diverging layer{seed}: {where.scope or '<top>'} ({where.op}) %{where.value}: "
                     f"max abs {_num(where.max_abs)}, max rel {_num(where.max_rel)}; {where.problem}")
    elif report.outputs and not all(row.passed for row in report.outputs):
        lines.append(f"  first diverging layer: unknown ({report.note or 'every layer matches its IR reference'})")
    return "\n".join(lines)


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def assert_equivalent(source, converted, inputs=None, *, example_inputs=None, trust=Trust(), checks=Checks(),
                      shapes=Shapes(), **legacy) -> dict:
    """Assert that ``converted`` computes what ``source`` computes; returns the report when it does (the JSON form of a
    ``session.report.VerifyReport``, as ``portx.verify`` returns).

    source: an ``nn.Module`` (with ``example_inputs``, or ``inputs``) or a model file path.
    converted: an OUT folder from ``portx convert`` (either target), its ``model.py``, or a live
    ``keras.Model``.
    inputs: arrays to run both on (one batch); by default ``samples`` seeded valid batches
    (``checks.seed``..``checks.seed+checks.samples-1``), compared within ``checks.atol``/``checks.rtol``.
    ``shapes.static_batch``: as ``portx.verify``'s (read from ``converted``'s report.json when it has one).
    ``shapes.dynamic``: the ``--dynamic`` axes ``converted`` was made with (read from its report.json when not
    given), free here too (``inputs`` at another length then check), and checked at the sizes ``portx convert``
    checks them at (``report["dynamic"]``);
    ``trust``: as ``portx.convert``'s (Note [one trust] in options.py); flat ``samples=``, ``atol=``,
    ``trust_pickle=`` ... still work, with a DeprecationWarning. Raises AssertionError with per-output max abs/rel
    errors. Example: ``assert_equivalent(net, "out/", example_inputs=(x,), checks=Checks(samples=3, atol=1e-4))``.
    """
    os.environ.setdefault("KERAS_BACKEND", "jax")  # as the API does, before anything imports Keras
    from .session.dims import at_batch, lower_for, requested_dims, with_recorded
    from .verification.recheck import check_converted, open_converted

    groups = grouped("assert_equivalent", legacy, trust=trust, checks=checks, shapes=shapes)
    folder = converted if isinstance(converted, (str, os.PathLike)) else None
    checks, shapes = groups["checks"], with_recorded(folder, groups["shapes"])  # as portx.verify
    dynamic, pinned = shapes.dynamic, shapes.static_batch
    src = _open_source(source, inputs, example_inputs, groups["trust"], dynamic)
    src = at_batch(src, pinned) if pinned else src
    batch = None if inputs is None else [_as_array(x) for x in inputs]
    lower = functools.partial(lower_for, dynamic=dynamic, static_batch=pinned)
    sized = functools.partial(requested_dims, dynamic=dynamic) if dynamic else None  # as portx.verify --dynamic
    report = check_converted(src, open_converted(converted), lower=lower, batch=batch, samples=checks.samples,
                             seed=checks.seed, atol=checks.atol, rtol=checks.rtol, trace=checks.trace,
                             sized=sized, io_layout=shapes.io_layout)  # a VerifyReport
    if not report.passed:
        raise AssertionError(_explain(report))
    return report.to_dict()


try:
    import pytest
except ImportError:  # the plugin part needs pytest; assert_equivalent does not
    pytest = None

if pytest is not None:
    __all__ += ["portx_equivalence", "pytest_addoption"]

    def pytest_addoption(parser):
        """``--portx-atol`` / ``--portx-rtol``: tolerances for the ``portx_equivalence`` fixture."""
        group = parser.getgroup("portx", "portx equivalence checks")
        group.addoption("--portx-atol", type=float, default=None,
                        help=f"absolute tolerance of portx_equivalence (default {DEFAULT_ATOL:g})")
        group.addoption("--portx-rtol", type=float, default=None,
                        help=f"tolerance relative to each output's scale (default {DEFAULT_RTOL:g})")

    @pytest.fixture
    def portx_equivalence(request):
        """``assert_equivalent`` with the session's ``--portx-atol/--portx-rtol`` where the call's ``checks`` keeps
        the default tolerance (a call's own tolerance wins).

        Example: ``portx_equivalence("model.pt2", "out/", checks=Checks(samples=3))``.
        """
        session = {"atol": (request.config.getoption("portx_atol"), DEFAULT_ATOL),
                   "rtol": (request.config.getoption("portx_rtol"), DEFAULT_RTOL)}

        def check(source, converted, inputs=None, *, checks=Checks(), **kwargs):
            given = {k: v for k, (v, default) in session.items() if v is not None and getattr(checks, k) == default}
            return assert_equivalent(source, converted, inputs, checks=dataclasses.replace(checks, **given), **kwargs)
        return check
