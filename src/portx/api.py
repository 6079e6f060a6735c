"""The entry points: convert, verify, inspect. The CLI calls only this.

Each takes the option groups of ``options.py`` (the same trust options everywhere: Note [one trust]);
``convert`` drives a ``session.Conversion`` stage by stage.

Example:
    >>> result = convert(module, "keras-jax", example_inputs=(x,), output=Output(out="out/"))
    >>> result.model, result.report["verification"]["passed"], result.files
"""
from __future__ import annotations

import functools
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

from . import ops  # noqa: E402,F401  (registers every op)
from .errors import BadInput  # noqa: E402
from .frontends import KERAS_SUFFIXES, is_keras_source, load  # noqa: E402
from .logs import quiet_unless_debug  # noqa: E402
from .options import DEFAULT_ATOL, DEFAULT_RTOL, Checks, Output, Shapes, Trust, check_tolerances, grouped  # noqa: E402
from .passes.layout import IO_LAYOUTS  # noqa: E402
from .passes.legalize import status_of  # noqa: E402
from .oplist import op_table  # noqa: E402
from .session.conversion import Conversion, ConversionResult  # noqa: E402
from .reporting import explorer  # noqa: E402  (Model Explorer: `portx explore` reaches it through api)
from .session.dims import at_batch, lower_for, requested_dims, with_recorded  # noqa: E402
from .session.sections import inventory  # noqa: E402
from .session.report import InspectReport, OpRow  # noqa: E402
from .targets import TARGETS, find_target  # noqa: E402
from .targets.codegen import missing_emit_rules  # noqa: E402
from .verification.recheck import verify_converted  # noqa: E402

__all__ = ["convert", "load", "inspect", "op_table", "ConversionResult", "TARGETS", "KERAS_SUFFIXES", "is_keras_source",
           "missing_emit_rules", "verify", "DEFAULT_ATOL", "DEFAULT_RTOL", "check_tolerances",
           "Trust", "Shapes", "Checks", "Output", "explorer"]


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def inspect(source, *, example_inputs=None, target=None, trust=Trust(), shapes=Shapes(), **legacy) -> InspectReport:
    """Op inventory of a source without converting: an ``InspectReport`` (``ops``, ``nodes``, ``weight_bytes``,
    ``inputs``, ``outputs``; ``to_dict()`` is ``portx inspect --json``'s object).

    With ``target="tpu"`` (a target name or alias) each op row also carries its status, reason and source
    from that target's op table. ``trust``, ``shapes``: as ``convert``'s (``shapes.inputs`` only).
    Example: ``inspect("model.pt2").ops["conv"].count``.
    """
    groups = grouped("inspect", legacy, trust=trust, shapes=shapes)
    table = find_target(target, "--target").table if target else None
    graph = load(source, example_inputs=example_inputs, inputs=groups["shapes"].inputs,
                 **groups["trust"].load_kwargs()).lower()
    ops = {op: OpRow(**row, **(status_of(table, op) if table else {})) for op, row in inventory(graph).items()}
    return InspectReport(ops=ops, nodes=len(graph.nodes), weight_bytes=graph.weight_bytes(),
                         inputs=[[v.name, list(v.type.shape), v.type.dtype] for v in graph.inputs],
                         outputs=[[v.name, list(v.type.shape), v.type.dtype] for v in graph.outputs])


def _require_jax_backend():
    import keras

    if keras.config.backend() != "jax":
        raise BadInput(f"Keras was imported with backend {keras.config.backend()!r}; portx writes and verifies "
                       "Keras-JAX models", hint="set KERAS_BACKEND=jax before importing keras")


