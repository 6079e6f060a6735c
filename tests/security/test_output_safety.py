"""OUT safety (issue 10, items 4-7; the rules are Note [output safety] in outputs/__init__.py): --force replaces only
portx's own folders; links, long names, races, signals and full disks never lose a file, leave a temp or exit 70."""
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from portx.cli import main
from portx.errors import BadInput, Interrupted
from portx.outputs import MARKER, handling_signals, is_portx_output, staged_output

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links, signals and rlimits")

PORTX = [sys.executable, "-m", "portx.cli"]
ENV = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}


def _pt2(path, features=8, hidden=16):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 4)).eval()
    torch.export.save(torch.export.export(model, (torch.randn(2, features),)), path)
    return path


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _snapshot(folder) -> dict:
    """Every file under ``folder`` (links as their target text): compared byte for byte before and after."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_file():
                found[rel] = path.read_bytes()
    return found


def _temps(folder) -> list:
    return [p.name for p in Path(folder).iterdir() if ".portx-" in p.name]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return _pt2(tmp_path_factory.mktemp("src") / "model.pt2")


def _portx_out(converted, dest):
    shutil.copytree(converted, dest, symlinks=True)
    return dest


# ---- --force refuses what portx did not write (each: exit 2, one portx: line, nothing changed) ----

def _holds_source(tmp, converted, source):
    proj = _portx_out(converted, tmp / "proj")
    shutil.copy(source, proj / "model.pt2")
    return proj, proj / "model.pt2", "holds the source"


def _source_through_link(tmp, converted, source):
    proj = _portx_out(converted, tmp / "proj")
    shutil.copy(source, proj / "real.pt2")
    (tmp / "link.pt2").symlink_to(proj / "real.pt2")
    return proj, tmp / "link.pt2", "holds the source"


def _user_folder(tmp, converted, source):
    (tmp / "mine").mkdir()
    (tmp / "mine" / "keep.txt").write_text("mine")
    return tmp / "mine", source, r"was not written by portx: it holds files portx did not write \(keep.txt\)"


def _portx_out_plus_notes(tmp, converted, source):
    out = _portx_out(converted, tmp / "out")
    (out / "notes.txt").write_text("my notes")
    return out, source, "notes.txt"


def _report_json_and_a_subfolder(tmp, converted, source):
    (tmp / "out" / "data").mkdir(parents=True)
    (tmp / "out" / "report.json").write_text("{}")
    (tmp / "out" / "data" / "x.bin").write_bytes(b"x")
    return tmp / "out", source, r"holds files portx did not write \(data\)"


def _explorer_folder_with_a_user_file(tmp, converted, source):
    out = _portx_out(converted, tmp / "out")
    (out / "explorer").mkdir()
    (out / "explorer" / "graph.json").write_text("{}")
    (out / "explorer" / "my_layout.txt").write_text("mine")
    return out, source, r"holds files portx did not write \(explorer\)"


def _portx_names_no_marker(tmp, converted, source):
    (tmp / "out").mkdir()
    (tmp / "out" / "model.py").write_text("# my own model.py")
    return tmp / "out", source, "has no .portx-output or report.json"


def _model_py_is_a_link(tmp, converted, source):
    out = _portx_out(converted, tmp / "out")
    (tmp / "precious.py").write_text("keep me")
    (out / "model.py").unlink()
    (out / "model.py").symlink_to(tmp / "precious.py")
    return out, source, r"portx did not write \(model.py\)"


def _link_to_portx_out(tmp, converted, source):
    real = _portx_out(converted, tmp / "real")
    (tmp / "out").symlink_to(real)
    return tmp / "out", source, "is a symbolic link"


def _dangling_link(tmp, converted, source):
    (tmp / "out").symlink_to(tmp / "nowhere")
    return tmp / "out", source, "is a dangling or looping symbolic link"


def _link_loop(tmp, converted, source):
    (tmp / "out").symlink_to(tmp / "other")
    (tmp / "other").symlink_to(tmp / "out")
    return tmp / "out", source, "is a dangling or looping symbolic link"


def _self_loop(tmp, converted, source):
    (tmp / "out").symlink_to("out")
    return tmp / "out", source, "looping symbolic link"


def _a_file(tmp, converted, source):
    (tmp / "out").write_text("a file")
    return tmp / "out", source, "exists and is not a folder"


def _name_too_long(tmp, converted, source):
    return tmp / ("n" * 300), source, "more than the file system allows"


def _dot_dot(tmp, converted, source):
    return tmp / "sub" / "..", source, "does not name a new folder"


REFUSED = [_holds_source, _source_through_link, _user_folder, _portx_out_plus_notes, _report_json_and_a_subfolder,
           _explorer_folder_with_a_user_file, _portx_names_no_marker, _model_py_is_a_link, _link_to_portx_out,
           _dangling_link, _link_loop, _self_loop, _a_file, _name_too_long, _dot_dot]


@pytest.mark.parametrize("force", [True, False], ids=["force", "plain"])
@pytest.mark.parametrize("make", REFUSED, ids=[f.__name__.strip("_") for f in REFUSED])
def test_out_that_portx_did_not_write_is_refused(tmp_path, converted, source, make, force):
    out, src, expected = make(tmp_path, converted, source)
    before = _snapshot(tmp_path)
    run = _run("convert", src, "-o", out, "--no-verify", *(["--force"] if force else []))
    assert run.exit_code == 2, run.output
    assert run.stderr.startswith("portx: ") and len(run.stderr.splitlines()) == 1, run.stderr
    assert re.search(expected, run.stderr) or (not force and "already exists" in run.stderr), run.stderr
    assert _snapshot(tmp_path) == before and not _temps(tmp_path)


@pytest.mark.parametrize("where", ["cwd", "cwd_parent", "home", "dot"])
def test_cwd_its_parents_and_home_are_never_replaced(tmp_path, converted, source, monkeypatch, where):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    (work / "thesis.tex").write_text("years of work")
    home = tmp_path / "home"
    _portx_out(converted, home)  # even a folder that looks like portx output
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    out = {"cwd": work, "cwd_parent": tmp_path / "a", "home": home, "dot": "."}[where]
    before = _snapshot(tmp_path)
    run = _run("convert", source, "-o", out, "--force", "--no-verify")
    assert run.exit_code == 2, run.output
    expected = {"cwd": "is the current folder", "cwd_parent": "or one of its parents", "home": "your home folder",
                "dot": "does not name a new folder"}[where]
    assert expected in run.stderr and len(run.stderr.splitlines()) == 1
    assert _snapshot(tmp_path) == before


# ---- what --force does replace ----

@pytest.mark.parametrize("kind", ["marker", "legacy", "empty", "explore"])
def test_force_replaces_portx_output_and_empty_folders(tmp_path, converted, source, kind):
    out = tmp_path / "out"
    if kind == "empty":
        out.mkdir()
    else:
        _portx_out(converted, out)
        (out / "__pycache__").mkdir(exist_ok=True)
        (out / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    if kind == "legacy":  # written before the marker existed: report.json and portx's files only
        (out / MARKER).unlink()
    if kind == "explore":  # --explore's folder of Model Explorer files
        (out / "explorer").mkdir()
        for name in ("graph.json", "node_data_tpu.json", "node_data_error.json"):
            (out / "explorer" / name).write_text("{}")
    run = _run("convert", source, "-o", out, "--force", "--no-verify")
    assert run.exit_code == 0, run.output
    assert is_portx_output(out) == (True, "") and (out / MARKER).is_file()
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "model.py", "model.weights.json",
                                                     "model_00000.weights.h5", "report.html", "report.json"]
    assert not _temps(tmp_path)


def test_an_out_name_too_long_for_the_temporary_name_converts(tmp_path, source):
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    out = tmp_path / ("o" * (limit - 5))  # ".NAME.portx-XXXXXXXX" would not fit
    assert _run("convert", source, "-o", out, "--no-verify").exit_code == 0
    run = _run("convert", source, "-o", out, "--force", "--no-verify")  # the backup name is shortened too
    assert run.exit_code == 0, run.output
    assert (out / "model.py").is_file() and not _temps(tmp_path)


# ---- races: exactly one of two conversions to the same new OUT wins ----

def _stage(out, tag, force, barrier, results):
    try:
        with staged_output(out, force) as tmp:
            (tmp / "model.py").write_text(f"# {tag}\n")
            (tmp / "report.json").write_text("{}")
            barrier.wait(timeout=10)  # both are staged before either moves into place
        results[tag] = "won"
    except BadInput as exc:
        results[tag] = str(exc)


@pytest.mark.parametrize("round_", range(3))
def test_two_threads_staging_the_same_new_out_give_one_winner(tmp_path, round_):
    out, barrier, results = tmp_path / "out", threading.Barrier(2), {}
    threads = [threading.Thread(target=_stage, args=(out, tag, False, barrier, results)) for tag in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert list(results.values()).count("won") == 1, results
    winner, loser = sorted(results, key=lambda tag: results[tag] != "won")
    assert "already exists" in results[loser], results
    assert (out / "model.py").read_text() == f"# {winner}\n" and not _temps(tmp_path)


def test_two_real_processes_racing_for_one_out(tmp_path, source):
    out = tmp_path / "out"
    procs = [subprocess.Popen([*PORTX, "convert", str(source), "-o", str(out), "--no-verify"], env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    runs = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in runs)
    assert codes == [0, 2], runs
    loser = next(err for code, err in runs if code == 2)
    assert "already exists" in loser and "Traceback" not in loser
    assert is_portx_output(out) == (True, "") and not _temps(tmp_path)


# ---- signals: 130 / 143, the previous OUT byte for byte, no temporary folder ----

SLOW_COMMIT = """
import contextlib, os, sys, time
import portx.api, portx.outputs, portx.session.conversion
real = portx.outputs.staged_output

