"""Every code block in README.md and docs/*.md is tested (Note [tested docs]).

Note [tested docs]: a fence says its language. Each ``python`` block runs as it stands, in a fresh interpreter,
in a temporary folder holding the files the pages name (tests/support/doc_fixtures.py: ``model.pt2``,
``model.keras``, ``model.onnx``, a Hugging Face folder, ...) and ``out/`` (``model.pt2`` converted with
``--export-tpu --explore``), so every block is one a reader can paste; a block after ``<!-- docs-test: pytest
FILE -->`` is written to FILE and run by pytest there. ``bash`` and ``yaml`` blocks: every ``portx`` command is
parsed by the real click commands (an unknown option, a bad value or a missing argument fails) and then run, the
block's commands in order in one such folder, and must exit 0 (``portx explore`` must print its URL; it is then
stopped); every ``./scripts/...`` named exists, every ``pip install 'portx[extra]'`` names an extra
pyproject.toml declares. ``text`` blocks are output shown as printed, not code. docs/cli.md must equal what
scripts/cli_reference.py writes, and docs/api.md names everything ``portx`` exports.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import click
import pytest
import yaml

from portx.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LANGUAGES = {"python", "bash", "yaml", "text", "json", "toml"}
FENCE = re.compile(r"^\s*```(\S*)\s*$")
DIRECTIVE = re.compile(r"<!-- docs-test: (\w+)\s*(.*?)\s*-->")


def blocks(page: Path) -> list[dict]:
    """Each fenced block: language, text, first line number and the docs-test directive just above it."""
    found, current, directive = [], None, None
    for number, line in enumerate(page.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if current is None and fence:
            current = {"lang": fence.group(1), "lines": [], "line": number, "directive": directive}
        elif current is not None and line.strip().startswith("```"):
            found.append({**current, "text": textwrap.dedent("\n".join(current.pop("lines")))})
            current, directive = None, None
        elif current is not None:
            current["lines"].append(line)
        elif line.strip():
            match = DIRECTIVE.search(line)
            directive = match.groups() if match else None
    return found


def _where(page, block) -> str:
    return f"{page.relative_to(ROOT)}:{block['line']}"


def _split(line: str) -> list[list[str]]:
    """One shell line as commands: split at ``|``, ``&&``, ``;``, redirections and their targets dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands, current, skip = [], [], False
    for token in lexer:
        if token in ("|", "&&", "||", ";"):
            commands, current = commands + [current], []
        elif token in (">", ">>", "<", "2>"):
            skip = True
        elif not skip:
            current.append(token)
        else:
            skip = False
    return [c for c in commands + [current] if c]


def _commands(text: str) -> list[list[str]]:
    """Shell commands of a block: comments dropped, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [argv for line in joined.splitlines() if line.strip() for argv in _split(line)]


def parse_portx(argv: list[str]):
    """Parse a ``portx ...`` command with the real click commands, invoking nothing; raises on a bad command."""
    name, *rest = argv
    command = main.get_command(click.Context(main), name)
    if command is None:
        raise click.UsageError(f"no command {name!r}")
    with command.make_context(f"portx {name}", list(rest), resilient_parsing=False) as ctx:
        return ctx.params


def _extras() -> set:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def check_command(argv: list[str]):
    if not argv:
        return
    if argv[0] == "portx":
        parse_portx(argv[1:])
    elif argv[0].startswith("./scripts/") or argv[0].startswith(".venv/bin/python"):
        script = argv[0] if argv[0].startswith("./") else argv[1]
        assert (ROOT / script).exists(), f"{script} does not exist"
    elif argv[:2] == ["pip", "install"]:
        for spec in argv[2:]:
            for extra in re.findall(r"portx\[([\w,-]+)\]", spec):
                assert set(extra.split(",")) <= _extras(), f"{spec}: no such extra"


def _shell_lines(block) -> list:
    if block["lang"] == "bash":
        return _commands(block["text"])
    steps = yaml.safe_load(block["text"])["jobs"]
    runs = [step["run"] for job in steps.values() for step in job["steps"] if "run" in step]
    return [argv for run in runs for argv in _commands(run)]


def _block_id(value) -> str:
    return value.name if isinstance(value, Path) else str(value["line"])


def all_blocks(lang=None):
    return [(page, block) for page in PAGES for block in blocks(page) if lang in (None, block["lang"])]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_names_a_known_language(page):
    bad = [_where(page, b) for b in blocks(page) if b["lang"] not in LANGUAGES]
    assert not bad, f"fences without a language (or an unknown one): {bad}"


@pytest.mark.parametrize("page,block", [pb for pb in all_blocks() if pb[1]["lang"] in ("bash", "yaml")],
                         ids=_block_id)
def test_shell_commands_parse(page, block):
    for argv in _shell_lines(block):
        try:
            check_command(argv)
        except (click.ClickException, AssertionError) as exc:
            pytest.fail(f"{_where(page, block)}: {shlex.join(argv)}: {exc}")


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """The files the pages name (tests/support/doc_fixtures.py) and ``out/``: ``model.pt2`` converted with
    ``--export-tpu --explore``."""
    folder = tmp_path_factory.mktemp("docs")
    subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "doc_fixtures.py"), str(folder)],
                   env=_env(), check=True, capture_output=True, timeout=900)
    portx = Path(sys.executable).parent / "portx"
    subprocess.run([str(portx), "convert", "model.pt2", "-o", "out/", "--export-tpu", "--explore",
                    "--no-shard-proof"], cwd=folder, env=_env(), check=True, capture_output=True, timeout=900)
    return folder


def _env() -> dict:
    """The pages' commands run as a user's would: Keras on JAX, one CPU device, portx from this checkout, and the
    repository on the path (``full.pt`` pickles ``samples.make_samples.TinyCNN``)."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
           "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    return env


