"""PyTorch's OpInfo database (``op_db``) run through portx to both targets (shared by the test and
benchmarks/op_coverage.py).

Each entry of ``torch.testing._internal.common_methods_invocations.op_db`` that takes float32 on CPU gives one
program: its first float32 CPU sample with no zero-size tensor, in or out (torch seeded first; all its samples
are searched, since ``svd``, ``searchsorted`` and ``unfold`` open with dozens of empty ones; only an entry with
no non-empty sample keeps its first, which portx refuses as a zero-size example input, exit 2), wrapped in a
module whose forward inputs are the sample's float tensors; integer and bool tensors are buffers, everything
else a constant.
An entry ``torch.export`` refuses is skipped (``entry_program`` says why) and counted nowhere.

An entry's outcome is one of ``OUTCOMES``: ``pass`` (converts with verification on, and the emitted model gives
eager's outputs on the OpInfo sample itself, at portx's default tolerances), ``unsupported`` (exit 3),
``not-tpu-legal`` (exit 4), ``wrong`` (VerificationFailed, or a mismatch on the sample), ``crash`` (anything
else). An entry whose eager outputs differ between two runs, or whose name says it is random or uninitialized
(``bernoulli``, ``empty_like``), is nondeterministic: only its output shapes and dtypes are checked.
``XFAIL`` (``op_db_xfail.toml``) lists the entries that do not pass.

Example:
    >>> sorted(entries())[:2]                           # entry ids: name, or name.variant
    >>> run_entry("abs", "keras-jax").outcome           # "pass", or the outcome class and ``.problem``
"""
import functools
import re
import tempfile
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from portx.errors import NotTpuLegal, PortxError, UnsupportedOps, VerificationFailed, first_line
from portx.verification.compare import DEFAULT_ATOL, DEFAULT_RTOL, align_signs, compare_arrays, sign_free_outputs
from tests.conformance.onnx_cases import TARGETS

__all__ = ["OUTCOMES", "QUICK", "TARGETS", "XFAIL", "XFAIL_FILE", "Program", "Outcome", "entries", "entry_id",
           "entry_program", "run_entry", "run_torchax", "xfail_reason"]

OUTCOMES = ("pass", "unsupported", "not-tpu-legal", "wrong", "crash")
XFAIL_FILE = Path(__file__).with_name("op_db_xfail.toml")
#: entry id -> reason (both targets), or {target: reason}
XFAIL = tomllib.loads(XFAIL_FILE.read_text(encoding="utf-8")).get("xfail", {}) if XFAIL_FILE.exists() else {}
#: words of entry names that draw random numbers or read uninitialized memory: OpInfo seeds its random entries
#: (``wrapper_set_seed``), so two eager runs agree and the two-run check alone misses them
_RANDOM_WORDS = frozenset({"rand", "randn", "randint", "normal", "bernoulli", "multinomial", "dropout", "uniform",
                           "empty", "poisson", "exponential", "geometric", "cauchy", "rrelu", "lowrank"})
_SEED = 0
#: the CI subset: a few entries per family (elementwise, reduce, shape, index, linalg, nn, fft, sort, special,
#: creation, random), chosen to exercise odd forms (0-d outputs, int buffers, several outputs, constant outputs)
QUICK = ("abs", "add", "div.floor_rounding", "clamp", "where", "isnan", "log1p", "atan2", "erfinv",
         "sum", "amax", "argmax", "std", "logsumexp", "cumsum", "cat", "roll", "unbind", "__getitem__", "gather",
         "index_select", "scatter_add", "matmul", "addmm", "einsum", "linalg.inv", "linalg.vector_norm",
         "nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.avg_pool2d",
         "nn.functional.max_pool2d", "nn.functional.interpolate.bilinear", "nn.functional.layer_norm",
         "nn.functional.scaled_dot_product_attention", "nn.functional.embedding", "nn.functional.cross_entropy",
         "nn.functional.pad.reflect", "softmax", "fft.rfft", "sort", "topk", "arange", "zeros_like", "randn_like",
         "nn.functional.dropout")


def entry_id(info) -> str:
    """``name`` + ``.variant_test_name`` when the entry has a variant: ``nn.functional.conv2d``, ``max.reduction``."""
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


@functools.lru_cache(maxsize=1)
def entries() -> dict:
    """{entry id: OpInfo} for every op_db entry that takes float32 on CPU (first id wins on a repeat)."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    found = {}
    for info in op_db:
        if torch.float32 in info.supported_dtypes("cpu"):
            found.setdefault(entry_id(info), info)
    return found


@dataclass
class Program:
    """One entry's sample as a module: ``module(*inputs)`` gives ``expected`` (flat tensors, eager)."""

    module: object
    inputs: tuple
    expected: list
    deterministic: bool


@dataclass
class Outcome:
    """One entry on one target: the outcome class, the problem (one line), refused ops and seconds taken."""

    entry: str
    target: str
    outcome: str
    problem: str = ""
    ops: list = field(default_factory=list)
    seconds: float = 0.0