@contextlib.contextmanager
def slow(*args, **kwargs):
    with real(*args, **kwargs) as tmp:
        yield tmp
        print("test: all files written", file=sys.stderr, flush=True)
        try:
            time.sleep(60)
        except BaseException:  # with SWALLOW, as a library catching everything would: the signal must still win
            if not os.environ.get("SWALLOW"):
                raise

portx.session.conversion.staged_output = slow
from portx.cli import main
main()
"""


@pytest.fixture(scope="module")
def slow_commit(tmp_path_factory):
    """A portx CLI that waits 60 s after writing every file, before the final move: the worst moment to stop."""
    script = tmp_path_factory.mktemp("bin") / "slow_commit.py"
    script.write_text(SLOW_COMMIT)
    return [sys.executable, str(script)]


def _interrupt(cmd, argv, sig, wait_for, swallow=False):
    proc = subprocess.Popen([*cmd, *map(str, argv)], env={**ENV, "SWALLOW": "1" if swallow else ""}, text=True,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.strip().startswith(wait_for):
            proc.send_signal(sig)
            break
    return proc.wait(timeout=60), "".join(seen) + proc.stderr.read()


CASES = [(signal.SIGINT, "load", True), (signal.SIGTERM, "load", True), (signal.SIGINT, "load", False),
         (signal.SIGTERM, "test: all files written", True), (signal.SIGINT, "test: all files written", False)]


@pytest.mark.parametrize("sig, wait_for, force", CASES,
                         ids=[f"{s.name}-{w.split()[-1]}-{'force' if f else 'new'}" for s, w, f in CASES])
def test_signal_mid_conversion_keeps_the_previous_out(tmp_path, converted, source, slow_commit, sig, wait_for, force):
    out = tmp_path / "out"
    if force:
        _portx_out(converted, out)
    before = _snapshot(tmp_path)
    cmd = slow_commit if wait_for.startswith("test:") else PORTX
    code, err = _interrupt(cmd, ["convert", source, "-o", out, *(["--force"] if force else [])], sig, wait_for)
    assert code == 128 + sig, err
    assert f"portx: interrupted by {sig.name}" in err and "Traceback" not in err
    assert _snapshot(tmp_path) == before and not _temps(tmp_path)


def test_a_swallowed_interrupt_still_stops_the_final_move(tmp_path, converted, source, slow_commit):
    out = _portx_out(converted, tmp_path / "out")
    before = _snapshot(out)
    code, err = _interrupt(slow_commit, ["convert", source, "-o", out, "--force"], signal.SIGTERM,
                           "test: all files written", swallow=True)
    assert code == 143, err
    assert _snapshot(out) == before and not _temps(tmp_path)


def test_remembered_signal_aborts_the_move_in_process(tmp_path, converted):
    out = _portx_out(converted, tmp_path / "out")
    before = _snapshot(out)
    with handling_signals() as seen, pytest.raises(Interrupted) as info:
        with staged_output(out, force=True) as tmp:
            (tmp / "model.py").write_text("# new")
            seen.append(signal.SIGTERM)  # what the handler records when a library swallows its exception
    assert info.value.exit_code == 143
    assert _snapshot(out) == before and not _temps(tmp_path)


# ---- full disk and ulimit -f ----

class Folded(nn.Module):
    """A 10 kB .pt2 whose constant folds into 256 kB of weights: only OUT's weights file passes the limit."""

    def forward(self, x):
        return x @ (torch.arange(256 * 256, dtype=torch.float32).reshape(256, 256) / 65536.0)


