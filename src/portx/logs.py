"""The frameworks' loggers, silenced while portx works (the CLI and the Python API alike), unless debugging.

torch logs whole tracebacks at level ERROR for failures that portx expects and handles: a size probe that a model
does not run at (``torch.cdist`` with batch sizes that do not broadcast makes fake_tensor.py print
``E1205 ... failed while attempting to run meta``), an export attempt that falls back. Those are not the user's
problem, so ``convert``, ``verify`` and ``inspect`` run with logging disabled; the previous state comes back
afterwards, and ``debug=True`` (``--debug``) keeps every logger.

Example:
    >>> with quiet_loggers(debug=False):
    ...     torch_code_that_logs()           # prints nothing
"""
from __future__ import annotations

import contextlib
import functools
import logging

__all__ = ["quiet_loggers", "quiet_unless_debug"]


@contextlib.contextmanager
def quiet_loggers(debug=False):
    """Disable every logger (and "--- Logging error ---" reports) for the block, unless ``debug``."""
    if debug:
        yield
        return
    disabled, raising = logging.root.manager.disable, logging.raiseExceptions
    logging.disable(logging.CRITICAL)
    logging.raiseExceptions = False  # no "--- Logging error ---" from a handler whose stream went away
    try:
        yield
    finally:
        logging.disable(disabled)
        logging.raiseExceptions = raising


def quiet_unless_debug(fn):
    """Run ``fn`` under ``quiet_loggers``, keeping the loggers when it is called with ``debug=True``; the
    ``debug`` keyword is taken here, so ``fn`` does not declare it.

    Example: ``@quiet_unless_debug`` above ``def convert(source, ...)``, called as ``convert(src, debug=True)``.
    """
    @functools.wraps(fn)
    def quiet(*args, debug=False, **kwargs):
        with quiet_loggers(debug):
            return fn(*args, **kwargs)
    return quiet
