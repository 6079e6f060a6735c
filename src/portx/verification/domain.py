"""Verification inputs in the op's domain: seeded random inputs the source accepts, and the user's own example.

``convert`` verifies on seeded random inputs (``make_inputs``: normal floats). Some sources reject them
(``torch.linalg.cholesky`` of a non-SPD matrix, a ``torch._check`` on the sign) or turn them into NaN
(``torch.log``, ``torch.sqrt(x - 1)``) where the example inputs give finite numbers; random inputs that reach
an op with a declared ``domain`` (OpDef: igamma's ``a > 0``) are drawn above its bound (``in_domain``). Such a batch
is replaced, in order, by the example inputs perturbed by 1 % and by 0.1 % of their magnitude, then by the
example itself; without example inputs, by the random batch's absolute values. A batch on which an output that
is an op's error status (``OpDef.status_outputs``: ``cholesky_ex``'s info) is nonzero where the example's is zero
is outside the source's domain too (what the source computes there besides the status is undefined). Every
replacement is one line in ``notes`` (``report["verification"]["notes"]``). The example inputs, when the graph takes them,
are always checked too (``verification_batches`` lists them second), unless every output is NaN there.

Example:
    >>> batches, notes = verification_batches(src, graph, seed=0)
    >>> [label for label, _, _ in batches]
    ['random', 'example']
"""
from __future__ import annotations

import numpy as np

from ..errors import first_line
from ..ops.elementwise import CAST
from ..passes.layout import graph_arrays, source_arrays
from .compare import compare, make_inputs, narrow_outputs, random_note, random_outputs, sign_free_outputs

__all__ = ["RowsMix", "cycled", "example_arrays", "expected_outputs", "example_fraction", "in_domain", "sized_batch",
           "status_outputs", "verification_batches", "verify_in_domain"]


def expected_outputs(src, graph, arrays) -> list:
    """The source's outputs on ``arrays`` (given in the graph's I/O layout), in the graph's layout."""
    # --io-layout may have transposed inputs/outputs: the source sees and gives its own layout
    return graph_arrays(graph, src.run(*source_arrays(graph, arrays)))


def example_arrays(src, graph) -> list | None:
    """The source's example inputs as NumPy arrays in the graph's input layout and dtypes, or None when the
    source has none or the graph takes other shapes (``--static-batch`` at another batch)."""
    examples = src.examples()  # frontends/base.py
    if not examples or len(examples) != len(graph.inputs):
        return None
    arrays = []
    perms = graph.meta.get("io_perms", {}).get("inputs", (None,) * len(examples))
    for example, value, perm in zip(examples, graph.inputs, perms):
        if hasattr(example, "detach"):
            example = example.detach().float() if str(example.dtype) == "torch.bfloat16" else example.detach()
        array = np.asarray(example)
        array = array if perm is None else np.transpose(array, perm)
        if tuple(array.shape) != tuple(value.type.shape):
            return None
        arrays.append(np.require(array.astype("float32" if value.type.dtype == "bfloat16" else value.type.dtype),
                                 requirements="C"))
    return arrays


def cycled(arrays, shapes) -> list:
    """``arrays`` cut or repeated along each axis to ``shapes`` (rows cycle): a batch of 2 traced from an example
    of 1 (the same row twice) back to its 1, or a batch of 1 to the graph's 2."""
    out = []
    for a, shape in zip(arrays, shapes):
        for axis, n in enumerate(shape):
            if a.shape[axis] != n:
                a = np.take(a, np.arange(n) % a.shape[axis], axis=axis)
        out.append(a)
    return out


def _nonfinite(outputs) -> int:
    return sum(int(np.size(o) - np.isfinite(o).sum()) for o in outputs
               if np.asarray(o).dtype.kind in "fc")


def _fraction(outputs) -> float:
    """The fraction of NaN/Inf elements among ``outputs``' floats."""
    total = sum(int(np.size(o)) for o in outputs if np.asarray(o).dtype.kind in "fc")
    return _nonfinite(outputs) / total if total else 0.0


