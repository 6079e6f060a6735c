"""Progress of long work: stages, with per-node counts inside the long ones, live on a terminal or as plain lines.

The protocol: a reporter has ``start(stage)``, ``step(done, total, what)`` and ``end(stage, seconds)``.
``api.convert(progress=...)`` takes a reporter, or the older callable ``progress(name, seconds)`` (called at the
end of each stage). Long loops (lowering, emit, verification, TPU lowering) call the module-level ``step``: it
reaches the reporter made active by ``reporting`` and does nothing when none is, so the hooks cost nothing.

``display`` picks the reporter the CLI shows: ``Live`` (rich) on a terminal: the current stage with a bar, its
node counts and the node at hand, the elapsed time, and a line with its time per finished stage; ``Lines``
elsewhere (CI logs, ``--json``): one plain line per stage, ``  emit             17.27s``, no control characters.

Example:
    >>> with display(quiet=False, header="converting m.pt2 to keras-jax") as reporter:
    ...     api.convert("m.pt2", progress=reporter)
    >>> step(41, 120, "conv2d_3 (conv)")  # inside a stage: the bar moves; with no display: nothing happens
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from .session.report_sections import Profile, ProfileRow

__all__ = ["Reporter", "Callback", "Lines", "Live", "Stages", "step", "counted", "watch", "reporting", "as_reporter", "display",
           "stage_line", "memory"]

_active: list = []  # the reporters made active by ``reporting``; the innermost gets the steps


def step(done, total=None, what=""):
    """``done`` of ``total`` items (nodes, sizes, samples) of the current stage, at item ``what``; a no-op unless a
    display is active."""
    if _active:
        _active[-1].step(done, total, what)


def counted(items, what=str):
    """Yield ``items`` (a sized collection), reporting each as ``step(index, len(items), what(item))``."""
    total = len(items)
    for done, item in enumerate(items):
        step(done, total, what(item))
        yield item


@contextlib.contextmanager
def watch(path, function, what):
    """While the block runs, follow the line the main thread runs in ``function`` of file ``path`` (a generated
    model.py, one statement per node, being built) as the stage's count; a no-op unless a ``Live`` is active."""
    live = _active[-1] if _active and isinstance(_active[-1], Live) else None
    if live is None:
        yield
        return
    live.follow(str(path), function, what)
    try:
        yield
    finally:
        live.follow(None, None, "")


@contextlib.contextmanager
def reporting(reporter):
    """Make ``reporter`` (or nothing, when None) receive the ``step`` calls made inside the block."""
    if reporter is None:
        yield None
        return
    _active.append(reporter)
    try:
        yield reporter
    finally:
        _active.remove(reporter)


class Reporter:
    """A reporter that ignores everything; subclasses override what they show."""

    def start(self, stage):
        """Stage ``stage`` begins."""

    def step(self, done, total=None, what=""):
        """``done`` of ``total`` items of the current stage are done; ``what``: the item at hand."""

    def end(self, stage, seconds):
        """Stage ``stage`` ended after ``seconds``."""


class Callback(Reporter):
    """The older protocol: ``fn(stage, seconds)`` once per finished stage."""

    def __init__(self, fn):
        self.fn = fn

    def end(self, stage, seconds):
        self.fn(stage, seconds)


def as_reporter(progress):
    """A Reporter for ``progress``: None, a reporter (start/step/end), or a callable ``progress(name, seconds)``."""
    if progress is None or all(callable(getattr(progress, m, None)) for m in ("start", "step", "end")):
        return progress
    if callable(progress):
        return Callback(progress)
    raise TypeError(f"progress must be a callable progress(name, seconds) or a reporter, not {type(progress).__name__}")


class Stages:
    """Times named stages and reports each to ``progress`` (a Reporter, or ``progress(name, seconds)``); ``step``
    calls made inside a stage reach it too. ``profile``: also each stage's CPU seconds and the RSS after it
    (``memory``), report["profile"] as ``profiled()`` (typed where built: Note [typed sections]).

    Example: ``stages = Stages(print); graph = stages.run("lower", src.lower); stages.times["lower"]``.
    """

    def __init__(self, progress=None, profile=False):
        self.times, self.progress = {}, as_reporter(progress)
        self.profile = [] if profile else None

    def run(self, name, fn, *args, **kwargs):
        if self.progress:
            self.progress.start(name)
        start, cpu = time.perf_counter(), time.process_time()
        with reporting(self.progress):
            result = fn(*args, **kwargs)
        self.times[name] = round(time.perf_counter() - start, 4)
        if self.profile is not None:  # CPU: this process's threads (a busy machine stretches the wall time)
            self.profile.append(ProfileRow(stage=name, seconds=self.times[name],
                                           cpu_seconds=round(time.process_time() - cpu, 2), **memory()))
        if self.progress:
            self.progress.end(name, self.times[name])
        return result

    def profiled(self) -> Profile:
        """report["profile"]: per stage its seconds and the RSS after it, and the run's peak RSS."""
        return Profile(stages=self.profile or [], **memory())


