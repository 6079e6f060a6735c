"""Op families, one package each. Importing this package registers every OpDef and all of its rules.

A family package declares its OpDefs (with shape rules and NumPy references) in ``__init__.py`` and
keeps one module per direction beside it, named for the source or target it serves:
``from_torch.py``, ``from_keras.py`` (layers), ``from_keras_ops.py`` (``keras.ops`` calls),
``from_jax.py`` (JAX primitives), ``to_keras.py``, ``to_torch.py``. Registration is order-free:
each rule module imports the OpDefs it uses, and ``register_all`` imports every module of every family.

Example:
    >>> import portx.ops
    >>> from portx.ir import lookup
    >>> lookup("conv").family
    'conv'
"""
from __future__ import annotations

import importlib
import pkgutil

from . import (attention, conv, dropout, elementwise, embedding, linear, norm, pad, pool, recurrent, reduce, resize,
               shape)
from . import fft
from . import sort
from . import scatter
from . import linalg
from . import random
from . import special
from .traits import declare

FAMILIES = (attention, conv, dropout, elementwise, embedding, linear, norm, pad, pool, recurrent, reduce, resize,
            shape) + (fft,) + (sort,) + (scatter,) + (linalg,) + (random,) + (special,)

__all__ = ["FAMILIES", "register_all"] + [family.__name__.rsplit(".", 1)[1] for family in FAMILIES]


def register_all() -> None:
    """Import every module of every family package (each attaches its rules to the OpDefs)."""
    for family in FAMILIES:
        for module in pkgutil.iter_modules(family.__path__):
            importlib.import_module(f"{family.__name__}.{module.name}")
    declare()


register_all()
