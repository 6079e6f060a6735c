"""Output folders that never lose the user's files: build in a temporary sibling, move into place at the end.

Note [output safety]: portx only ever replaces a folder it wrote itself.
- Every output folder holds ``.portx-output`` (a marker with the portx version). With ``force``, an
  existing OUT is replaced only when it holds the marker (or, from older versions, ``report.json``)
  and nothing but the files portx writes; an empty folder is replaced too.
- OUT may not be a symbolic link (dangling or looping ones included), ``.``, the current folder or one
  of its parents, the home folder, or a folder that holds a ``protect``-ed path (the source model).
- The new folder appears with one ``rename``: without ``force`` the rename fails when another process
  made OUT first (exactly one of two racing conversions wins). With ``force`` the old OUT is renamed
  to a hidden backup, the new one takes its place, and only then is the backup deleted; on any
  failure the backup is put back. SIGINT/SIGTERM wait while the two renames run.
- A full disk, a quota or ``ulimit -f`` while writing becomes BadInput naming OUT and the sizes.
- The folder gets the permissions of the user's umask (tempfile's staging folder is private until then).
- A conversion killed from outside (the OOM killer, ``kill -9``) cannot remove its staging folder; its marker
  names the process, and the next conversion into that parent folder removes staging folders whose process
  is gone and says so (``clean_stale_staging``).

Note [signals]: the CLI runs inside ``handling_signals()``: SIGINT and SIGTERM raise ``Interrupted``
(exit 128 + signum) once, and are also remembered, because a library may swallow the exception; the
final rename checks that memory and aborts. SIGXFSZ is ignored, so writes past ``ulimit -f`` raise
EFBIG instead of killing the process.

Example:
    >>> with staged_output("out/", force=False, protect=("model.pt2",)) as tmp:
    ...     (tmp / "model.py").write_text(code)
    # out/ now exists; on any exception or signal it does not (or is as before), and tmp is gone.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path

from ..errors import BadInput, Interrupted
from .staging import MARKER, clean_stale_staging, folder_size, size_text, write_marker

__all__ = ["MARKER", "PORTX_FILES", "staged_output", "check_output", "is_portx_output", "handling_signals",
           "pending_signal"]

#: every file portx writes into an output folder (its folders: ``_PORTX_DIRS``)
PORTX_FILES = frozenset({MARKER, "model.py", "model.weights.h5", "model.weights.json", "model.safetensors",
                         "report.json", "report.html",
                         "model.tpu.jaxexport", "model.tpu.jaxexport.weights.npz"})
#: weight shards and their indexes: Keras' beside model.weights.json (targets/keras_jax/sharded.py), and
#: Hugging Face safetensors shards beside model.safetensors.index.json (targets/torch_xla/shards.py)
_SHARD_FILES = re.compile(r"model_\d{5}\.weights\.h5|model-\d{5}-of-\d{5}\.safetensors"
                          r"|model\.safetensors\.index\.json")
#: folders portx writes into OUT, and the files each may hold (None: anything; ``__pycache__`` comes from importing
#: model.py, ``explorer/`` is --explore's, reporting/explorer.py)
_PORTX_DIRS = {"__pycache__": None, "explorer": re.compile(r"graph\.json|node_data_\w+\.json")}
_STOP = frozenset({signal.SIGINT, signal.SIGTERM})
_FULL = {errno.ENOSPC: "the disk is full", errno.EFBIG: "a file reached the file size limit",
         getattr(errno, "EDQUOT", 122): "the disk quota is used up"}
# libraries that wrap the OSError keep only its text: "(os error 28)", "errno = 27", "No space left on device"
_FULL_TEXT = re.compile(r"(?:os error |errno = |\[Errno )(\d+)|" + "|".join(re.escape(os.strerror(e)) for e in _FULL))
_seen_signals: list = []  # Note [signals]


def pending_signal():
    """The first SIGINT/SIGTERM seen inside ``handling_signals()``, or None."""
    return _seen_signals[0] if _seen_signals else None


def _on_signal(signum, frame):
    if _seen_signals:  # a second Ctrl-C must not interrupt the clean-up of the first
        return
    _seen_signals.append(signum)
    raise Interrupted(signum)


@contextlib.contextmanager
def handling_signals():
    """Run the block with SIGINT/SIGTERM raising ``Interrupted`` and SIGXFSZ ignored (Note [signals]).

    Yields the list of signals seen; handlers are restored afterwards. Outside the main thread it does nothing.
    Example: ``with handling_signals() as seen: api.convert(...)``.
    """
    global _seen_signals
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    _seen_signals = seen = []
    wanted = {s: _on_signal for s in _STOP}
    if hasattr(signal, "SIGXFSZ"):
        wanted[signal.SIGXFSZ] = signal.SIG_IGN
    old = {s: signal.signal(s, handler) for s, handler in wanted.items()}
    try:
        yield seen
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _seen_signals = []


def _name_max(folder) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _portx_file(name) -> bool:
    """True for a file name portx writes into OUT (``PORTX_FILES``, or a weight shard)."""
    return name in PORTX_FILES or _SHARD_FILES.fullmatch(name) is not None


def _portx_dir(entry) -> bool:
    """True for a folder portx writes into OUT that holds only the files portx writes there."""
    if entry.name not in _PORTX_DIRS:
        return False
    names = _PORTX_DIRS[entry.name]
    try:
        return names is None or all(e.is_file(follow_symlinks=False) and names.fullmatch(e.name)
                                    for e in os.scandir(entry.path))
    except OSError:
        return False


def is_portx_output(folder) -> tuple:
    """(True, "") when ``folder`` holds only what portx writes, and its marker or report.json; else (False, why).

    An empty folder counts (nothing can be lost). Example: ``is_portx_output("out")`` -> ``(True, "")``.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        return False, f"it cannot be read ({exc.strerror})"
    names = {e.name for e in entries}
    foreign = sorted(e.name for e in entries if e.is_symlink() or not (
        _portx_dir(e) if e.is_dir(follow_symlinks=False) else _portx_file(e.name)))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        return False, f"it holds files portx did not write ({shown})"
    if entries and not names & {MARKER, "report.json"}:
        return False, f"it has no {MARKER} or report.json"
    return True, ""


