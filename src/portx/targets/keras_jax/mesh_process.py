"""One child process with a mesh's CPU devices, started once and reused by every mesh proof of this process.

Note [reused mesh process]: a proof whose mesh has more devices than this process's JAX runs in a child started
with ``--xla_force_host_platform_device_count`` (Note [mesh proof devices] in mesh_proof.py). Starting it is
mostly importing JAX, Keras and portx (3.4 s of CPU), paid by every CLI conversion (``--mesh`` is on by default):
five CLI conversions of tests/test_cli.py and tests/test_progress.py spent 38-53 s each in the proof on a loaded
2-core machine (2026-12-05), and 2.3-4.9 s each after the first (31 s) with the child reused. So the child stays:
it reads one JSON request a line from its stdin and answers with one line that starts with ``MARK`` (other
output, Keras' or XLA's, is skipped). One child per device count; it ends when this process closes its stdin (at exit, or
when a request fails or runs past its timeout, and the next request starts a fresh one).

Example:
    >>> answer = ask("portx.targets.keras_jax.mesh_proof", 8, {"folder": "out/", ...}, timeout=600)
"""
from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["ask", "stop_all", "MARK"]

MARK = "portx-mesh-answer "
_CHILDREN = {}  # (module, devices) -> (Popen, answers queue, stderr file)
_LOCK = threading.Lock()


def _start(module, devices):
    flags = os.environ.get("XLA_FLAGS", "")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "KERAS_BACKEND": "jax",
           "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={devices}".strip(),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[3])] + sys.path)}
    stderr = tempfile.TemporaryFile(mode="w+")
    child = subprocess.Popen([sys.executable, "-m", module, "--serve"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1)
    answers = queue.Queue()
    threading.Thread(target=_read, args=(child.stdout, answers), daemon=True, name="portx-mesh-reader").start()
    return child, answers, stderr


def _read(stdout, answers):
    """Put each answer line (and None at the child's end) on ``answers``."""
    for line in stdout:
        if line.startswith(MARK):
            answers.put(line[len(MARK):])
    answers.put(None)


def _stop(key):
    """End the child of ``key`` (EOF on its stdin, then a kill after 10 s) and close its stderr file."""
    child, _, stderr = _CHILDREN.pop(key)
    if child.poll() is None:
        try:
            child.stdin.close()
            child.wait(timeout=10)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()
    stderr.close()


def _stderr_tail(stderr) -> str:
    stderr.seek(0)
    return (stderr.read().strip().splitlines() or ["no output"])[-1][:300]


def ask(module, devices, request: dict, timeout) -> dict:
    """``request``'s answer from the child (``python -m module --serve`` with ``devices`` CPU devices), started
    now if none runs; a failed verdict where the child dies or runs past ``timeout`` seconds."""
    key = (module, devices)
    with _LOCK:
        if key in _CHILDREN and _CHILDREN[key][0].poll() is not None:
            _stop(key)
        if key not in _CHILDREN:
            _CHILDREN[key] = _start(module, devices)
        child, answers, stderr = _CHILDREN[key]
        try:
            child.stdin.write(json.dumps(request) + "\n")
            child.stdin.flush()
            line = answers.get(timeout=timeout)
        except queue.Empty:
            _stop(key)
            return {"verdict": "failed", "problems": [f"the mesh proof ran past {timeout} s"]}
        except BrokenPipeError:
            line = None
        if line is not None:
            return json.loads(line)
        child.wait()  # the child died: its last line of stderr says why
        problem = f"the mesh proof's process failed: {_stderr_tail(stderr)}"
        _stop(key)
        return {"verdict": "failed", "problems": [problem]}


@atexit.register
def stop_all():
    """End every child now (a benchmark then reads their peak RSS from ``RUSAGE_CHILDREN``)."""
    with _LOCK:
        for key in list(_CHILDREN):
            _stop(key)