def _sample_module(info, sample):
    """(module, float inputs) for ``sample``: float tensors are inputs, int/bool tensors buffers, the rest constants."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    floats = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor) and leaf.is_floating_point()]
    held = {i: leaf for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor) and i not in floats}
    op = info.op

    class Sample(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for i, tensor in held.items():
                self.register_buffer(f"b{i}", tensor.detach().clone())

        def forward(self, *xs):
            flat = list(leaves)
            for i, x in zip(floats, xs):
                flat[i] = x
            for i in held:
                flat[i] = getattr(self, f"b{i}")
            first, args, kwargs = pytree.tree_unflatten(flat, spec)
            out = [t for t in pytree.tree_leaves(op(first, *args, **kwargs)) if isinstance(t, torch.Tensor)]
            return out[0] if len(out) == 1 else tuple(out)

    return Sample().eval(), tuple(leaves[i].detach().clone() for i in floats)


def _copies(inputs) -> tuple:
    """Fresh copies of a program's inputs for each run (in-place entries such as ``zero_`` write to them)."""
    return tuple(x.clone() for x in inputs)


def _flat(out) -> list:
    return [t.detach() for t in (out if isinstance(out, tuple) else (out,))]


def _same(a, b) -> bool:
    """Whether two eager runs gave the same tensors (NaN equal to NaN)."""
    import torch

    a, b = [_widened(x) for x in a], [_widened(y) for y in b]
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and (torch.equal(x, y) or (
        (x.is_floating_point() or x.is_complex()) and torch.allclose(x, y, rtol=0, atol=0, equal_nan=True)))
        for x, y in zip(a, b))


def _widened(t):
    """``t`` dense, with the dtypes NumPy and CPU comparisons lack (bfloat16, complex32) widened."""
    import torch

    t = t if t.layout == torch.strided else t.to_dense()
    return t.float() if t.dtype == torch.bfloat16 else t.to(torch.complex64) if t.dtype == torch.complex32 else t


def _first_sample(info):
    """(module, inputs, eager outputs) of the entry's first sample whose tensors, in and out, are all non-empty (a
    zero-size example converts nothing: portx refuses it); else of its first sample; None without samples. Inputs
    are checked before the sample is run, so the empty samples some entries open with cost nothing. The sample
    generator is closed here, not inside a later ``torch.export`` trace."""
    import torch
    from torch.utils import _pytree as pytree

    # the entry's own sample generator (``sample_inputs`` wraps it in an iterator that cannot close it)
    samples, first = iter(info.sample_inputs_func(info, "cpu", torch.float32, False)), None
    try:
        for sample in samples:
            leaves = pytree.tree_leaves((sample.input, tuple(sample.args), dict(sample.kwargs)))
            empty = not all(t.numel() for t in leaves if isinstance(t, torch.Tensor))
            if empty and first is not None:
                continue
            module, inputs = _sample_module(info, sample)
            with torch.no_grad():
                picked = (module, inputs, _flat(module(*_copies(inputs))))
            first = first or picked
            if not empty and all(t.numel() for t in picked[2]):
                return picked
    finally:
        if hasattr(samples, "close"):
            samples.close()
    return first


@functools.lru_cache(maxsize=1)
def _torchax_rng():
    """Note [torchax rng]: importing torchax registers its device module as torch's accelerator, whose
    ``set_rng_state(new_state, device)`` takes two arguments where ``torch.testing``'s ``freeze_rng_state`` (around
    every seeded random entry: bernoulli, dropout, ...) passes one. portx imports torchax for the torch-xla TPU proof,
    so whether a random entry ran would depend on test order; torchax is imported here once, its no-op given a
    default ``device``."""
    try:
        import torchax.device_module
    except ImportError:
        return
    torchax.device_module.set_rng_state = lambda new_state, device=None: None


@functools.lru_cache(maxsize=None)
def entry_program(name):
    """``Program`` for entry ``name``, or why it is skipped (a str: no sample, no tensor output, not exportable)."""
    import torch

    info = entries()[name]
    _torchax_rng()
    torch.manual_seed(_SEED)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            picked = _first_sample(info)
            if picked is None:
                return "no float32 CPU sample"
            module, inputs, first = picked
            with torch.no_grad():
                second = _flat(module(*_copies(inputs)))
            if not first:
                return "no tensor output"
            torch.export.export(module, _copies(inputs))
    except Exception as exc:  # noqa: BLE001 - the sample, eager or torch.export refusing is why it is skipped
        return f"not exportable: {type(exc).__name__}: {first_line(exc, 160)}"
    deterministic = _same(first, second) and not _RANDOM_WORDS & set(name.replace(".", "_").split("_"))
    return Program(module, inputs, first, deterministic)


def _numpy(t):
    return _widened(t).resolve_conj().resolve_neg().numpy()


