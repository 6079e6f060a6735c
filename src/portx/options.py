"""The option groups every entry point takes: ``Trust``, ``Shapes``, ``Checks`` and ``Output``.

``convert``, ``verify``, ``inspect``, ``portx.testing`` and the CLI (one click decorator per group, cli/options.py)
share these frozen dataclasses, so a trust flag means the same everywhere (Note [one trust]) and a tolerance is
checked once, when its ``Checks`` is made. A leaf module: it imports only ``errors``.

Example:
    >>> convert("model.keras", "torch-xla", trust=Trust(unsafe_keras=True), checks=Checks(atol=1e-4),
    ...         output=Output(out="out/"))
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, fields, replace

from .errors import BadInput, BadValue

__all__ = ["Trust", "Shapes", "Checks", "Output", "DEFAULT_ATOL", "DEFAULT_RTOL", "grouped", "check_tolerances"]

#: the tolerances verification uses unless told (max abs error, and error relative to the output's scale)
DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-4


@dataclass(frozen=True)
class Trust:
    """What a source may run while it is read; without these, such sources are refused (BadInput).

    ``trust_pickle``: full pickles and TorchScript archives; ``trust_savedmodel``: a TensorFlow SavedModel's graph;
    ``unsafe_keras``: a .keras file's Lambda code (safe_mode off); ``trust_remote_code``: a Hugging Face config's
    auto_map code. Example: ``verify("m.keras", "out/", trust=Trust(unsafe_keras=True))``.
    """

    trust_pickle: bool = False
    trust_savedmodel: bool = False
    unsafe_keras: bool = False
    trust_remote_code: bool = False

    def load_kwargs(self) -> dict:
        """These flags as ``frontends.load``'s keyword arguments. Example: ``load(src, **trust.load_kwargs())``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


# Note [one trust]: ``portx convert --unsafe-keras`` used to be the only command that could read a Keras Lambda,
# so ``portx verify`` could not re-check what ``convert`` wrote from it. Every command and function that reads a
# source takes the whole ``Trust`` group now (cli_options.trust_options), and passes all of it to ``load``.


@dataclass(frozen=True)
class Shapes:
    """The inputs: ``inputs`` specs (NAME:SHAPE[:DTYPE], for formats without shapes), ``dynamic`` axes kept free,
    ``static_batch`` (pin the batch to N), and ``io_layout`` of image inputs/outputs ("source", "channels-last",
    "channels-first"). Example: ``Shapes(dynamic=("ids:1",), static_batch=None)``."""

    inputs: tuple = ()
    dynamic: tuple = ()
    static_batch: int | None = None
    io_layout: str = "source"

    def __post_init__(self):
        n = self.static_batch
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise BadValue(f"--static-batch {n!r}: a batch size is a whole number >= 1", hint="e.g. --static-batch 8")
        object.__setattr__(self, "inputs", tuple(self.inputs or ()))
        object.__setattr__(self, "dynamic", tuple(self.dynamic or ()))