def _inside(folder: Path, path) -> bool:
    """True when ``path`` (as given, or with links resolved) is ``folder`` or lies inside it."""
    spots = {Path(os.path.abspath(path))}
    with contextlib.suppress(OSError, RuntimeError):
        spots.add(Path(path).resolve())
    return any(folder == p or folder in p.parents for p in spots)


def _home_and_cwd() -> list:
    places = []
    for where, label in ((Path.cwd, "the current folder"), (Path.home, "your home folder")):
        with contextlib.suppress(OSError, RuntimeError, KeyError):
            places.append((where().resolve(), label))
    return places


def _refuse_place(out, target, protect):
    """BadInput when replacing ``target`` would delete the source, the cwd (or a parent of it) or home."""
    for path in protect:
        if isinstance(path, (str, os.PathLike)) and _inside(target, path):
            raise BadInput(f"{out}: holds the source {path}; portx will not replace a folder holding its input",
                           hint="choose an -o outside the source's folder")
    for place, label in _home_and_cwd():
        if target == place or (label == "the current folder" and target in place.parents):
            raise BadInput(f"{out}: is {label}" + ("" if target == place else " or one of its parents")
                           + "; portx writes a new folder and replaces only folders it wrote",
                           hint="choose a new folder name with -o, e.g. -o converted")


def _check_name(out: Path):
    """Refuse OUT names that name no new folder, that are too long, and symbolic links."""
    if out.name in ("", ".", ".."):
        raise BadInput(f"{out}: does not name a new folder", hint="choose a folder name with -o, e.g. -o converted")
    existing = next((p for p in (out.parent, *out.parent.parents) if os.path.isdir(p)), Path("."))
    limit = _name_max(existing)
    if len(os.fsencode(out.name)) > limit:
        raise BadInput(f"{out.name[:40]}...: the folder name has {len(os.fsencode(out.name))} bytes, more than "
                       f"the file system allows ({limit})", hint="choose a shorter -o")
    if os.path.islink(out):
        state = "dangling or looping " if not os.path.exists(out) else ""
        raise BadInput(f"{out}: is a {state}symbolic link; portx does not write through links",
                       hint="pass the real folder as -o, or another name")


