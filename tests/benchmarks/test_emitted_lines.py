"""benchmarks/emitted_lines.py: ``--help`` lists the models, and a model whose process fails or dies is one row
with the reason while the table goes on (Note [one model per process]).

Example:
    pytest tests/benchmarks/test_emitted_lines.py
"""
import sys
from pathlib import Path

import pytest

from portx.targets.codegen import import_by_path

BENCH = import_by_path(Path(__file__).resolve().parents[2] / "benchmarks" / "emitted_lines.py")


def test_help_lists_every_model(capsys):
    with pytest.raises(SystemExit):
        BENCH.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in BENCH.MODELS)


def test_an_unknown_model_is_named(capsys):
    with pytest.raises(SystemExit) as exc:
        BENCH.main(["--models", "vit,resnet5"])
    assert exc.value.code == 2 and "unknown resnet5; choose from resnet50" in capsys.readouterr().err


@pytest.mark.parametrize("code, expected", [
    ("print('row one', flush=True); import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
     ["row one", "m                   -            failed: killed by SIGKILL (out of memory?)"]),
    ("print('row one'); raise SystemExit('MemoryError: out of memory')",
     ["row one", "m                   -            failed: exit 1: MemoryError: out of memory"]),
    ("import sys; sys.stderr.write('x' * 200_000); print('a'); print('b')", ["a", "b"]),
], ids=["killed", "exit", "chatty-stderr"])
def test_a_child_that_dies_is_one_row_with_the_reason(code, expected):
    assert list(BENCH.rows_in_child("m", [sys.executable, "-c", code])) == expected


def test_a_model_that_raises_is_one_row(monkeypatch, capsys):
    def broken():
        raise ValueError("no such layer\nsecond line")

    monkeypatch.setitem(BENCH.MODELS, "broken", (broken, ("keras-jax",)))
    assert BENCH._one("broken") == 0
    assert capsys.readouterr().out == "broken              -            failed: ValueError: no such layer\n"