class RowsMix(Exception):
    """The source's outputs on row chunks cannot make its output at a larger batch: its rows are not independent
    (verification/chunks.py)."""


def _outputs(src, graph, arrays, run=None):
    """(expected outputs, problem): problem is '' or why the source cannot verify on ``arrays``; ``run``: how the
    source's outputs are computed (``expected_outputs``, or ``chunked_outputs`` for a batch; RowsMix passes)."""
    try:
        return (run or expected_outputs)(src, graph, arrays), ""
    except RowsMix:
        raise
    except Exception as exc:  # noqa: BLE001 - a source rejecting an input outside its domain is the finding
        return None, f"the source raises on them ({type(exc).__name__}: {first_line(exc, 120)})"


def status_outputs(graph) -> list:
    """Indices of the graph outputs that are an op's error status (``OpDef.status_outputs``: nonzero = outside
    the op's domain), also where a pass wrote the op as others (Note [status outputs] in passes/legalize/driver.py)."""
    flags = {node.outputs[i].name for node in graph.nodes for i in node.op.status_outputs if i < len(node.outputs)}
    flags |= set(graph.meta.get("status_values", ()))
    return [i for i, value in enumerate(graph.outputs) if value.name in flags]


def _status_problem(graph, expected, example_out) -> str:
    """Why ``expected`` (the source's outputs on a batch) is outside the domain by an error status, or ''."""
    raised = [graph.outputs[i].name for i in status_outputs(graph) if np.any(np.asarray(expected[i]) != 0)
              and (example_out is None or not np.any(np.asarray(example_out[i]) != 0))]
    return f"the source reports an error status on them ({', '.join(raised)} nonzero)" if raised else ""


def _all_nan(outputs) -> bool:
    floats = [np.asarray(o) for o in outputs if np.asarray(o).dtype.kind in "fc"]
    return bool(floats) and all(o.size and np.isnan(o).all() for o in floats)


def in_domain(graph, arrays) -> list:
    """``arrays`` with each float input that reaches an op's declared ``domain`` (directly or through casts) moved
    above the bound, to ``bound + 0.1 + |x|``: igamma's ``a > 0``, zeta's ``s > 1`` (NaN below: a vacuous check)."""
    producers, bounds = graph.producers(), {}
    for node in graph.nodes:
        for name, value in zip(node.op.input_names, node.inputs):
            if name not in node.op.domain or value is None:
                continue
            while value in producers and producers[value].op is CAST:
                value = producers[value].inputs[0]
            bounds[value] = max(bounds.get(value, -np.inf), node.op.domain[name])
    return [(bounds[value] + 0.1 + np.abs(a)).astype(a.dtype) if value in bounds and a.dtype.kind == "f" else a
            for a, value in zip(arrays, graph.inputs)]


def _perturbed(example, graph, scale, seed) -> list:
    rng = np.random.default_rng(seed)
    return [a + (scale * (np.abs(a) + 1e-3) * rng.standard_normal(a.shape)).astype(a.dtype)
            if a.dtype.kind == "f" and value.type.dtype != "bfloat16" else a
            for a, value in zip(example, graph.inputs)]


def verification_batches(src, graph, seed, shapes=None) -> tuple:
    """([(label, arrays, expected outputs)], notes): the batch to verify on first, then the example inputs.
    ``shapes``: the input shapes to verify at, when not the graph's (the example's rows cycled to them).

    An empty list means no batch the source accepts was found (verification is skipped, with a note).
    """
    notes = []
    example = example_arrays(src, graph)
    example = example if example is None or shapes is None else cycled(example, shapes)
    example_out, example_problem = (None, "no example") if example is None else _outputs(src, graph, example)
    allowed = _nonfinite(example_out) if example_out is not None else None
    candidates = [("random", in_domain(graph, make_inputs(graph, seed, shapes=shapes)))]
    if example_out is not None:
        candidates += [(f"example perturbed by {s:g}", _perturbed(example, graph, s, seed)) for s in (1e-2, 1e-3)]
        candidates.append(("example", example))
    else:
        candidates.append(("random, absolute values", [np.abs(a) if a.dtype.kind == "f" else a
                                                       for a in candidates[0][1]]))
    batches = []
    for label, arrays in candidates:  # the first batch the source runs on as it runs on the example
        expected, problem = (example_out, example_problem) if label == "example" else _outputs(src, graph, arrays)
        if not problem and allowed is not None and _nonfinite(expected) > allowed:
            problem = (f"the source gives {_nonfinite(expected)} NaN/Inf values on them where the example inputs "
                       f"give {allowed}")
        if not problem and label != "example":
            problem = _status_problem(graph, expected, example_out)
        if not problem:
            batches.append((label, arrays, expected))
            break
        notes.append(f"verification inputs ({label}) replaced: {problem}")
    if not batches:
        notes.append("verification skipped: the source accepts none of the verification inputs")
    elif batches[0][0] != "example" and example_out is not None and _all_nan(example_out):
        notes.append("the example inputs are not compared: every output is NaN there (outside the op's domain)")
    elif batches[0][0] != "example" and example_out is not None:
        batches.append(("example", example, example_out))
    return batches, notes


