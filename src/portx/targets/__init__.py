"""Targets: the output formats portx writes, as objects behind one protocol (``base.Target``).

``TARGETS`` maps each target's name (``--to``) to its object; ``ALIASES`` holds the other names the CLI
accepts (``--target tpu``, ``torch_xla``). Loading this package imports no framework.

Example:
    >>> target = find_target("torch_xla")          # TARGETS["torch-xla"]
    >>> target.emit(graph, "out/"); target_of("out/") is target
    True
"""
from __future__ import annotations

from ..errors import BadInput
from .base import Target
from .keras_jax import KERAS_JAX
from .torch_xla import TORCH_XLA

__all__ = ["Target", "TARGETS", "ALIASES", "NAMES", "DEFAULT_TARGET", "KERAS_JAX", "TORCH_XLA", "find_target",
           "target_of"]

#: target name -> target, in the order ``target_of`` asks them
TARGETS = {target.name: target for target in (KERAS_JAX, TORCH_XLA)}
#: other accepted names -> target
ALIASES = {alias: target for target in TARGETS.values() for alias in target.aliases}
#: every name ``find_target`` accepts
NAMES = (*TARGETS, *ALIASES)
#: what ``portx convert`` writes without ``--to``
DEFAULT_TARGET = KERAS_JAX


def find_target(name, option="--to") -> Target:
    """The target called ``name`` (or an alias of it); BadInput naming ``option`` for anything else."""
    target = TARGETS.get(name) or ALIASES.get(name)
    if target is None:
        raise BadInput(f"{option} {name}: unknown target", hint=f"choose one of {', '.join(TARGETS)}")
    return target


def target_of(out):
    """The target that wrote ``out`` (an OUT folder, its model.py, or a live model), or None."""
    return next((target for target in TARGETS.values() if target.owns(out)), None)
