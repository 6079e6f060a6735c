"""The ``portx`` command line. Argument handling and printing only; the work is in ``api``, the one portx module it
imports besides the leaf utilities (errors, options, outputs, progress, logs, the console text of reporting/text.py
and the typed report): tests/test_layering.py ``test_the_cli_goes_through_api``.

Exit codes: 0 converted and verified; 1 verification failed (artifacts written); 2 bad input or
usage; 3 unsupported ops; 4 not TPU-legal under --strict-tpu; 130/143 interrupted by SIGINT/SIGTERM
(nothing written, the previous OUT untouched); 70 a bug in portx.

Without --debug the frameworks' loggers and warnings are silenced, so a failure is one line on stderr.

Example:
    $ portx convert model.pt2 --to keras-jax -o out/
"""
from __future__ import annotations

import contextlib
import gc
import json
import signal
import sys
import traceback
import warnings
from dataclasses import replace
from pathlib import Path

import click

from .options import check_options, output_options, shape_options, trust_options
from ..reporting.text import print_conversion, print_verification

__all__ = ["main"]


def _fail(exc, debug):
    from ..errors import PortxError, first_line

    if debug:
        traceback.print_exc()
    if isinstance(exc, PortxError):
        click.echo(f"portx: {exc}", err=True)
        return exc.exit_code
    click.echo(f"portx: internal error ({type(exc).__name__}: {first_line(exc, 300)}). "
               "This is a bug: please report it with the output of --debug.", err=True)
    return 70


def _interrupted(signum):
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    click.echo(f"portx: interrupted by {name}; nothing was written and any previous output is untouched", err=True)
    return 128 + signum


