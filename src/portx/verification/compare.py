"""Numerical comparison: seeded valid inputs, per-output errors, and the IR's NumPy reference run.

Tolerances (float32 outputs): pass when ``max_abs <= atol + rtol * scale``, where ``scale`` is the
largest magnitude of the source output (defaults atol=1e-5, rtol=1e-4). NaN and Inf must appear
at the same places on both sides; they never make a comparison pass by themselves.

Note [per-element check]: the scaled rule alone lets an error hide in the small entries of a
wide-range output (probabilities beside logits, boxes beside scores): they share the tolerance of
the largest entry. So every element must also satisfy
``|got - ref| <= atol + ELEMENT_FLOOR * scale + ELEMENT_RTOL * |ref|``: three times tighter than
the scaled rule near zero, and never tighter than it for entries above 7 % of the scale. The floor
is what correct conversions need: at full size, EfficientNetV2B0's top activations (scale 336) differ
from Keras by 1.5e-5 * scale on an entry of 1.35, and Keras against itself (eager vs jitted) by 0.7e-5
* scale. The small-size zoo and keras.applications use at most 0.005 of this allowance
(``benchmarks/element_errors.py``).

Note [low-precision tolerance]: an output that one side holds in a float narrower than float32 (float16,
bfloat16, float8) is compared at no less than ``LOW_PRECISION_ULPS`` units of that dtype's resolution (its ``eps``,
the spacing at 1.0) in atol, rtol and the per-element rtol: one rule for every op, derived from the dtype
(float16: 0.0039; bfloat16: 0.031; float8_e4m3fn: 0.5; float8_e5m2: 1.0), since a source that rounds each
intermediate to a few bits of mantissa and a target that keeps float32 differ by a few of those units. An output
computed through such a float and cast back (a ``torch.autocast`` region, a ``.half()`` block: ``narrow_outputs``)
is compared at the same tolerance: both sides round there, and their roundings differ (a fused ``addmm`` rounds
once, a matmul and an add twice).

Example:
    >>> inputs = make_inputs(graph, seed=0)
    >>> result = compare(source_outputs, emitted_outputs, names)
"""
from __future__ import annotations

import numpy as np

from ..ops.embedding import EMBEDDING
from ..ops.random import RANDOM_OPS, support_problem
from ..ops.shape.index import GATHER, INDEX_SELECT
from ..options import DEFAULT_ATOL, DEFAULT_RTOL  # defined with the option groups, re-exported here
from ..weights import release_pages

__all__ = ["DEFAULT_ATOL", "DEFAULT_RTOL", "ELEMENT_FLOOR", "ELEMENT_RTOL", "HALF_TOL", "LOW_PRECISION_ULPS",
           "low_precision_tol", "input_dtype", "make_inputs", "distinct", "compare_arrays",
           "compare", "run_reference", "index_limit", "element_check", "nonfinite_params", "random_outputs",
           "random_note", "compare_random", "sign_free_outputs", "narrow_outputs", "align_signs"]

#: per-element rule (Note [per-element check]): floor as a fraction of the output's scale, and rtol
ELEMENT_FLOOR = 3e-5
ELEMENT_RTOL = 1e-3
#: units of a narrow float's resolution an output held in it is compared at (Note [low-precision tolerance])
LOW_PRECISION_ULPS = 4
#: the least atol and rtol a float16 output is compared at: 4 units in the last place of float16 at 1.0
HALF_TOL = LOW_PRECISION_ULPS * float(np.finfo(np.float16).eps)


def low_precision_tol(*arrays) -> float:
    """``LOW_PRECISION_ULPS`` eps of the narrowest float among ``arrays`` narrower than float32 (float16,
    bfloat16, float8), or 0.0 when there is none (Note [low-precision tolerance])."""
    import ml_dtypes

    eps = [float(ml_dtypes.finfo(a.dtype).eps) for a in arrays
           if a.dtype.itemsize < 4 and (a.dtype.kind == "f" or a.dtype.name.startswith(("bfloat", "float8")))]
    return LOW_PRECISION_ULPS * max(eps) if eps else 0.0


def _indexing_ops():
    return (EMBEDDING, GATHER, INDEX_SELECT)


def index_limit(graph, value):
    """Exclusive upper bound for integer input ``value`` when it indexes a table (e.g. embedding)."""
    limits, indexing = [], _indexing_ops()
    for node in graph.nodes:
        for i, v in enumerate(node.inputs):
            if v is value and node.op in indexing:
                table = node.inputs[0]
                axis = node.attrs.get("axis", 0)
                if table is not value:
                    limits.append(table.type.shape[axis])
    return min(limits) if limits else 2