def _checked_target(to, shapes, output):
    """The target called ``to``, once every option is known to be valid (BadInput otherwise); the
    tolerances were checked when their ``Checks`` was made."""
    if shapes.io_layout not in IO_LAYOUTS:
        raise BadInput(f"--io-layout {shapes.io_layout}: unknown layout", hint=f"choose one of {', '.join(IO_LAYOUTS)}")
    target = find_target(to)
    if output.export_tpu and not target.tpu_artifact:
        exporting = " or ".join(t.name for t in TARGETS.values() if t.tpu_artifact)
        raise BadInput(f"--export-tpu writes a deployable TPU artifact, which --to {target.name} does not have",
                       hint=f"drop --export-tpu, or convert with --to {exporting}")
    return target


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def convert(source, to="keras-jax", *, example_inputs=None, trust=Trust(), shapes=Shapes(), checks=Checks(),
            output=Output(), progress=None, **legacy) -> ConversionResult:
    """Convert ``source`` (a path or a live nn.Module) for target ``to`` into folder ``output.out``.

    The option groups (portx.options): ``trust`` (what the source may run while read), ``shapes`` (input specs,
    free dims, ``--io-layout``), ``checks`` (verification, tolerances, gradients, TPU and mesh proofs) and
    ``output`` (the folder, the model's form, extra files). The flat keywords of earlier versions
    (``out=``, ``atol=``, ``unsafe_keras=`` ...) still work, with a DeprecationWarning.

    The emitted model trains like the source: batch norms stay layers (with their momentum and
    statistics) and dropouts stay. ``output.fold_bn`` folds batch norms into the convolutions before them;
    ``output.inference`` also drops dropouts. ``report["training"]`` lists what was folded or dropped.
    ``checks.grad`` compares the gradients of a loss with the source's (``verification/grads.py``); None: when
    verifying a model of at most 64 MB of weights (a difference is a warning in the report).

    The batch (axis 0 of every input) stays free: the emitted model runs at any batch size, and is verified
    at the example's, 1 and 8 (``report["dynamic"]``). ``shapes.static_batch=N`` pins it to N instead;
    ``shapes.dynamic=["x:1"]`` frees more axes (torch.export Dims and Keras None dims are free already). A dim the
    model fixes is pinned with a warning naming the op (Note [free dims] in ir/types.py; session/dims/).

    ``shapes.io_layout``: "source", "channels-last" or "channels-first" (report["layout"] says which).
    ``output.explore`` also writes OUT/explorer/: Model Explorer graph JSON and overlays (reporting/explorer.py).
    A Hugging Face folder keeps its config's dtype unless ``output.dtype``; ``output.max_shard_size``: the weights
    files' largest shard ("2GB" by default, "500MB", or GB). ``checks.mesh`` ("batch=2,model=4" or a dict): also
    run the model split over that mesh on CPU devices and lower it for TPU (report["sharding"]); None skips it.
    ``progress``: a ``progress.Reporter`` or a callable ``progress(name, seconds)``; ``output.profile`` adds
    report["profile"] (RSS per stage). ``debug=True`` keeps the frameworks' loggers. OUT also gets report.html.
    Raises BadInput (2), UnsupportedOps (3), NotTpuLegal (4, with ``checks.strict_tpu``) or
    VerificationFailed (1; the files are still written and ``exc.result`` holds the result).
    Example: ``convert("model.pt2", "keras-jax", output=Output(out="out/"))``.
    """
    groups = grouped("convert", legacy, trust=trust, shapes=shapes, checks=checks, output=output)
    _require_jax_backend()
    target = _checked_target(to, groups["shapes"], groups["output"])
    conversion = Conversion(source, target, example_inputs=example_inputs, **groups)
    with conversion.staged(progress):
        conversion.load()
        conversion.lower()
        conversion.passes()
        conversion.free_dims()
        conversion.emit()
        conversion.verify()
        conversion.trace()
        conversion.gradients()
        conversion.tpu_proof()
        conversion.write()
    return conversion.result()


@quiet_unless_debug  # logs.py: the frameworks' loggers are silent unless debug=True
def verify(source, out, *, trust=Trust(), shapes=Shapes(), checks=Checks(), check=True, progress=None,
           **legacy) -> dict:
    """Re-check a converted folder ``out`` against ``source`` on seeded batches (seeds seed..seed+samples-1).

    Only out/model.py and its weights are run; of report.json only the batch convert pinned (``--static-batch``),
    the io layout and the ``--dynamic`` axes are read (Note [what OUT records] in session/dims/recorded.py).
    Returns the report dict (a ``session.report.VerifyReport``'s JSON form: ``schema_version``, ``passed``,
    per-output ``outputs``, per-seed ``samples``, ``first_divergence``, ``trace`` rows).
    ``checks``: ``samples``, ``seed``, ``atol``, ``rtol``, ``trace``, ``grad`` (also compare gradients,
    ``report["gradients"]``; a difference fails the check); ``trust`` and ``shapes.inputs`` as ``convert``'s.
    ``shapes.dynamic``: the ``--dynamic`` axes OUT was converted with (read from OUT when not given; others are
    BadInput where OUT records some); they are free here too, and once the outputs
    agree each is checked at the sizes convert checks it at (``report["dynamic"]``: its ``verified`` sizes; a size
    that differs fails the check). A spec OUT or the source does not keep free is BadInput. ``shapes.static_batch``:
    as convert's, needed only where OUT has no report.json; one that differs from OUT's is BadInput.
    ``progress``: as ``convert``'s (stages load, load-out, pair, samples with per-batch counts, trace, grad).
    Raises BadInput (2), or VerificationFailed (1) when ``check`` and the outputs differ.
    Example: ``verify("model.pt2", "out/", checks=Checks(samples=3))["outputs"][0]["max_abs"]``.
    """
    groups = grouped("verify", legacy, trust=trust, shapes=shapes, checks=checks)
    checks, shapes = groups["checks"], with_recorded(out, groups["shapes"])  # Note [what OUT records]
    dynamic, batch = shapes.dynamic, shapes.static_batch
    report = verify_converted(source, out, lower=functools.partial(lower_for, dynamic=dynamic, static_batch=batch),
                              samples=checks.samples, seed=checks.seed, atol=checks.atol, rtol=checks.rtol,
                              inputs=shapes.inputs, trust=groups["trust"], trace=checks.trace, grad=bool(checks.grad),
                              check=check, progress=progress,
                              sized=functools.partial(requested_dims, dynamic=dynamic) if dynamic else None,
                              pin=functools.partial(at_batch, n=batch) if batch else None, io_layout=shapes.io_layout)
    return report.to_dict()  # the typed VerifyReport (session/report.py) as JSON, with schema_version
