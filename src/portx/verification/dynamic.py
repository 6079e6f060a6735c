"""Free dimensions checked (Note [free dims] in ir/types.py): the converted model at several sizes of each.

Which dims stay free is decided by the conversion (session/dims/); ``verify_sizes`` runs the source and
the converted model at several sizes of each free dim (the batch at the example's, 1 and 8, its reference the
source on row chunks of the example's batch: Note [rows independent] in chunks.py) and reports each;
``verify_example`` is convert's own check at the example's shapes.

Example:
    >>> verify_sizes(src, graph, model, target, seed=0)[0]["sizes"]
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..errors import BadInput
from ..progress import step
from ..session.report_rows import SizeCheck
from ..session.report_sections import Verification
from .chunks import batch_reference, chunk_problem
from .compare import (DEFAULT_ATOL, DEFAULT_RTOL, compare, input_dtype, narrow_outputs, random_outputs,
                      sign_free_outputs)
from .domain import cycled, example_fraction, verify_in_domain
from .memory import largest_batch, release
from .trace import localize

__all__ = ["example_shapes", "verify_example", "verify_sizes", "example_checked", "sample_sizes", "one_line",
           "BATCH_SAMPLES"]

#: batch sizes verified besides the example's
BATCH_SAMPLES = (1, 8)


def one_line(exc) -> str:
    """An exception as one short line without terminal colour codes (Keras wraps errors in them)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Exception encount")]
    body = lines[0] if lines else ""
    if isinstance(exc, BadInput):
        return body[:240]
    return f"{type(exc).__name__}: {body[:200]}"


def sample_sizes(dim, largest=BATCH_SAMPLES[-1]) -> list:
    """The sizes a free dim is verified at: the example's, 1 and 8 (``largest``) for the batch, else the example's
    and one more, inside its range and a multiple of its ``step`` away. The example's is the size the user gave
    (``example_shapes``)."""
    size, low, high, step = dim.get("example", dim["size"]), dim.get("min") or 1, dim.get("max"), dim.get("step", 1)
    wanted = [size, *BATCH_SAMPLES[:-1], largest] if dim["symbol"] == "batch" else \
        [size, size + 3 * step, max(low, size - step)]  # a divided dim keeps to its step (Note [divided dims])
    inside = [n for n in dict.fromkeys(wanted) if n >= low and (high is None or n <= high)]
    return inside if dim["symbol"] == "batch" else inside[:2]


def verify_sizes(src, graph, model, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, symbols=None) -> list:
    """One row per free dim: {"symbol", "sizes": [SizeCheck], ...}, each size checked
    with the other dims at the example's size (Note [one compile at a time]). The example's own shapes are
    compiled last, but checked by convert's verify stage, which compares the same seeded batch: their entry
    says ``"by": "verify"`` until ``example_checked`` copies that stage's result in. ``symbols``: only these dims,
    every size checked here, the example's too (``portx verify --dynamic``: its samples may run at the traced
    size, not the example's)."""
    dims = {symbol: dim for symbol, dim in graph.meta.get("free", {}).get("dims", {}).items()
            if symbols is None or symbol in symbols}
    # Note [activations follow the weights] (verification/memory.py): a large batch only where it fits
    largest = largest_batch(graph, dims["batch"]["size"], BATCH_SAMPLES[-1]) if "batch" in dims else None
    plan = [(symbol, n, example_shapes(graph, {symbol: n})) for symbol, dim in dims.items()
            for n in sample_sizes(dim, largest or BATCH_SAMPLES[-1])]
    plan = [(symbol, n, shapes) for symbol, n, shapes in plan
            if all(d >= 1 for shape in shapes for d in shape)]  # a dim that follows one with an offset: empty here
    example = repr(example_shapes(graph))
    checks = {}
    # inputs of one shape (two dims both at one size) are checked once
    others = {repr(shapes): (f"{symbol}={n}", shapes, symbol) for symbol, n, shapes in plan
              if symbols is not None or repr(shapes) != example}
    allowed = example_fraction(src, graph) if others else None  # the source on its example: once, not per size
    for done, (key, (label, shapes, symbol)) in enumerate(others.items()):
        step(done, len(others), f"{label}: compiling")  # progress.py display; Note [one compile at a time]
        run = target.runner(model)  # the memoized forward, made again after each size's release
        _compile_alone(run, graph, shapes)
        step(done, len(others), f"{label}: the source")
        arrays, expected = batch_reference(src, graph, seed, shapes, allowed, dims[symbol] if symbol == "batch"
                                           else None)
        release(collect=False)  # the source's freed activations, before XLA allocates its own
        step(done, len(others), f"{label}: the converted model")
        checks[key] = _check_size(graph, run, arrays, expected, atol, rtol)
        del arrays, expected
        if symbol == "batch":
            chunk_problem(checks[key], dims["batch"], graph, seed)
        release(executables=True, collect=False)  # no later check runs this size
    if symbols is None:  # for convert's verify stage, which runs it next
        _compile_alone(target.runner(model), graph, example_shapes(graph))
    rows = []
    for symbol, dim in dims.items():
        sized = [SizeCheck(size=n, **checks.get(repr(shapes), _BY_VERIFY)) for s, n, shapes in plan if s == symbol]
        rows.append({"symbol": symbol, "sites": [[graph.inputs[i].name, axis] for i, axis in dim["sites"]],
                     "min": dim.get("min"), "max": dim.get("max"), "sizes": sized,
                     "passed": all(c.passed is not False for c in sized)})
    return rows