def check_output(out, force: bool = False, protect=()) -> Path:
    """Fail early (BadInput, exit 2) when OUT may not be written or replaced (Note [output safety]).

    ``protect``: paths (the source model) that must never be inside a replaced OUT; other values are ignored.
    Example: ``check_output("out", force=True, protect=("model.pt2",))``.
    """
    out = Path(out)
    _check_name(out)
    try:
        target = out.resolve()
    except (OSError, RuntimeError) as exc:
        raise BadInput(f"{out}: cannot be resolved ({exc})", hint="choose another -o") from None
    if os.path.lexists(target):
        _refuse_place(out, target, protect)
        if not target.is_dir():
            raise BadInput(f"{out}: exists and is not a folder", hint="choose another -o")
        ok, why = is_portx_output(target)
        if not force:
            raise BadInput(f"{out}: already exists", hint="pass --force to replace it, or choose another -o" if ok
                           else f"choose another -o ({why}, so --force would not replace it either)")
        if not ok:
            raise BadInput(f"{out}: was not written by portx: {why}; --force replaces only portx's own output "
                           "folders", hint="move or delete it yourself, or choose another -o")
    _check_parent(target.parent)
    return out


def _check_parent(parent: Path):
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise BadInput(f"{existing}: is not a folder, so {parent} cannot be created", hint="choose another -o")
    if not os.access(existing, os.W_OK):
        raise BadInput(f"{existing}: is not writable", hint="choose an -o in a folder you can write")


