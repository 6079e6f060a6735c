"""scripts/fuzz_campaign.py's bookkeeping: a run stopped by the signal that stops the campaign is logged as
interrupted, never as a violation, and left out of the counts (Note [interrupted runs])."""
import json

import click
from click.testing import CliRunner

from scripts.fuzz_campaign import outcome, summary
from tests.security.test_cli_specs_fuzz import check


@click.command()
@click.argument("code", type=int)
def _exits(code):
    """What portx's CLI does when SIGINT/SIGTERM arrives mid-run: one line, exit 128 + the signal."""
    if code:
        click.echo("portx: interrupted by SIGTERM; nothing was written and any previous output is untouched", err=True)
    raise SystemExit(code)


def test_a_sigterm_run_is_interrupted_not_a_violation(tmp_path):
    stopped = outcome(CliRunner().invoke(_exits, ["143"]), tmp_path, check)
    assert stopped["interrupted"] == "SIGTERM" and stopped["violation"] is None
    clean = outcome(CliRunner().invoke(_exits, ["0"]), tmp_path, check)
    assert clean["interrupted"] is None and clean["violation"] is None
    broken = outcome(CliRunner().invoke(_exits, ["70"]), tmp_path, check)
    assert broken["interrupted"] is None and broken["violation"]
    log = tmp_path / "log.jsonl"
    old = {**stopped, "interrupted": None, "violation": "portx: interrupted by SIGTERM"}  # a log from before the fix
    log.write_text("".join(json.dumps(r) + "\n" for r in (clean, clean, stopped, old)))
    text = summary(log)
    assert text.startswith("2 runs: exits {0: 2}") and "violations 0" in text, text
    assert "interrupted by SIGTERM" in text and "violation:" not in text, text