def verify_in_domain(src, graph, model, target, seed, atol, rtol, shapes=None) -> tuple:
    """(result, arrays): ``compare`` of the source and the loaded ``model`` on each of ``verification_batches``
    (at ``shapes``); ``result["batches"]`` says which passed, ``result["notes"]`` why inputs were replaced, and
    ``arrays`` is the first batch that differs (else the first batch; None when verification was skipped)."""

    batches, notes = verification_batches(src, graph, seed, shapes)
    if not batches:
        return {"passed": None, "skipped": True, "outputs": [], "notes": notes}, None
    names, random = [v.name for v in graph.outputs], random_outputs(graph)
    notes += [random_note(name, node) for name, (node, _) in random.items()]
    result, arrays = None, None
    for label, batch, expected in batches:
        row = compare(expected, target.run(model, batch), names, atol, rtol, random=random,
                      signs=sign_free_outputs(graph), narrow=narrow_outputs(graph))
        if result is None:
            result, arrays = {**row, "on": label, "batches": []}, batch
        result["batches"].append({"on": label, "passed": row["passed"]})
        if not row["passed"] and result["passed"]:
            result.update({**row, "on": label})
            arrays = batch
    result["notes"] = notes
    return result, arrays


def example_fraction(src, graph) -> float | None:
    """The share of NaN/Inf among the source's outputs on its own example (None without an example, or where
    the source fails on it): ``sized_batch``'s bar for inputs at other sizes, computed once per size check."""
    example = example_arrays(src, graph)
    example_out = None if example is None else _outputs(src, graph, example)[0]
    return None if example_out is None else _fraction(example_out)


def sized_batch(src, graph, seed, shapes, allowed, run=None) -> tuple:
    """(arrays, expected outputs) at input ``shapes`` (a free dim at another size, verification/dynamic.py):
    seeded random inputs, or where the source rejects them or gives more NaN/Inf than on the example, floats
    drawn from the example's own values (1 % perturbed), then the random ones' absolute values. ``expected``
    is a str saying why when the source runs on none of them. ``allowed``: ``example_fraction(src, graph)``;
    ``run``: as ``_outputs``'s."""
    example = example_arrays(src, graph)
    rng = np.random.default_rng(seed)
    random = in_domain(graph, make_inputs(graph, seed, shapes=shapes))
    candidates = [random]
    if allowed is not None:
        candidates.append([(rng.choice(e.ravel(), size=shape) * (1 + 1e-2 * rng.standard_normal(shape))).astype(e.dtype)
                           if e.dtype.kind == "f" and e.size else r for e, r, shape in zip(example, random, shapes)])
    candidates.append([np.abs(a) if a.dtype.kind == "f" else a for a in random])
    problem = ""
    for arrays in candidates:
        expected, problem = _outputs(src, graph, arrays, run)
        if not problem and allowed is not None and _fraction(expected) > allowed:
            problem = f"the source gives NaN/Inf on {_fraction(expected):.0%} of its outputs there"
        if not problem:
            return arrays, expected
    return candidates[0], problem.replace("the source raises on them", "the source does not run there")
