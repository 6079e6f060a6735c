"""Fixtures shared by the security tests. Each module defines its own ``source`` (a .pt2 path)."""
import pytest
from click.testing import CliRunner

from portx.cli import main


@pytest.fixture(scope="module")
def converted(source, tmp_path_factory):
    """A real portx OUT (keras-jax) of the module's ``source``; tests that replace one copy it."""
    out = tmp_path_factory.mktemp("conv") / "out"
    run = CliRunner().invoke(main, ["convert", str(source), "-o", str(out), "--no-verify"])
    assert run.exit_code == 0, run.output
    return out
