"""The fuzz campaign: N random runs of one fuzzer, every outcome counted instead of stopping at the first failure.

The fuzzers' own tests (tests/security/test_*_fuzz.py) stop and shrink at the first bad run; a campaign runs the
same draws (the tests' ``fuzz_*`` functions) ``RUNS`` times and writes one JSON line per run, so the counts of
exit codes, tracebacks and distinct exit-70 causes can be reported. Run it at low priority:

    KERAS_BACKEND=jax PYTHONPATH=src:. nice -n 19 .venv/bin/python scripts/fuzz_campaign.py pt2-convert 1000 \\
        --log fuzz-pt2-convert.jsonl

Fuzzers: pt2-inspect, pt2-convert (model.json and the weights/constants configs mutated), keras-names (hostile
layer names through both targets with the gradient check), keras-config (``.keras`` config.json mutated, through
``convert --to torch-xla``), cli-specs (``--input`` / ``--dynamic`` strings).
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st


def _fuzzer(name, folder):
    """(``run(data, workdir) -> CliRunner result``, the test's ``check(run, workdir)``) of fuzzer ``name``; its
    fixtures built once in ``folder``."""
    if name.startswith("pt2-"):
        from tests.security.test_torch_fuzz import check, fuzz_pt2
        from tests.support.pt2_hostile import export_small

        clean = export_small(folder / "model.pt2")
        return (lambda data, work: fuzz_pt2(data, work, clean, name[len("pt2-"):])), check
    if name == "keras-names":
        from tests.security.test_keras_names_fuzz import check, fuzz_names

        return fuzz_names, check
    if name == "keras-config":
        from tests.security.test_keras_fuzz import base_models, check, fuzz_config

        bases = base_models(folder)
        return (lambda data, work: fuzz_config(data, work, bases)), check
    from tests.security.test_cli_specs_fuzz import check, fuzz_specs, sources

    found = sources(folder)
    return (lambda data, work: fuzz_specs(data, work, found)), check


#: Note [interrupted runs]: SIGINT/SIGTERM sent to the campaign lands in the run under way, whose portx exits 130 /
#: 143 as it should ("interrupted by SIGTERM; nothing was written"). That is the campaign being stopped, not a
#: finding: the run is logged as ``interrupted`` (no violation), left out of the counts, and the campaign stops.
INTERRUPTED = {130: "SIGINT", 143: "SIGTERM"}


def outcome(run, workdir, check) -> dict:
    """One run's record: exit code, whether a traceback or a payload showed, the last output line, and what the
    fuzzer's test would have failed on (``violation``: its ``check``'s assertion, or None); a run a signal stopped
    is ``interrupted`` (Note [interrupted runs]), never a violation."""
    escaped = run.exception if run.exception is not None and not isinstance(run.exception, SystemExit) else None
    lines = [line for line in run.output.splitlines() if line.strip()]
    interrupted = INTERRUPTED.get(run.exit_code) if escaped is None else None
    try:
        violation = None
        if not interrupted:
            check(run, workdir)
    except AssertionError as exc:
        violation = str(exc).splitlines()[-1][:300] if str(exc).strip() else "assertion"
    return {"exit": run.exit_code, "interrupted": interrupted, "escaped": type(escaped).__name__ if escaped else None,
            "traceback": "Traceback" in run.output or "Logging error" in run.output,
            "payload_ran": (workdir / "marker").exists() or (workdir / "MARKER").exists(),
            "violation": violation, "last": lines[-1][:300] if lines else ""}


def campaign(name, runs, log):
    """Run fuzzer ``name`` ``runs`` times, one JSON line per run in ``log``; the Counter of exit codes, with
    ``"interrupted"`` (130 / 143) when a signal stopped the campaign (Note [interrupted runs])."""
    folder = Path(tempfile.mkdtemp(prefix="portx-fuzz-"))
    run_one, check = _fuzzer(name, folder)
    counts = collections.Counter()

    class Recorded:
        """``data`` that remembers what it drew, so a log line can be replayed by hand."""

        def __init__(self, data):
            self.data, self.draws = data, []

        def draw(self, strategy, label=None):
            value = self.data.draw(strategy, label=label)
            self.draws.append([label, repr(value)[:200]])
            return value

    @settings(max_examples=runs, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one(data):
        if counts["interrupted"]:
            return  # the campaign was stopped: the remaining examples run nothing
        work = Path(tempfile.mkdtemp(dir=folder))
        start, recorded = time.monotonic(), Recorded(data)
        try:
            row = outcome(run_one(recorded, work), work, check)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row["draws"] = recorded.draws
        row["seconds"] = round(time.monotonic() - start, 2)
        if row["interrupted"]:
            counts["interrupted"] = row["exit"]  # 130 or 143: the campaign's own exit code
        else:
            counts[row["exit"]] += 1
        with open(log, "a") as f:
            f.write(json.dumps(row) + "\n")

    try:
        one()
    except Exception:  # noqa: BLE001 - hypothesis objects to the examples that draw nothing after a stop
        if not counts["interrupted"]:
            raise
    shutil.rmtree(folder, ignore_errors=True)
    return counts


def summary(log) -> str:
    """Counts by exit code, tracebacks, payloads, and the distinct exit-70 messages of a campaign's log."""
    logged = [json.loads(line) for line in open(log)]
    stopped = [r for r in logged if r["exit"] in INTERRUPTED]  # logs from before the field too
    rows = [r for r in logged if r["exit"] not in INTERRUPTED]
    exits = collections.Counter(r["exit"] for r in rows)
    causes = collections.Counter(re.sub(r"\d+", "N", r["last"]) for r in rows if r["exit"] == 70 or r["escaped"])
    causes.update(f"violation: {r['violation']}" for r in rows if r.get("violation") and r["exit"] != 70)
    text = (f"{len(rows)} runs: exits {dict(sorted(exits.items()))}, tracebacks {sum(r['traceback'] for r in rows)}, "
            f"payloads ran {sum(r['payload_ran'] for r in rows)}, "
            f"violations {sum(bool(r.get('violation')) for r in rows)}")
    text += f"; interrupted by {INTERRUPTED[stopped[0]['exit']]} after them" if stopped else ""
    return text + "".join(f"\n  {n} x {cause}" for cause, n in causes.most_common())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fuzzer", choices=["pt2-inspect", "pt2-convert", "keras-names", "keras-config", "cli-specs"])
    parser.add_argument("runs", type=int)
    parser.add_argument("--log", required=True)
    args = parser.parse_args(argv)
    counts = campaign(args.fuzzer, args.runs, args.log)
    print(summary(args.log))
    return counts["interrupted"]


if __name__ == "__main__":
    sys.exit(main())