def memory() -> dict:
    """The process's peak RSS so far and its current RSS, in MB (current: Linux only, else None)."""
    import os
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except (OSError, ValueError, IndexError):
        rss = None
    return {"peak_rss_mb": round(peak, 1), "rss_mb": None if rss is None else round(rss, 1)}


def stage_line(stage, seconds) -> str:
    """The plain line of one finished stage: ``  emit            17.27s``."""
    return f"  {stage:<13}{seconds:8.2f}s"


class Lines(Reporter):
    """One plain line per finished stage on ``stream`` (default: sys.stderr at the time of writing); ``header``
    goes first, once the first stage is done, so a run that fails at once prints only its one error line."""

    def __init__(self, header=None, stream=None):
        self.pending, self.stream = [header] if header else [], stream

    def write(self, text):
        print(text, file=self.stream or sys.stderr, flush=True)

    def end(self, stage, seconds):
        while self.pending:
            self.write(self.pending.pop())
        self.write(stage_line(stage, seconds))


class Live(Lines):
    """A live display on a terminal (rich): the current stage with a bar, ``done/total`` and the item at hand, the
    stage's and the whole run's elapsed time; each finished stage leaves its line, and ``close`` adds the total."""

    def __init__(self, header=None, console=None):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        begun = self.begun = time.perf_counter()

        class Run(ProgressColumn):  # the whole run's elapsed time, beside the stage's
            def render(self, task):
                took = int(time.perf_counter() - begun)
                return Text(f"(run {took // 60}:{took % 60:02d})", style="progress.elapsed")

        super().__init__(header)
        self.console = console or Console(stderr=True, highlight=False)
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description:<13}"), BarColumn(bar_width=30),
                            TextColumn("{task.fields[count]:>11}"), TextColumn("{task.fields[what]}", markup=False),
                            TimeElapsedColumn(), Run(), console=self.console, transient=True, refresh_per_second=8)
        self.task, self.stage = None, None
        self.followed, self.main = None, threading.main_thread().ident
        self.stop, self.lock = threading.Event(), threading.Lock()  # the sampler thread steps too
        self.sampler = threading.Thread(target=self._sample, daemon=True, name="portx-progress")

    def open(self):
        self.bar.start()
        self.sampler.start()
        return self

    def write(self, text):
        self.console.print(text, markup=False, highlight=False)

    def start(self, stage):
        with self.lock:
            self.stage = stage
            self.task = self.bar.add_task(stage, total=None, what="", count="")

    def step(self, done, total=None, what=""):
        shown = "".join(c if c.isprintable() else "?" for c in str(what)[:60])  # names come from model files
        with self.lock:
            if self.task is not None:
                self.bar.update(self.task, completed=done, total=total, what=shown,
                                count=f"{done}/{total}" if total else "")

    def end(self, stage, seconds):
        with self.lock:
            if self.task is not None:
                self.bar.remove_task(self.task)
            self.task, self.stage = None, None
        while self.pending:
            self.write(self.pending.pop())
        self.write(f"  done {stage:<13}{seconds:8.2f}s")

    def close(self, failed=False):
        """Stop the display; print where a failed run stopped, or the total time."""
        self.stop.set()
        if self.sampler.is_alive():
            self.sampler.join(timeout=1)
        self.bar.stop()
        took = time.perf_counter() - self.begun
        if failed and self.stage:
            self.write(f"  stopped in {self.stage}, {took:.2f}s into the run")
        elif not failed:
            self.write(f"  {'total':<18}{took:8.2f}s")

    def follow(self, path, function, what):
        """Count lines of ``function`` in ``path`` as the main thread runs them (see ``watch``); None stops."""
        if path is None:
            self.followed = None
            return
        with contextlib.suppress(OSError):
            lines = open(path, encoding="utf-8").read().splitlines()
            first = next((i + 1 for i, line in enumerate(lines) if line.lstrip().startswith(f"def {function}(")), 1)
            self.followed = (path, function, first, len(lines), what)

    def _sample(self):
        while not self.stop.wait(0.25):
            followed = self.followed
            frame = sys._current_frames().get(self.main) if followed else None
            while frame is not None and not (frame.f_code.co_filename == followed[0]
                                             and frame.f_code.co_name == followed[1]):
                frame = frame.f_back
            if frame is not None:
                path, _, first, last, what = followed
                self.step(max(frame.f_lineno - first, 0), max(last - first, 1), f"{what} (model.py line {frame.f_lineno})")


@contextlib.contextmanager
def display(quiet=False, header=None, live=None):
    """The CLI's reporter: None when ``quiet``; ``Live`` on a terminal (``live``: force it on or off), else
    ``Lines``. A live display is stopped when the block ends, also on an error or a signal."""
    if quiet:
        yield None
        return
    if live is None:
        from rich.console import Console

        console = Console(stderr=True)
        live = console.is_terminal and not console.is_dumb_terminal
    if not live:
        yield Lines(header)
        return
    reporter = Live(header).open()
    try:
        yield reporter
    except BaseException:
        reporter.close(failed=True)
        raise
    reporter.close()
