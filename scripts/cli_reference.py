"""Write docs/cli.md, the command-line reference, from the click commands themselves.

Run after changing an option: ``.venv/bin/python scripts/cli_reference.py``; tests/test_docs.py fails when the
checked-in page differs from what this writes, so the reference cannot drift from the code.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"

HEAD = """# Command-line reference

Generated from the click commands by `scripts/cli_reference.py` (a test checks it is current); the user guide
(`docs/guide.md`) shows the commands at work. Exit codes are the same for every command: 0 done (and verified),
1 verification failed (the artifacts are written), 2 bad input or usage, 3 unsupported ops, 4 not TPU-legal under
`--strict-tpu`, 130/143 interrupted (nothing written, a previous OUT untouched), 70 a bug in portx.
"""


def _names(param) -> str:
    names = ", ".join(f"`{n}`" for n in param.opts + param.secondary_opts)
    if param.metavar:
        return f"{names} {param.metavar}"
    if isinstance(param.type, click.Choice):
        return names + " " + " \\| ".join(param.type.choices)
    if not param.is_flag and param.type.name != "boolean":
        return f"{names} {param.type.name.upper()}"
    return names


def _default(param) -> str:
    if not param.show_default or param.default in (None, False, ()):
        return ""
    return f" (default: `{param.default}`)"


def _option_row(param) -> str:
    help_text = " ".join((param.help or "").replace("|", "\\|").split())
    return f"| {_names(param)} | {help_text}{_default(param)} |"


def _command(name: str, command: click.Command) -> list[str]:
    args = " ".join(p.name.upper() for p in command.params if isinstance(p, click.Argument))
    lines = [f"## `portx {name}`", "", f"`portx {name} [OPTIONS] {args}`".replace("  ", " ").replace(" `", "`"), ""]
    lines += [" ".join((command.help or "").strip().split("\n\n")[0].split()), ""]
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    if options:
        lines += ["| option | meaning |", "|---|---|"] + [_option_row(p) for p in options] + [""]
    return lines


def reference() -> str:
    """The page's text: one section per command, in the order ``portx --help`` lists them."""
    sys.path.insert(0, str(ROOT / "src"))
    from portx.cli import main

    lines = [HEAD]
    for name in main.list_commands(click.Context(main)):
        lines += _command(name, main.get_command(click.Context(main), name))
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    PAGE.write_text(reference())
    print(f"wrote {PAGE.relative_to(ROOT)}")