# resource limits are set in the child itself: a preexec_fn would fork this multithreaded (JAX) process
LIMITED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({0}, {0})); "
           "sys.argv[0] = 'portx'; runpy.run_module('portx.cli', run_name='__main__')")


@pytest.mark.parametrize("force", [False, True], ids=["new", "force"])
def test_ulimit_f_exits_2_naming_out_and_sizes(tmp_path, converted, force):
    src = tmp_path / "folded.pt2"
    torch.export.save(torch.export.export(Folded().eval(), (torch.randn(2, 256),)), src)
    out = tmp_path / "out"
    if force:
        _portx_out(converted, out)
    before = _snapshot(tmp_path)
    proc = subprocess.run([sys.executable, "-c", LIMITED.format(64_000), "convert", str(src), "-o", str(out),
                           *(["--force"] if force else [])], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("portx:")]
    assert len(lines) == 1 and f"{out}: ran out of space" in lines[0], proc.stderr
    assert "file size limit (ulimit -f is 64.0 kB" in lines[0] and "the output needs" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert _snapshot(tmp_path) == before and not _temps(tmp_path)


@pytest.mark.parametrize("error, expected", [
    (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "the disk quota is used up"),
    (RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)"), "the disk is full"),
    (RuntimeError("Can't write data (errno = 27, error message = 'File too large')"), "file size limit"),
], ids=["enospc", "edquot", "wrapped-rust", "wrapped-hdf5"])
def test_full_disk_inside_the_block_is_bad_input(tmp_path, source, error, expected):
    out = tmp_path / "out"
    with pytest.raises(BadInput, match=expected) as info:
        with staged_output(out, protect=(source,)) as tmp:
            (tmp / "model.weights.h5").write_bytes(b"\0" * 4800)  # and the marker: about 150 bytes
            raise error
    assert f"{out}: ran out of space" in str(info.value) and "4.9 kB had been written" in str(info.value)
    assert "the output needs about" in str(info.value)  # the source's size: the weights take about as much
    assert not out.exists() and not _temps(tmp_path)


def test_other_errors_pass_through_and_clean_up(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with staged_output(tmp_path / "a" / "out") as tmp:
            (tmp / "model.py").write_text("x")
            1 / 0
    assert not (tmp_path / "a").exists()