@contextlib.contextmanager
def _quiet(debug):
    """Silence the frameworks' loggers and warnings (torch logs whole tracebacks) unless ``--debug``."""
    if debug:
        yield
        return
    from ..logs import quiet_loggers
    from ..errors import PortxWarning

    hook = sys.unraisablehook  # Note [quiet finalizers]
    sys.unraisablehook = lambda unraisable: None
    try:
        with quiet_loggers(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.simplefilter("always", PortxWarning)  # portx's own notes go into the report
            yield
        gc.collect()
    finally:
        sys.unraisablehook = hook


# Note [quiet finalizers]: after a failure portx has already reported in one line, framework objects may fail
# again as they are freed, and Python prints those "Exception ignored in ..." tracebacks to stderr: h5py's dataset
# handles of a shard that hit the file size limit (ulimit -f, a full disk) cannot flush on deallocation. Without
# --debug the command silences Python's unraisable-exception hook while it runs, collecting what the failure
# left before putting the hook back.


def _run(debug, fn):
    """Run ``fn`` with signals handled (outputs.handling_signals) and every failure turned into one line."""
    from ..errors import Interrupted
    from ..outputs import handling_signals

    with _quiet(debug), handling_signals() as seen:
        try:
            result = fn()
            if not seen:
                return result
            code = _interrupted(seen[0])  # a library swallowed the Interrupted exception
        except Interrupted as exc:
            code = _interrupted(exc.signum)
        except KeyboardInterrupt:
            code = _interrupted(seen[0] if seen else signal.SIGINT)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line and an exit code
            code = _interrupted(seen[0]) if seen else _fail(exc, debug)
    sys.exit(code)


@click.group()
@click.version_option(package_name="portx")
def main():
    """portx: convert PyTorch models to Keras 3 (JAX) and Keras models to PyTorch, verified and TPU-ready."""
    # torch and keras deprecation notices are about their internals, not the user's model
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


@main.command()
@click.argument("src", type=click.Path(path_type=str))
@click.option("--to", "target", default=None,
              help="target: keras-jax or torch-xla (default: the other framework: Keras sources to torch-xla, "
                   "PyTorch and ONNX sources to keras-jax)")
@output_options()
@shape_options()
@check_options("verify", "seed", "atol", "rtol", "grad", "strict_tpu", "mesh")
@trust_options
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON on stdout")
@click.option("--debug", is_flag=True, help="show tracebacks")
def convert(src, target, output, shapes, checks, trust, as_json, debug):
    """Convert SRC (.pt2, .pt, .keras, .h5, .onnx, a Hugging Face folder) into OUT/model.py + weights, and verify it."""
    header = None
    if target is None:  # the other framework than the source's
        from .. import api

        target = "torch-xla" if api.is_keras_source(src) else "keras-jax"
        header = f"converting {src} to {target} (the other framework; --to chooses)"
    if output.out is None:
        output = replace(output, out=str(Path(src).parent / f"{Path(src).stem or 'model'}_{target.split('-')[0]}"))

    def work():  # imports torch, Keras and JAX under _run's signal handlers
        from .. import api
        from ..progress import display

        with display(header=header, live=False if as_json else None) as reporter:  # live only on a terminal
            return api.convert(src, target, trust=trust, shapes=shapes, checks=checks, output=output,
                               progress=reporter, debug=debug)

    result = _run(debug, work)
    if as_json:
        click.echo(json.dumps(result.report, indent=2, default=str))
        return
    print_conversion(result.typed, result.out)  # the typed report (session/report.py)


@main.command()
@click.argument("src", type=click.Path(path_type=str))
@click.argument("out", type=click.Path(path_type=str))
@check_options("samples", "seed", "atol", "rtol", "trace", "grad")
@shape_options("inputs", "dynamic", "static_batch")
@trust_options
@click.option("--json", "as_json", is_flag=True, help="print the verification report as JSON on stdout")
@click.option("--debug", is_flag=True, help="show tracebacks")
def verify(src, out, checks, shapes, trust, as_json, debug):
    """Re-check OUT (written by 'portx convert') against SRC on seeded inputs; exit 1 when they differ."""
    def work():
        from .. import api
        from ..progress import display

        with display(live=False if as_json else None) as reporter:  # live only on a terminal, else plain lines
            return api.verify(src, out, trust=trust, shapes=shapes, checks=checks, check=False, progress=reporter,
                              debug=debug)

    report = _run(debug, work)
    from ..session.report import VerifyReport  # loaded by api already

    typed = VerifyReport.read(report)
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        print_verification(typed)
    if not typed.passed:
        from ..errors import VerificationFailed

        sys.exit(_fail(VerificationFailed(typed.problem or "the converted model differs",
                                          hint=_verify_hint(typed, checks.trace)), False))
    if not as_json:
        samples, seed = len(typed.samples or []), checks.seed
        sizes = "; ".join(f"{d.symbol} = {', '.join(str(c.size) for c in d.verified or [])}"
                          for d in typed.dynamic or [])  # --dynamic: the sizes checked
        click.echo(f"verified: {out} matches {typed.source or 'the source'} on {samples} sample(s) "
                   f"(seeds {seed}..{seed + samples - 1})" + (f" and at {sizes}" if sizes else ""))


def _verify_hint(typed, traced) -> str:
    """What to do after a failed verify: --trace shows each layer's error at the samples' size, which does not help
    when the samples agree and only a --dynamic size differs."""
    sizes = [f"{d.symbol} = {c.size}" for d in typed.dynamic or [] for c in d.verified or [] if c.passed is False]
    if sizes and all(row.passed is not False for row in typed.outputs or []):
        return (f"the samples agree; OUT differs at {', '.join(sizes)}: convert again without that dim in --dynamic, "
                "or see the dim's rows in --json")
    return "" if traced else "rerun with --trace to see every layer's error"


@main.command()
@click.argument("src", type=click.Path(path_type=str))
@shape_options("inputs")
@trust_options
@click.option("--target", type=click.Choice(["keras-jax", "torch-xla", "tpu", "torch_xla"]), default=None,
              help="add each op's TPU status from that target's op table (tpu, torch_xla: older names)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
@click.option("--debug", is_flag=True, help="show tracebacks")
def inspect(src, shapes, trust, target, as_json, debug):
    """List SRC's ops (as portx IR) with counts and source scopes."""
    def work():
        from .. import api

        return api.inspect(src, target=target, trust=trust, shapes=shapes, debug=debug)

    info = _run(debug, work)  # an InspectReport (session/report.py)
    if as_json:
        click.echo(json.dumps(info.to_dict(), indent=2))
        return
    click.echo(f"{src}: {info.nodes} nodes, {info.weight_bytes / 1e6:.2f} MB of weights")
    for name, shape, dtype in info.inputs:
        click.echo(f"  input  {name}: {dtype}{shape}")
    for name, shape, dtype in info.outputs:
        click.echo(f"  output {name}: {dtype}{shape}")
    width = max((len(k) for k in info.ops), default=4)
    for op, row in sorted(info.ops.items(), key=lambda kv: -kv[1].count):
        scopes = ", ".join(s or "<top>" for s in row.scopes[:3])
        status = f"  [{row.status}]" if row.status is not None else ""
        click.echo(f"  {op:<{width}}  {row.count:>5}  {scopes}{status}")


@main.command()
@click.argument("out", type=click.Path(path_type=str))
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="local port (default 8080; a port in use: "
                                                                         "another free one, and the URL says which)")
@click.option("--source", default=None, type=click.Path(path_type=str),
              help="also show the source model (a torch.export .pt2: Model Explorer reads it itself)")
@click.option("--no-browser", is_flag=True, help="do not open a browser tab; print the URL only")
@click.option("--debug", is_flag=True, help="show tracebacks")
def explore(out, port, source, no_browser, debug):
    """Open Model Explorer on OUT's graph (from 'portx convert --explore'), with its per-node error, TPU status
    and layout overlays. Needs the [explore] extra; stops with Ctrl+C."""
    def work():
        from .. import api

        return api.explorer.prepare(out, port=port, source=source)

    prepared = _run(debug, work)
    for note in prepared[3]:
        click.echo(note)
    from .. import api  # loaded by work() already

    try:  # blocks until Ctrl+C
        api.explorer.serve(prepared, open_browser=not no_browser)
    except Exception as exc:  # noqa: BLE001 - a server that fails to start: one line, as every failure
        sys.exit(_fail(exc, debug))


@main.command()
@click.option("--target", type=click.Choice(["keras-jax", "torch-xla", "tpu", "torch_xla"]), default=None,
              help="show that target's op table (tpu, torch_xla: older names of keras-jax, torch-xla)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def ops(target, as_json):
    """List the IR ops and the PyTorch (and ONNX) ops each imports; with --target, each op's status, reason,
    the file and line of its emit rule for that target, and the evidence for the status."""
    from .. import api

    rows = api.op_table(target)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        if target:
            click.echo(f"{row['op']:<22} {row.get('status', 'unsupported'):<34} {row.get('why', '')}")
            click.echo(f"{'':<22} rule: {row.get('rule') or '-'}")
            click.echo(f"{'':<22} evidence: {row.get('source', '')}")
        else:
            onnx = f"  onnx: {', '.join(row['onnx'])}" if row["onnx"] else ""
            click.echo(f"{row['family']:<12} {row['op']:<20} {', '.join(row['torch'])}{onnx}")


if __name__ == "__main__":
    main()