def _prefix(name: str, tag: str, limit: int) -> str:
    """``.NAME.portx-TAG`` for tempfile.mkdtemp, with NAME cut so that the whole name fits in ``limit`` bytes."""
    room = limit - 8 - len(f"..portx-{tag}".encode())  # mkdtemp adds 8 random characters
    short = os.fsencode(name)[:max(room, 1)].decode("utf-8", errors="ignore") or "out"
    return f".{short}.portx-{tag}"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def staged_output(out, force: bool = False, protect=(), need=None, notes=None):
    """Yield a temporary folder beside ``out``; move it to ``out`` when the block succeeds (Note [output safety]).

    ``protect``: paths (the source model) that a replaced OUT must not hold. ``need``: roughly the bytes the
    output takes (or a callable giving them), named when the disk is full; by default the source files' size.
    ``notes``: a list that gets a line per stale staging folder removed beside ``out``.
    Example: ``with staged_output("out", force=True, protect=(src,)) as tmp: (tmp / "model.py").write_text(code)``.
    """
    out = check_output(out, force, protect)
    target = out.resolve()
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        removed = clean_stale_staging(target.parent)
        if notes is not None:
            notes.extend(removed)
        tmp = Path(tempfile.mkdtemp(prefix=_prefix(target.name, "", _name_max(target.parent)), dir=target.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # as a folder the user made: mkdtemp's are private
    except OSError as exc:
        _remove_empty(created)
        raise _write_failed(exc, out, 0, protect, need) from None
    try:
        write_marker(tmp)
        yield tmp
        _commit(tmp, target, out, force, protect)
    except BaseException as exc:
        written = folder_size(tmp)
        with _signals_deferred():  # a signal now must not cut the clean-up short
            shutil.rmtree(tmp, ignore_errors=True)
            _remove_empty(created)
        if isinstance(exc, Exception) and _full_errno(exc) is not None:
            raise _write_failed(exc, out, written, protect, need) from None
        raise


def _remove_empty(created):
    for folder in created:  # innermost first: only the folders this run made, if still empty
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def _signals_deferred():
    """Hold SIGINT/SIGTERM until the block is done (POSIX), so a rename pair is never cut in half."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _late_signal():
    """A SIGINT/SIGTERM that arrived while signals were held, or None."""
    held = signal.sigpending() & _STOP if hasattr(signal, "sigpending") else set()
    return min(held) if held else None


def _commit(tmp: Path, target: Path, out, force, protect):
    """Move ``tmp`` to ``target``, setting a replaced portx OUT aside until the move is done."""
    undone = None
    with _signals_deferred():
        if pending_signal() is not None:  # raised earlier and swallowed by a library: Note [signals]
            raise Interrupted(pending_signal())
        backup = _set_aside(target, out, force, protect) if force and os.path.lexists(target) else None
        try:
            _move(tmp, target, out)
            undone = _late_signal()
            if undone is not None:  # arrived during the move: put everything back as it was
                os.rename(target, tmp)
        except BaseException:
            if backup is not None and not os.path.lexists(target):
                os.rename(backup, target)
            raise
        if undone is not None and backup is not None:
            os.rename(backup, target)
    if undone is not None:
        raise Interrupted(undone)  # the held signal's handler has usually raised already
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def _set_aside(target: Path, out, force, protect) -> Path:
    """Rename the old OUT to a hidden sibling (after checking again that portx wrote it)."""
    check_output(out, force, protect)  # it may have changed while the model was converted
    backup = tempfile.mkdtemp(prefix=_prefix(target.name, "old-", _name_max(target.parent)), dir=target.parent)
    try:
        os.rename(target, backup)  # replaces the empty folder mkdtemp made
    except OSError as exc:
        os.rmdir(backup)
        raise BadInput(f"{out}: cannot be replaced ({exc.strerror})", hint="is it a mount point, or in use? "
                       "choose another -o") from None
    return Path(backup)


def _move(tmp: Path, target: Path, out):
    try:
        os.rename(tmp, target)  # fails when another process made a non-empty OUT meanwhile: no check-then-act
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise BadInput(f"{out}: already exists (written by another process while this one converted)",
                           hint="choose another -o, or pass --force to replace a portx output") from None
        raise


def _full_errno(exc):
    """ENOSPC, EFBIG or EDQUOT when ``exc`` (or an exception it wraps) says the disk or a limit is full."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return exc.errno
        for match in _FULL_TEXT.finditer(str(exc)):
            code = int(match.group(1)) if match.group(1) else next(e for e in _FULL if os.strerror(e) == match.group(0))
            if code in _FULL:
                return code
        exc = exc.__cause__ or exc.__context__
    return None


def _expected_bytes(need, protect) -> int:
    """``need`` (bytes, or a callable giving them), else the source files' size: the weights take about as much."""
    with contextlib.suppress(Exception):  # only a hint for the message
        return int(need() if callable(need) else need or 0) or sum(
            os.path.getsize(p) for p in protect if isinstance(p, (str, os.PathLike)) and os.path.isfile(p))
    return 0


def _write_failed(exc, out, written, protect, need=None):
    """BadInput for an OSError while making or filling OUT: a full disk names the sizes (Note [output safety])."""
    code = _full_errno(exc)
    if code is None:  # not a full disk: an unwritable or vanished parent
        return BadInput(f"{out}: cannot create the output folder ({getattr(exc, 'strerror', None) or exc})",
                        hint="choose an -o in a folder you can write")
    parent = Path(out).resolve().parent
    free = next((shutil.disk_usage(p).free for p in (parent, *parent.parents) if p.exists()), None)
    limit, expected = _fsize_limit(), _expected_bytes(need, protect)
    facts = ", ".join(([f"ulimit -f is {size_text(limit)}"] if limit else [])
                      + ([f"{size_text(free)} free"] if free is not None else []))
    needed = f"about {size_text(expected)}" if expected > written else f"more than {size_text(written)}"
    return BadInput(f"{out}: ran out of space while converting: {_FULL[code]} ({facts}); {size_text(written)} "
                    f"had been written to it, and the output needs {needed}",
                    hint="free some space (or raise the limit) and convert again; nothing was left behind")


def _fsize_limit():
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft
