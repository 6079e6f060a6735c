"""Sizes given by people: ``--max-shard-size 2GB``, ``500MB``, ``0.5`` (GB), as Keras' unit (GB of 1024**3 bytes).

Example:
    >>> shard_gb("500MB")
    0.48828125
"""
from __future__ import annotations

import re

from ..errors import BadValue

__all__ = ["shard_gb"]

_UNITS = {"": 1024**3, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def shard_gb(value) -> float:
    """``value`` (a number of GB, or text such as "2GB", "500MB", "100KB") in GB; BadValue (exit 2) otherwise."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?B?)\s*", str(value).upper())
    if isinstance(value, bool) or not found or not float(found.group(1)) > 0:
        raise BadValue(f"--max-shard-size {value!r}: a size is a number > 0 with an optional unit",
                       hint="e.g. --max-shard-size 2GB (the default), 500MB or 0.5 (GB)")
    unit = found.group(2)
    return float(found.group(1)) * _UNITS[unit if unit in _UNITS else unit + "B"] / 1024**3  # "10K" is 10KB