def _mismatch(expected, got, deterministic, signs=None) -> str:
    """'' when ``got`` (arrays) gives ``expected`` (eager tensors), else the first problem. ``signs`` ({output index:
    axis}): outputs defined up to sign (eigenvectors, ``OpDef.sign_free``), compared sign-aligned."""
    import torch

    if len(got) != len(expected):
        return f"{len(got)} outputs, eager gives {len(expected)}"
    for i, (want, have) in enumerate(zip(map(_numpy, expected), map(np.asarray, got))):
        bf16 = expected[i].dtype == torch.bfloat16
        if bf16 != (have.dtype.name == "bfloat16"):
            return f"output {i}: dtype {have.dtype}, eager {expected[i].dtype}"
        have = have.astype(np.float32) if bf16 else have
        if want.shape != have.shape:
            return f"output {i}: shape {have.shape}, eager {want.shape}"
        if want.dtype.kind != have.dtype.kind:
            return f"output {i}: dtype {have.dtype}, eager {want.dtype}"
        if not deterministic:
            continue
        if want.dtype.kind == "c":
            want, have = np.stack([want.real, want.imag]), np.stack([have.real, have.imag])
        if want.dtype.kind in "fc" and np.isnan(want).all() and np.isnan(have).all():
            continue  # the sample itself is outside the op's domain: NaN on both sides is the answer
        have = have.astype(want.dtype)
        if i in (signs or {}):
            want, have = align_signs(want, have, signs[i])
        row = compare_arrays(want, have, DEFAULT_ATOL, DEFAULT_RTOL)
        if not row["passed"]:
            return f"output {i}: {row.get('problem') or 'max_abs %s' % row.get('max_abs')}"
    return ""


def _run(program, target, out):
    """(outcome, problem, refused ops) of converting ``program`` for ``target`` and running it on the sample."""
    from portx.api import convert
    from portx.targets import find_target

    try:
        try:  # default options, as a user converts (no static_batch): Note [free dims] decides what stays free
            result = convert(program.module, to=target, out=out, example_inputs=_copies(program.inputs), grad=False)
        except VerificationFailed as exc:
            if program.deterministic or exc.result is None:
                raise
            result = exc.result  # random outputs differ from the source's: the sample checks shapes and dtypes
        got = find_target(target).run(result.model, [_numpy(x) for x in program.inputs])
    except UnsupportedOps as exc:
        return "unsupported", first_line(exc, 300), sorted({op for op, _, _ in exc.items})
    except NotTpuLegal as exc:
        return "not-tpu-legal", first_line(exc, 300), []
    except VerificationFailed as exc:
        return "wrong", f"verification: {first_line(exc, 300)}", []
    except PortxError as exc:
        return ("not-tpu-legal" if exc.exit_code == 4 else "crash"), f"{type(exc).__name__}: {first_line(exc)}", []
    except Exception as exc:  # noqa: BLE001 - any other failure is this entry's crash
        return "crash", f"{type(exc).__name__}: {first_line(exc)}", []
    axes, outputs = ({}, []) if result.graph is None else (sign_free_outputs(result.graph), result.graph.outputs)
    signs = {i: axes[v.name] for i, v in enumerate(outputs) if v.name in axes}
    problem = _mismatch(program.expected, got, program.deterministic, signs)
    return ("wrong", f"on the OpInfo sample: {problem}", []) if problem else ("pass", "", [])


def run_entry(name, target) -> Outcome:
    """Convert entry ``name`` for ``target`` (verification on) and compare on the OpInfo sample; an ``Outcome``."""
    program = entry_program(name)
    if isinstance(program, str):
        return Outcome(name, target, "skipped", program)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="portx-opdb-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome, problem, ops = _run(program, target, Path(tmp) / "out")
        problem = re.sub(r"0x[0-9a-f]+", "0x..", problem.replace(str(Path(tmp) / "out"), "OUT"))  # stable text
    return Outcome(name, target, outcome, problem, ops, round(time.perf_counter() - start, 3))


def run_torchax(name) -> Outcome:
    """Entry ``name`` through torchax against eager, the benchmark's reference point: the same ``torch.export``
    program portx starts from, run by ``torchax.export.exported_program_to_jax``."""
    import jax.numpy as jnp
    import torch
    import torchax.export

    program = entry_program(name)
    if isinstance(program, str):
        return Outcome(name, "torchax", "skipped", program)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            states, fn = torchax.export.exported_program_to_jax(
                torch.export.export(program.module, _copies(program.inputs)))
            out = fn(states, tuple(jnp.asarray(_numpy(x)) for x in program.inputs))
        got = [np.asarray(a) for a in (out if isinstance(out, (tuple, list)) else [out])]
        problem = _mismatch(program.expected, got, program.deterministic)
        outcome = "wrong" if problem else "pass"
    except Exception as exc:  # noqa: BLE001 - an op torchax cannot run is its result
        outcome, problem = "crash", f"{type(exc).__name__}: {first_line(exc)}"
    return Outcome(name, "torchax", outcome, problem, [], round(time.perf_counter() - start, 3))


def xfail_reason(name, target) -> str | None:
    """The listed reason entry ``name`` fails on ``target``, or None."""
    entry = XFAIL.get(name)
    return entry.get(target) if isinstance(entry, dict) else entry
