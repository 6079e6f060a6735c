"""One click decorator per option group of ``options.py``: ``trust_options``, ``shape_options``,
``check_options`` and ``output_options``. Each adds its group's flags to a command and hands the command one
keyword (``trust=Trust(...)`` ...), so a flag is spelled, documented and validated the same in every command.

A command that takes part of a group names the fields it takes (``shape_options("inputs")``); ``Trust`` is
always whole (Note [one trust] in options.py). A value the group refuses (a NaN tolerance, a negative seed) is
one line on stderr and exit 2, as every bad input.

Example:
    @main.command()
    @trust_options
    @check_options("atol", "rtol")
    def verify(src, trust, checks): ...
"""
from __future__ import annotations

import functools
import sys

import click

from ..errors import PortxError
from ..options import Checks, Output, Shapes, Trust

__all__ = ["trust_options", "shape_options", "check_options", "output_options"]

_TRUST = {
    "trust_pickle": click.option("--trust-pickle", is_flag=True,
                                 help="allow loading a full pickle or TorchScript archive (runs code from the file)"),
    "trust_savedmodel": click.option("--trust-savedmodel", is_flag=True,
                                     help="allow reading a TensorFlow SavedModel (runs its graph)"),
    "unsafe_keras": click.option("--unsafe-keras", is_flag=True,
                                 help="load .keras files with safe_mode off (runs Lambda code)"),
    "trust_remote_code": click.option("--trust-remote-code", is_flag=True,
                                      help="allow a Hugging Face config's auto_map (runs the folder's code)"),
}
_SHAPES = {
    "inputs": click.option("--input", "inputs", multiple=True,
                           help="NAME:SHAPE[:DTYPE] for formats without shapes, e.g. x:1x3x224x224:float32"),
    "dynamic": click.option("--dynamic", multiple=True, metavar="NAME:AXIS[,AXIS]",
                            help="keep these input axes free too (torch.export Dims and Keras None dims are kept "
                                 "already; verify reads OUT's from its report.json)"),
    "static_batch": click.option("--static-batch", type=int, default=None, metavar="N",
                                 help="pin the batch to N (default: the batch stays free, verified at the example's, "
                                      "1 and 8; verify reads OUT's from its report.json)"),
    "io_layout": click.option("--io-layout", type=click.Choice(["source", "channels-last", "channels-first"]),
                              default="source", show_default=True,
                              help="image input/output layout of the emitted model (source: as the source)"),
}
_CHECKS = {
    "verify": click.option("--verify/--no-verify", default=True, help="numerical verification (default: on)"),
    "samples": click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
                            help="seeded input batches"),
    "seed": click.option("--seed", type=int, default=0, show_default=True,
                         help="first seed, 0 or more (batches use SEED..SEED+N-1)"),
    "atol": click.option("--atol", type=float, default=None, help="absolute tolerance (default 1e-5)"),
    "rtol": click.option("--rtol", type=float, default=None,
                         help="tolerance relative to the output's scale (default 1e-4)"),
    "trace": click.option("--trace", is_flag=True, help="print each layer's error, up to the first diverging one"),
    "grad": click.option("--grad/--no-grad", default=None,
                         help="compare gradients (inputs and parameters) with the source's (convert's default: for "
                              "models of at most 64 MB of weights)"),
    "strict_tpu": click.option("--strict-tpu", is_flag=True,
                               help="fail (exit 4) unless the model lowers cleanly for TPU"),
    "mesh": click.option("--mesh", default="batch=2,model=4", show_default=True,
                         help="the mesh the sharded model is proven on (CPU devices; TPU lowering with its "
                              "shardings); --no-shard-proof skips it"),
    "no_shard_proof": click.option("--no-shard-proof", is_flag=True,
                                   help="skip the proof on a mesh (report.json sharding)"),
}
_OUTPUT = {
    "out": click.option("-o", "--out", default=None, help="output folder (default: SRC name + _keras)"),
    "force": click.option("--force", is_flag=True, help="replace OUT if it exists and portx wrote it"),
    "fold_bn": click.option("--fold-bn/--no-fold-bn", default=False,
                            help="fold batch norms into the convolutions before them (inference only)"),
    "inference": click.option("--inference", is_flag=True, help="an inference model: fold batch norms and drop "
                                                                 "dropouts (default: both kept, so the model trains "
                                                                 "like the source)"),
    "dtype": click.option("--dtype", type=click.Choice(["config", "float32", "bfloat16", "float16"]),
                          default="config", help="a Hugging Face folder's weights dtype (default: the config's)"),
    "export_tpu": click.option("--export-tpu", is_flag=True,
                               help="also write OUT/model.tpu.jaxexport (jax.export, tpu+cpu)"),
    "explore": click.option("--explore", is_flag=True, help="also write OUT/explorer/: the graph and its overlays "
                                                            "as Model Explorer JSON (open with 'portx explore OUT')"),
    "profile": click.option("--profile", is_flag=True, help="also record each stage's memory (RSS) in "
                                                            "report.json/.html"),
    "max_shard_size": click.option("--max-shard-size", default=None, metavar="SIZE",
                                   help="largest weights shard, e.g. 2GB (default), 500MB"),
}


def _checks(values) -> Checks:
    """--atol/--rtol not given: the defaults; --no-shard-proof: no mesh."""
    if values.pop("no_shard_proof", False):
        values["mesh"] = None
    return Checks(**{k: v for k, v in values.items() if v is not None or k in ("grad", "mesh")})


def _decorator(keyword, make, table, names):
    """A decorator adding ``table``'s options ``names`` and passing ``keyword=make(their values)``."""
    def decorate(fn):
        @functools.wraps(fn)
        def command(**kwargs):
            values = {name: kwargs.pop(name) for name in names}
            try:
                kwargs[keyword] = make(values)
            except PortxError as exc:  # a refused value (BadValue): one line, exit 2
                click.echo(f"portx: {exc}", err=True)
                sys.exit(exc.exit_code)
            return fn(**kwargs)
        for name in reversed(names):
            command = table[name](command)
        return command
    return decorate


def trust_options(fn):
    """--trust-pickle, --trust-savedmodel, --unsafe-keras, --trust-remote-code -> ``trust=Trust(...)``, on every
    command that reads a source. Example: ``@trust_options`` above ``def inspect(src, trust): ...``."""
    return _decorator("trust", lambda values: Trust(**values), _TRUST, list(_TRUST))(fn)


def shape_options(*names):
    """The ``Shapes`` flags ``names`` (all by default) -> ``shapes=Shapes(...)``.
    Example: ``@shape_options("inputs")``."""
    return _decorator("shapes", lambda values: Shapes(**values), _SHAPES, list(names or _SHAPES))


def check_options(*names):
    """The ``Checks`` flags ``names`` (all by default; ``mesh`` brings ``--no-shard-proof``) -> ``checks=Checks(...)``.
    Example: ``@check_options("samples", "seed", "atol", "rtol", "trace", "grad")``."""
    names = list(names or _CHECKS)
    if "mesh" in names and "no_shard_proof" not in names:
        names.append("no_shard_proof")
    return _decorator("checks", _checks, _CHECKS, names)


def output_options(*names):
    """The ``Output`` flags ``names`` (all by default) -> ``output=Output(...)``. Example: ``@output_options()``."""
    return _decorator("output", lambda values: Output(**values), _OUTPUT, list(names or _OUTPUT))
