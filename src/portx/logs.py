"""The frameworks' loggers, silenced while portx works (the CLI and the Python API alike), unless debugging.

torch logs whole tracebacks at level ERROR for failures that portx expects and handles: a size probe that a model
does not run at (``torch.cdist`` with batch sizes that do not broadcast makes fake_tensor.py print
``E1205 ... failed while attempting to run meta``), an export attempt that falls back. Those are not the user's
problem, so ``convert``, ``verify`` and ``inspect`` run with logging disabled; the previous state comes back
afterwards, and ``debug=True`` (``--debug``) keeps every logger. Note [framework prints]: what torch prints without
a logger is dropped by ``quiet_prints`` around the call that prints it.

Note [tensorflow imported behind portx]: where TensorFlow is installed, Keras imports it lazily in the middle of
work that has nothing to do with it (``serialize_keras_object`` asks ``tf.available`` while serialising a Lambda's
function), and TensorFlow 2.21's C++ start-up lines (oneDNN, CUDA probing, "All log messages before
absl::InitializeLog()") go straight to file descriptor 2, past every logger and TF_CPP_MIN_LOG_LEVEL. While the
frameworks are kept quiet, a meta-path finder (installed by the first ``quiet_loggers``) loads ``tensorflow`` with
descriptor 2 on /dev/null (``quiet_native_logs``); with ``--debug`` it does nothing.

Example:
    >>> with quiet_loggers(debug=False):
    ...     torch_code_that_logs()           # prints nothing
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.abc
import importlib.machinery
import logging
import os
import sys
import threading

__all__ = ["quiet_loggers", "quiet_prints", "quiet_unless_debug", "quiet_native_logs"]

#: whether the frameworks are being kept quiet (inside ``quiet_loggers`` without ``debug``)
_QUIET = contextvars.ContextVar("portx_quiet", default=False)


@contextlib.contextmanager
def quiet_native_logs():
    """Within the block, file descriptor 2 goes to /dev/null: what native code writes there directly (TensorFlow's
    start-up lines) is dropped. Python exceptions are unaffected. Example: ``with quiet_native_logs(): import tf``."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _QuietLoader(importlib.abc.Loader):
    """A module's own loader, run under ``quiet_native_logs``."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        with quiet_native_logs():
            self.loader.exec_module(module)


class _QuietTensorflow(importlib.abc.MetaPathFinder):
    """Note [tensorflow imported behind portx]: ``tensorflow``, first imported while portx keeps quiet, loads
    without its native start-up lines."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or not _QUIET.get():
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


_FINDER = _QuietTensorflow()


@contextlib.contextmanager
def quiet_loggers(debug=False):
    """Disable every logger (and "--- Logging error ---" reports) for the block, unless ``debug``; TensorFlow
    imported in the block loads quietly (Note [tensorflow imported behind portx])."""
    if debug:
        yield
        return
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    disabled, raising = logging.root.manager.disable, logging.raiseExceptions
    logging.disable(logging.CRITICAL)
    logging.raiseExceptions = False  # no "--- Logging error ---" from a handler whose stream went away
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)
        logging.disable(disabled)
        logging.raiseExceptions = raising


class _OthersOnly:
    """``sys.stderr`` for a block: what this thread writes is dropped, other threads' writes (portx's progress
    display) go through."""

    def __init__(self, stream):
        self.stream, self.owner = stream, threading.get_ident()

    def write(self, text):
        return len(text) if threading.get_ident() == self.owner else self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextlib.contextmanager
def quiet_prints():
    """Note [framework prints]: drop what this thread writes to ``sys.stderr`` in the block while the frameworks
    are kept quiet (``quiet_loggers``; nothing changes under ``debug``). torch.export prints a failed trace's
    partial graph (``e.partial_fx_graph``, torch/export/_trace.py ``_log_export_wrapper``) with a bare ``print``
    that no logger setting reaches, once per failed attempt: whole graphs on stderr for a model portx then
    exports another way or refuses in one line.

    Example: ``with quiet_prints(): torch.export.export(module, inputs)``.
    """
    if not _QUIET.get():
        yield
        return
    stream, sys.stderr = sys.stderr, _OthersOnly(sys.stderr)
    try:
        yield
    finally:
        sys.stderr = stream


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