_BY_VERIFY = {"passed": None, "problem": None, "max_abs": None, "max_rel": None, "by": "verify"}


def example_checked(rows, verification) -> list:
    """``verify_sizes``' rows with the example's size filled in from convert's verification result (the same
    seeded batch at the same shapes, a ``Verification``): passed, problem and the largest errors over the outputs."""
    outputs = verification.outputs or []
    problem = verification.problem or next((o.problem for o in outputs if not o.passed), None)
    result = {"passed": verification.passed, "problem": problem or None,
              "max_abs": max((o.max_abs or 0.0 for o in outputs), default=None),
              "max_rel": max((o.max_rel or 0.0 for o in outputs), default=None)}
    for row in rows:
        row["sizes"] = [replace(c, **result) if c.by == "verify" else c for c in row["sizes"]]
        row["passed"] = all(c.passed is not False for c in row["sizes"])
    return rows


def example_shapes(graph, at=None) -> list:
    """The input shapes the user's example has: the graph's, but for a free dim traced at another size than the
    example's (a batch of 1 is traced at 2: Note [batch of one] in frontends/torch/live.py), at the example's.
    Convert verifies there, so the size checks and verification share that compile (batch 1: sizes 1 and 8 are
    two XLA compiles of the forward, not three). ``at``: {symbol: size} for dims checked at another size."""
    dims, at = graph.meta.get("free", {}).get("dims", {}), at or {}
    return [tuple(d.at(at.get(d.symbol, dims[d.symbol].get("example", d.size))) if getattr(d, "symbol", None) in dims
                  else (d if isinstance(d, int) else d.size) for d in graph.free_shape(v)) for v in graph.inputs]


def verify_example(src, graph, model, emitted, target, seed=0, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> Verification:
    """Convert's own check: the source against the loaded ``model`` on one seeded batch at ``example_shapes``;
    when they differ, the first IR node whose emitted value differs from the IR reference (verification/trace.py),
    read on those inputs with their rows cycled to the graph's own shapes (the reference runs there)."""
    shapes = example_shapes(graph)
    result, arrays = verify_in_domain(src, graph, model, target, seed, atol, rtol, shapes)  # verification/domain.py
    result.update({"seed": seed, "inputs": [[v.name, list(shape), v.type.dtype] for v, shape in
                                            zip(graph.inputs, shapes)]})
    if result["passed"] is False:
        arrays = cycled(arrays, [tuple(v.type.shape) for v in graph.inputs])
        result["first_divergence"] = localize(target, graph, model, emitted["var_of"], arrays, atol, rtol,
                                              emitted["code"])
    return Verification.from_dict(result)  # report["verification"] (Note [typed sections])


def _compile_alone(run, graph, shapes) -> None:
    """Compile ``run`` (the converted model's runner) for inputs of ``shapes`` before anything else runs, then give
    the compiler's memory back (Note [one compile at a time]); a runner that cannot compile ahead compiles at its
    first run, and a compile that fails is left for that run to report."""
    compile_for = getattr(run, "compile_for", None)
    if compile_for is None:
        return
    try:
        compile_for([(shape, input_dtype(v)) for shape, v in zip(shapes, graph.inputs)])
    except Exception:  # noqa: BLE001 - the run reports it, as any failure at this size
        pass
    release(collect=False)

# Note [one compile at a time]: each size check is a run of the source (torch on the CPU) and one XLA compile and
# run of the converted model, and an XLA compile of a whole forward needs several times its executable while it
# works (swin_t: ~190 MB, the executable 69 MB; resnet50: ~50 and ~10 MB, on top of ~20 MB of the compiler's
# code mapped once). Until 2026-12-06 the compiles of every size, the example's included (for convert's verify
# stage), started at once on a background thread while the source ran at every size: on
# two cores a second faster, but the source's activations, one compile's working memory and the other's
# executable stacked, the peak of resnet50's and swin_t's conversions. Now each size is compiled first, alone,
# and the heap trimmed; the source runs at that size; the check runs on that compile; and JAX's caches are
# cleared before the next size (its executable is run no more: ``release(executables=True)``). The example's size
# is compiled last, the same way, for convert's verify stage, which runs it next: compiled there instead, it
# stacked on the gradient program's compile, which starts in the background before it (Note [gradient compile];
# the sample's verify stage 94 -> 143 MB). The checks are the same as before: the same seeded inputs, the same
# source reference and tolerances, one compile per shape.


def _check_size(graph, run, arrays, expected, atol, rtol) -> dict:
    """{"passed", "problem", "max_abs", "max_rel"} of ``run`` (the converted model's runner) on ``arrays`` against
    ``expected`` (``sized_batch``'s: the source's outputs, or why it has none)."""
    try:
        result = {"passed": False, "outputs": [], "problem": expected} if isinstance(expected, str) else \
            compare(expected, run(arrays), [v.name for v in graph.outputs], atol, rtol,
                    random=random_outputs(graph), signs=sign_free_outputs(graph), narrow=narrow_outputs(graph))
    except Exception as exc:  # noqa: BLE001 - a model that fails at this size is the finding
        result = {"passed": False, "outputs": [], "problem": one_line(exc)}
    return {"passed": result["passed"], "problem": result.get("problem"),
            "max_abs": max((r.get("max_abs", 0.0) or 0.0 for r in result["outputs"]), default=None),
            "max_rel": max((r.get("max_rel", 0.0) or 0.0 for r in result["outputs"]), default=None)}