def input_dtype(value) -> str:
    """The NumPy dtype of ``make_inputs``' array for graph input ``value`` (bfloat16 inputs are drawn as float32)."""
    return "float32" if value.type.dtype == "bfloat16" else value.type.dtype


def make_inputs(graph, seed=0, shapes=None) -> list:
    """Seeded inputs valid by construction: normal floats; integer ids inside the tables they index.
    ``shapes``: one per input, in place of the graph's (a free dim at another size)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, value in enumerate(graph.inputs):
        shape, dtype = (value.type.shape if shapes is None else shapes[i]), value.type.dtype
        if dtype == "bool":
            arrays.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(0, index_limit(graph, value), shape).astype(dtype))
        else:
            arrays.append(distinct(rng.standard_normal(shape).astype(input_dtype(value))))
    return arrays


def distinct(array):
    """``array`` with repeated values moved to the next float up: large float32 draws repeat (2 pairs in
    8,000 normals), and where a model sorts or takes an argmax, ties have no one right answer
    (``torch.sort`` does not keep their order). Of each repeated value the first (lowest index) stays.
    float16 has too few values for this; it is left as it is."""
    if array.dtype not in (np.float32, np.float64) or array.size < 2:
        return array
    flat = array.reshape(-1).copy()
    for _ in range(4):
        repeated = _repeats(flat)
        if not repeated.size:
            break
        flat[repeated] = np.nextafter(flat[repeated], np.inf)
    return flat.reshape(array.shape)


def _repeats(flat):
    """Indices of the values in ``flat`` that an earlier index holds too (NaNs all alike, -0.0 equal to 0.0).

    float32: one sort of 64-bit keys, the float's order in the high bits and its index in the low ones (a batch
    of 8 images in 0.07 s; ``np.unique(return_index=True)`` took 0.5 s). float64 does not fit: ``np.unique``."""
    if flat.dtype != np.float32 or flat.size >= 1 << 31:
        _, first = np.unique(flat, return_index=True)
        repeated = np.ones(flat.size, bool)
        repeated[first] = False
        return np.flatnonzero(repeated)
    shift = max(int(flat.size - 1).bit_length(), 1)
    bits = np.where(np.isnan(flat), np.float32(np.nan), flat + np.float32(0)).view(np.int32).astype(np.int64)
    bits = np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)  # sign and magnitude -> the floats' order
    key = np.sort((bits << shift) | np.arange(flat.size))
    value = key >> shift
    return (key[1:] & ((1 << shift) - 1))[value[1:] == value[:-1]]


def element_check(e, g, finite, atol, scale, rtol=ELEMENT_RTOL) -> dict:
    """Per-element violations of Note [per-element check] (float64 arrays, ``finite`` mask); ``rtol`` is
    ELEMENT_RTOL, or more for a low-precision output (Note [low-precision tolerance])."""
    allowed = atol + ELEMENT_FLOOR * scale + rtol * np.abs(e)
    excess = np.where(finite, np.abs(e - g) / allowed, 0.0)
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.size else ()
    return {"violations": int(np.sum(excess > 1.0)), "worst_index": [int(i) for i in worst],
            "worst_ratio": float(excess[worst]) if excess.size else 0.0,
            "worst_got": float(g[worst]) if excess.size else None,
            "worst_ref": float(e[worst]) if excess.size else None,
            "floor": ELEMENT_FLOOR, "rtol": rtol}


def compare_arrays(expected, got, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, elements=False, narrow=0.0) -> dict:
    """Errors of ``got`` against ``expected``; ``passed`` is False on shape, NaN or Inf mismatch.

    ``elements=True`` adds the per-element rule (Note [per-element check]) as ``row["elements"]``;
    a violation fails the comparison. ``narrow``: the output was computed through a narrow float
    (``narrow_outputs``; Note [low-precision tolerance]).
    """
    expected, got = np.asarray(expected), np.asarray(got)
    narrow = max(narrow, low_precision_tol(expected, got))  # one side held in float16 / bfloat16
    atol, rtol = max(atol, narrow), max(rtol, narrow)
    row = {"shape": list(expected.shape), "atol": atol, "rtol": rtol}
    if expected.shape != got.shape:
        return {**row, "passed": False, "max_abs": None, "max_rel": None,
                "problem": f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"}
    if expected.dtype == bool or got.dtype == bool:
        mismatches = int(np.sum(expected.astype(bool) != got.astype(bool)))
        return {**row, "passed": mismatches == 0, "max_abs": float(mismatches > 0), "max_rel": float(mismatches > 0),
                "problem": f"{mismatches} boolean mismatches" if mismatches else ""}
    if np.iscomplexobj(expected) or np.iscomplexobj(got):  # complex: compare the (real, imag) pairs
        expected, got = (np.stack([np.real(a), np.imag(a)], axis=-1) for a in (expected, got))
    e, g = expected.astype(np.float64), got.astype(np.float64)
    problem = ""
    if np.isfinite(e).all() and np.isfinite(g).all():  # the common case, without masked copies
        finite, diff, magnitude = True, np.abs(e - g), np.abs(e)
    else:
        nan_e, nan_g = np.isnan(e), np.isnan(g)
        finite = np.isfinite(e) & np.isfinite(g)
        diff, magnitude = np.abs(e[finite] - g[finite]), np.abs(e[finite])
        if not np.array_equal(nan_e, nan_g):
            problem = f"NaN at {int(np.sum(nan_e != nan_g))} positions on one side only"
        elif not (np.array_equal(np.isposinf(e), np.isposinf(g)) and np.array_equal(np.isneginf(e), np.isneginf(g))):
            problem = "Inf at different positions"
        elif nan_e.all():
            problem = "all outputs are NaN: the comparison would be vacuous"
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(magnitude.max()) if diff.size else 0.0
    max_rel = max_abs / scale if scale > 0 else max_abs
    if not problem and max_abs > atol + rtol * scale:
        problem = f"max abs error {max_abs:.3g} > atol + rtol * scale = {atol + rtol * scale:.3g}"
    if elements:
        row["elements"] = element_check(e, g, finite, atol, scale, max(ELEMENT_RTOL, narrow))
        if row["elements"]["violations"] and not problem:
            worst = row["elements"]
            problem = (f"{worst['violations']} element(s) off beyond atol + {ELEMENT_FLOOR:g}*scale + "
                       f"{worst['rtol']:g}*|ref|; worst at {tuple(worst['worst_index'])}: {worst['worst_got']:.6g} "
                       f"vs {worst['worst_ref']:.6g}")
    return {**row, "passed": not problem, "max_abs": max_abs, "max_rel": max_rel, "problem": problem}


def compare(expected: list, got: list, names: list, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL, random=None,
            signs=None, narrow=None) -> dict:
    """Per-output comparison rows and an overall verdict. ``random`` ({output name: (random node, direct)},
    ``random_outputs``): those outputs are checked for shape, dtype and support only (``compare_random``).
    ``signs`` ({output name: axis}, ``sign_free_outputs``): those are compared sign-aligned (``align_signs``).
    ``narrow`` ({output name: tolerance}, ``narrow_outputs``): computed through a narrow float."""
    if len(expected) != len(got):
        return {"passed": False, "outputs": [], "problem": f"{len(got)} outputs, expected {len(expected)}"}
    random, signs, narrow = random or {}, signs or {}, narrow or {}
    pairs = [align_signs(e, g, signs[n]) if n in signs else (e, g) for n, e, g in zip(names, expected, got)]
    expected, got = [e for e, _ in pairs], [g for _, g in pairs]
    rows = [{"name": n, **(compare_random(e, g, *random[n]) if n in random else
                           compare_arrays(e, g, atol, rtol, elements=True, narrow=narrow.get(n, 0.0)))}
            for n, e, g in zip(names, expected, got)]
    return {"passed": all(r["passed"] for r in rows), "outputs": rows}


def random_outputs(graph) -> dict:
    """{output name: (the random node it depends on, whether it is that node's own output)} for every graph
    output computed from a random op (``ops.random.RANDOM_OPS``): its numbers cannot match the source's."""

    drawn = {}
    for node in graph.nodes:
        source = node if node.op in RANDOM_OPS else next((drawn[v] for v in node.inputs if v in drawn), None)
        if source is not None:
            drawn.update({v: source for v in node.outputs})
    return {v.name: (drawn[v], v in drawn[v].outputs) for v in graph.outputs if v in drawn}


def narrow_outputs(graph) -> dict:
    """{output name: tolerance} for every graph output computed through a float narrower than float32 and cast
    back (Note [low-precision tolerance]): ``LOW_PRECISION_ULPS`` eps of the narrowest such float on its path."""
    import ml_dtypes

    def eps(dtype):
        narrow = dtype in ("float16", "bfloat16") or dtype.startswith("float8")
        return LOW_PRECISION_ULPS * float(ml_dtypes.finfo(dtype).eps) if narrow else 0.0

    found = {}
    for node in graph.nodes:
        tol = max([found.get(v, 0.0) for v in node.inputs if v is not None] + [eps(v.type.dtype) for v in node.outputs])
        found.update((v, tol) for v in node.outputs if tol)
    return {v.name: found[v] for v in graph.outputs if v in found}


def sign_free_outputs(graph) -> dict:
    """{output name: axis} for every graph output that is an op's output defined only up to one sign per slice
    along ``axis`` (``OpDef.sign_free``: eigh's eigenvectors)."""
    axes = {node.outputs[index]: axis for node in graph.nodes for index, axis in node.op.sign_free.items()
            if index < len(node.outputs)}
    return {v.name: axes[v] for v in graph.outputs if v in axes}


def align_signs(expected, got, axis) -> tuple:
    """(expected, got) with each slice along ``axis`` (one eigenvector) multiplied by the sign of its entry where
    ``expected``'s slice is largest in magnitude: vectors equal up to sign become equal, and any other difference
    stays. Arrays of different shapes, or not floats, come back as they are."""
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape or e.dtype.kind != "f" or g.dtype.kind != "f" or not e.size:
        return e, g
    where = np.expand_dims(np.argmax(np.nan_to_num(np.abs(e.astype(np.float64))), axis=axis), axis)

    def signed(a):
        sign = np.sign(np.take_along_axis(a, where, axis=axis))
        return a * np.where(sign == 0, 1, sign).astype(a.dtype)
    return signed(e), signed(g)


def _random_label(node) -> str:
    return f"{node.op.name} ({node.attrs.get('distribution', node.op.name)}) at {node.scope or node.outputs[0].name}"


def random_note(name, node) -> str:
    """The report line for an output checked as random (``random_outputs``)."""
    return (f"output {name} depends on the random op {_random_label(node)}: compared for shape, dtype and range, "
            "not values")


def compare_random(expected, got, node, direct) -> dict:
    """A random output against the source's: same shape and dtype kind; the random node's own output lies in its
    distribution's support (``ops.random.support_problem``), a derived one has NaN only where the source does."""

    e, g = np.asarray(expected), np.asarray(got)
    problem = ""
    if e.shape != g.shape:
        problem = f"shape {tuple(g.shape)}, expected {tuple(e.shape)}"
    elif e.dtype.kind != g.dtype.kind and {e.dtype.kind, g.dtype.kind} != {"i", "u"}:
        problem = f"dtype {g.dtype}, expected {e.dtype}"
    elif direct:
        problem = support_problem(node, g)
    elif g.dtype.kind in "fc" and np.isnan(g).any() and not (e.dtype.kind in "fc" and np.isnan(e).any()):
        problem = "NaN where the source has none"
    return {"shape": list(e.shape), "passed": not problem, "max_abs": None, "max_rel": None, "problem": problem,
            "random": _random_label(node)}


def run_reference(graph, inputs) -> dict:
    """Evaluate the IR with each op's NumPy reference; returns {Value: array} for every value."""
    env = {v: np.asarray(a) for v, a in zip(graph.inputs, inputs)}
    env.update({graph.param_values[n]: a for n, a in graph.params.items()})
    for node in graph.nodes:
        args = [None if v is None else env[v] for v in node.inputs]
        while args and args[-1] is None and not node.op.variadic:
            args.pop()
        result = node.op.reference_rule(*args, **node.attrs)
        results = result if isinstance(result, (list, tuple)) else [result]
        for value, array in zip(node.outputs, results):
            env[value] = np.asarray(array)
    return env


def nonfinite_params(graph) -> list:
    """A warning per parameter holding NaN or Inf (verification then checks they propagate alike), with the
    scopes that read it; an all-``-inf``-or-finite constant read only as a mask (trait ``mask_reader``) is the
    masking idiom and gets none."""
    notes, users = [], graph.users()
    for name, array in graph.params.items():
        if array.dtype.kind == "f":
            nan, inf = int(np.isnan(array).sum()), int(np.isinf(array).sum())
            release_pages(array)  # a memory-mapped checkpoint's pages: read once here, not kept resident
            readers = users.get(graph.param_values.get(name), [])
            if not (nan or inf) or (not nan and not np.isposinf(array).any() and readers
                                    and all(n.op.has("mask_reader") for n in readers)):
                continue
            where = ", ".join(sorted({n.scope or n.outputs[0].name for n in readers})) or "nothing"
            notes.append(f"parameter {name}: {nan} NaN and {inf} Inf values (read by {where})")
    return notes