def check_tolerances(atol, rtol):
    """BadValue (exit 2; a ValueError) unless both tolerances are finite and >= 0: NaN would pass anything."""
    for name, value in (("atol", atol), ("rtol", rtol)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise BadValue(f"--{name} {value!r}: a tolerance must be a finite number >= 0",
                           hint=f"e.g. --{name} {DEFAULT_ATOL if name == 'atol' else DEFAULT_RTOL:g} (the default)")


@dataclass(frozen=True)
class Checks:
    """What is checked, and how closely: ``verify`` (numerics), ``atol``/``rtol`` (checked here, once), ``seed``
    and ``samples`` of the seeded batches, ``grad`` (gradients; None: convert decides by size), ``trace`` (every
    layer's error), ``strict_tpu`` (fail unless TPU-legal) and ``mesh`` (the sharding proof's mesh, None skips it).
    Example: ``Checks(atol=1e-4, grad=False, mesh="batch=2,model=4")``."""

    verify: bool = True
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    seed: int = 0
    samples: int = 1
    grad: bool | None = None
    trace: bool = False
    strict_tpu: bool = False
    mesh: object = None

    def __post_init__(self):
        check_tolerances(self.atol, self.rtol)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise BadValue(f"--seed {self.seed}: must be 0 or more", hint="pass e.g. --seed 0")


@dataclass(frozen=True)
class Output:
    """What is written: the folder ``out`` (None: a temporary one) and whether to replace it (``force``); the
    model's form (``fold_bn``, ``inference``; ``dtype`` of a Hugging Face folder's weights); extra files
    (``export_tpu``, ``explore``), ``profile`` (RSS per stage) and the weights' ``max_shard_size``.
    Example: ``Output(out="out/", force=True, max_shard_size="500MB")``."""

    out: object = None
    force: bool = False
    fold_bn: bool = False
    inference: bool = False
    dtype: str = "config"
    export_tpu: bool = False
    explore: bool = False
    profile: bool = False
    max_shard_size: object = None


_GROUPS = {"trust": Trust, "shapes": Shapes, "checks": Checks, "output": Output}
#: flat keyword -> (group, field) for the keywords ``convert`` took before the groups
_FLAT = {f.name: (group, f.name) for group, cls in _GROUPS.items() for f in fields(cls)}


def grouped(where, legacy, **groups) -> dict:
    """``groups`` (name -> the caller's group object) with the flat keywords of ``legacy`` folded in, each with a
    DeprecationWarning; BadInput names a keyword no group has.

    Example: ``grouped("convert", {"atol": 1e-3}, checks=Checks())["checks"].atol`` -> 1e-3.
    """
    groups = {name: _as_group(where, name, value) for name, value in groups.items()}
    if not legacy:
        return groups
    unknown = sorted(k for k in legacy if k not in _FLAT or _FLAT[k][0] not in groups)
    if unknown:
        raise BadInput(f"{where}() got unexpected keyword arguments {', '.join(unknown)}",
                       hint=f"{where} takes the option groups {', '.join(groups)} (portx.options)")
    warnings.warn(f"{where}(): flat keyword arguments ({', '.join(sorted(legacy))}) are deprecated; pass the option "
                  "groups of portx.options instead, e.g. checks=Checks(atol=1e-4)", DeprecationWarning,
                  stacklevel=_first_caller_outside_portx())
    moved = {}
    for key, value in legacy.items():
        group, name = _FLAT[key]
        moved.setdefault(group, {})[name] = value
    return {**groups, **{g: replace(groups[g], **changes) for g, changes in moved.items()}}


def _as_group(where, name, value):
    """``value`` as the group ``name``'s class: the object itself, a dict of its fields, or for ``output`` a folder
    path (``output="out/"`` is ``Output(out="out/")``); anything else is BadInput naming the argument."""
    cls = _GROUPS[name]
    if isinstance(value, cls):
        return value
    if name == "output" and isinstance(value, (str, os.PathLike)):
        return cls(out=value)
    if isinstance(value, dict):
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in value if k not in known)
        if not unknown:
            return cls(**value)
        raise BadInput(f"{where}(): {name}= has no field {', '.join(unknown)}",
                       hint=f"{cls.__name__} takes {', '.join(sorted(known))}")
    raise BadInput(f"{where}(): {name}= takes portx.options.{cls.__name__}, not {type(value).__name__}",
                   hint=f"e.g. {name}={cls.__name__}(...)")


def _first_caller_outside_portx() -> int:
    """The ``stacklevel`` that makes a warning raised in the caller of this function point at the user's line.

    The entry points reach ``grouped`` through wrappers (``logs.quiet_unless_debug``, ``api`` -> ``testing``), so
    a fixed ``stacklevel`` points into portx whenever a wrapper is added; this counts portx's own frames instead.
    Example: ``warnings.warn(msg, DeprecationWarning, stacklevel=_first_caller_outside_portx())`` in ``grouped``.
    """
    frame, level = sys._getframe(2), 2  # level 1: the function calling warnings.warn
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "portx":
        frame, level = frame.f_back, level + 1
    return level