def _workdir(fixtures, tmp_path, converted=True):
    """A copy of the fixtures; without ``converted``, no ``out/`` (a shell block writes its own, as a reader
    running it in a fresh folder would)."""
    shutil.copytree(fixtures, tmp_path, dirs_exist_ok=True, ignore=None if converted else
                    lambda folder, names: ["out"] if Path(folder) == fixtures else [])
    return tmp_path


def _script(block) -> str:
    directive = block["directive"] or ("run", "")
    if directive[0] != "pytest":
        return block["text"]
    path = f"pathlib.Path({directive[1]!r})"
    return (f"import pathlib, subprocess, sys\n{path}.parent.mkdir(parents=True, exist_ok=True)\n"
            f"{path}.write_text({block['text'] + chr(10)!r})\n"
            f"subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', {directive[1]!r}], "
            "check=True)")


@pytest.mark.parametrize("page,block", all_blocks("python"), ids=_block_id)
def test_python_blocks_run(page, block, fixtures, tmp_path):
    cwd = _workdir(fixtures, tmp_path)
    run = subprocess.run([sys.executable, "-c", _script(block)], cwd=cwd, env=_env(), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, f"{_where(page, block)}: the block failed:\n{(run.stdout + run.stderr)[-3000:]}"


#: sources only the [tf] extra reads (CI installs it; without it the block that reads them is skipped)
NEEDS_TF = {"saved_model_dir/", "legacy_tf_keras.h5"}


def _portx_lines(block) -> list:
    return [argv for argv in _shell_lines(block) if argv[:1] == ["portx"]]


@pytest.mark.parametrize("page,block", [pb for pb in all_blocks() if pb[1]["lang"] in ("bash", "yaml")
                                        and _portx_lines(pb[1])], ids=_block_id)
def test_portx_commands_run_on_fixtures(page, block, fixtures, tmp_path):
    """Every ``portx`` command of a block runs as written, in order, in one folder holding the fixtures, and exits
    0 (``explore``: it serves and prints its URL, then is stopped)."""
    cwd = _workdir(fixtures, tmp_path, converted=False)
    commands = _portx_lines(block)
    if NEEDS_TF & {arg for argv in commands for arg in argv} and not (fixtures / "saved_model_dir").exists():
        pytest.skip("the [tf] extra is not installed (pip install 'portx[tf]')")
    portx = Path(sys.executable).parent / "portx"
    for argv in commands:
        source = argv[2] if len(argv) > 2 and not argv[2].startswith("-") else None
        assert source is None or (cwd / source).exists(), \
            f"{_where(page, block)}: {shlex.join(argv)}: no {source}: add it to tests/support/doc_fixtures.py"
        if argv[1] == "explore":
            _serves(page, block, [str(portx), *argv[1:]], cwd)
            continue
        run = subprocess.run([str(portx), *argv[1:]], cwd=cwd, env=_env(), capture_output=True, text=True,
                             timeout=900)
        assert run.returncode == 0, f"{_where(page, block)}: {shlex.join(argv)}: exit {run.returncode}\n" \
                                    f"{(run.stdout + run.stderr)[-2000:]}"


def _serves(page, block, command, cwd):
    proc = subprocess.Popen(command, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        seen, deadline = [], time.monotonic() + 300
        while time.monotonic() < deadline and not any("http://127.0.0.1:" in line for line in seen):
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
        assert any("http://127.0.0.1:" in line for line in seen), \
            f"{_where(page, block)}: {shlex.join(command[1:])} printed no URL: {''.join(seen)[-2000:]}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_reference_is_current():
    sys.path.insert(0, str(ROOT / "scripts"))
    from cli_reference import PAGE, reference

    assert PAGE.read_text() == reference(), "docs/cli.md is stale: run scripts/cli_reference.py"


def test_the_api_page_names_everything_portx_exports():
    """docs/api.md is the Python API's page: each name of ``portx.__all__`` appears there in code (backticks)."""
    import portx

    text = (ROOT / "docs" / "api.md").read_text()
    missing = [name for name in portx.__all__ if not re.search(rf"`[^`\n]*\b{re.escape(name)}\b[^`\n]*`", text)]
    assert not missing, f"docs/api.md does not name {missing}: say what each is and does"
