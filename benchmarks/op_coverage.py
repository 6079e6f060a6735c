"""Op coverage: PyTorch's OpInfo database through portx to both targets and through torchax, in one run.

Every op_db entry with a float32 CPU sample that ``torch.export`` takes (tests/conformance/op_db_cases.py) is
converted with verification on and run on its sample; the table gives each target's pass rate, torchax's on the
same entries, the outcome classes, the ops still refused ranked by the entries they block, one example per crash
class, and the Keras layer and ``keras.ops`` coverage (``tests/conformance/keras_layer_cases.py`` and
``keras_ops_cases.py``, each offering ``coverage() -> dict`` of counts). Sequential; one progress line per entry on
stderr. All entries take about an hour per target on two cores; ``--quick`` runs the test suite's subset.

Example:
    $ KERAS_BACKEND=jax .venv/bin/python benchmarks/op_coverage.py --target keras-jax --limit 150 --json run.json
    $ KERAS_BACKEND=jax .venv/bin/python benchmarks/op_coverage.py --quick --write-xfail
    $ KERAS_BACKEND=jax .venv/bin/python benchmarks/op_coverage.py --keras-only
"""
import argparse
import collections
import datetime
import importlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conformance.op_db_cases import (OUTCOMES, QUICK, TARGETS, XFAIL, XFAIL_FILE, entries,  # noqa: E402
                                           entry_program, run_entry, run_torchax)

__all__ = ["chosen", "measure", "summary", "xfail_text", "keras_coverage", "main"]


def chosen(names=None, limit=None, quick=False) -> list:
    """The entry ids to run: ``names``, or ``QUICK``, or every entry (``limit`` of them, spread evenly)."""
    every = sorted(entries())
    picked = list(names) if names else list(QUICK) if quick else every
    unknown = sorted(set(picked) - set(every))
    if unknown:
        raise SystemExit(f"unknown op_db entries: {', '.join(unknown)}")
    if limit and limit < len(picked):
        step = len(picked) / limit
        picked = [picked[int(i * step)] for i in range(limit)]
    return picked


def measure(names, targets, torchax=True, partial=None) -> dict:
    """{entry: {"skipped": reason} | {target: Outcome as a dict}} over ``names``, progress on stderr;
    ``partial(runs)`` is called after each entry (the JSON file is kept current on a long run)."""
    runs = {}
    for i, name in enumerate(names, 1):
        start = time.perf_counter()
        program = entry_program(name)
        if isinstance(program, str):
            runs[name] = {"skipped": program}
            print(f"[{i}/{len(names)}] {name}: skipped ({program[:80]})", file=sys.stderr, flush=True)
            continue
        row = runs[name] = {t: asdict(run_entry(name, t)) for t in targets}
        if torchax:
            row["torchax"] = asdict(run_torchax(name))
        shown = " ".join(f"{t}={r['outcome']}({r['seconds']:.1f}s)" for t, r in row.items())
        print(f"[{i}/{len(names)}] {name}: {shown} [{time.perf_counter() - start:.1f}s]", file=sys.stderr, flush=True)
        if partial:
            partial(runs)
    return runs


def summary(runs, targets) -> dict:
    """Counts per target and outcome, refused ops ranked by entries blocked, and one example per crash class."""
    counted = {n: r for n, r in runs.items() if "skipped" not in r}
    out = {"entries": len(runs), "skipped": len(runs) - len(counted), "counted": len(counted), "targets": {},
           "blocking": {}, "crashes": {}, "seconds_per_entry": {}}
    for target in [*targets, *(["torchax"] if any("torchax" in r for r in counted.values()) else [])]:
        rows = [r[target] for r in counted.values()]
        out["targets"][target] = dict(collections.Counter(row["outcome"] for row in rows))
        out["seconds_per_entry"][target] = round(sum(row["seconds"] for row in rows) / max(len(rows), 1), 3)
        if target == "torchax":
            continue
        blocked = collections.Counter(op for row in rows for op in row["ops"])
        out["blocking"][target] = blocked.most_common()
        crashes = out["crashes"].setdefault(target, {})
        for row in rows:
            if row["outcome"] == "crash":
                kind = row["problem"].split(":")[0]
                crashes.setdefault(kind, {"count": 0, "example": f"{row['entry']}: {row['problem']}"})["count"] += 1
    return out


def keras_coverage() -> list:
    """Lines giving the Keras layer and ``keras.ops`` coverage, from the Keras conformance modules when present
    (their ``coverage()`` runs every case: {"cases", "passed", "outcomes", ...})."""
    lines = []
    for label, module in (("keras layers", "keras_layer_cases"), ("keras.ops", "keras_ops_cases")):
        try:
            cases = importlib.import_module(f"tests.conformance.{module}")
        except ModuleNotFoundError:
            lines.append(f"{label} coverage: not measured (module missing)")
            continue
        counts = cases.coverage(progress=lambda r: print(f"{label} {r}", file=sys.stderr, flush=True))
        outcomes = ", ".join(f"{o} {n}" for o, n in counts["outcomes"].items() if n and o != "pass")
        lines.append(f"{label} coverage: {counts['passed']}/{counts['cases']} cases pass "
                     f"({100 * counts['passed'] / max(counts['cases'], 1):.1f}%; {outcomes or 'no failures'}), "
                     f"{counts['refused']} refused with a reason")
    return lines


def _print(summ, top, keras):
    print(f"op_db entries: {summ['entries']} run, {summ['skipped']} skipped (no sample / not exportable), "
          f"{summ['counted']} counted ({datetime.date.today()})")
    print(f"{'target':12s}{'pass %':>9s}" + "".join(f"{o:>15s}" for o in OUTCOMES) + f"{'s/entry':>9s}")
    for target, counts in summ["targets"].items():
        rate = 100 * counts.get("pass", 0) / max(summ["counted"], 1)
        print(f"{target:12s}{rate:8.1f}%" + "".join(f"{counts.get(o, 0):15d}" for o in OUTCOMES)
              + f"{summ['seconds_per_entry'][target]:9.2f}")
    for target, ranked in summ["blocking"].items():
        print(f"\nops refused on {target}, by entries blocked ({len(ranked)} ops):")
        print("  " + ", ".join(f"{op} {n}" for op, n in ranked[:top]))
    for target, kinds in summ["crashes"].items():
        print(f"\ncrash classes on {target}:")
        for kind, row in sorted(kinds.items(), key=lambda kv: -kv[1]["count"]):
            print(f"  {row['count']:4d}  {row['example'][:200]}")
    print()
    for line in keras_coverage() if keras else ["keras coverage: not measured (a subset, saved or --no-keras run)"]:
        print(line)


def xfail_text(runs, targets) -> str:
    """``op_db_xfail.toml``: the listed entries not in ``runs`` kept, those in it replaced by their outcome."""
    table = {n: r for n, r in XFAIL.items() if n not in runs}
    for name, row in runs.items():
        reasons = {t: f"{row[t]['outcome']}: {row[t]['problem']}" for t in targets
                   if "skipped" not in row and row[t]["outcome"] != "pass"}
        if reasons:
            same = len(set(reasons.values())) == 1 and len(reasons) == len(TARGETS)
            table[name] = next(iter(reasons.values())) if same else reasons
    lines = ["# op_db entries (tests/conformance/op_db_cases.py) that portx does not pass, with the reason:",
             '# entry = "reason" (both targets), or entry = { "keras-jax" = "reason" } for one target.',
             "# A reason starts with the outcome class (unsupported, not-tpu-legal, wrong, crash). Strict: a listed",
             "# entry that passes fails the test. Regenerate: benchmarks/op_coverage.py --quick --write-xfail",
             "[xfail]"]
    for name in sorted(table):
        value = table[name]
        shown = (json.dumps(value) if isinstance(value, str) else
                 "{ " + ", ".join(f"{json.dumps(t)} = {json.dumps(v)}" for t, v in sorted(value.items())) + " }")
        lines.append(f"{json.dumps(name)} = {shown}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=TARGETS, help="only this target (repeatable)")
    parser.add_argument("--entries", help="comma-separated entry ids (e.g. abs,nn.functional.conv2d)")
    parser.add_argument("--limit", type=int, help="at most N entries, spread evenly over op_db")
    parser.add_argument("--quick", action="store_true", help="the test suite's QUICK subset")
    parser.add_argument("--no-torchax", action="store_true", help="skip the torchax reference run")
    parser.add_argument("--no-keras", action="store_true", help="skip the Keras layer and keras.ops coverage "
                        "(skipped too with --entries, --limit, --quick or --from-json)")
    parser.add_argument("--keras-only", action="store_true", help="only the Keras layer and keras.ops coverage")
    parser.add_argument("--top", type=int, default=40, help="blocking ops shown (default 40)")
    parser.add_argument("--json", type=Path, help="write the raw outcomes and the summary here")
    parser.add_argument("--write-xfail", action="store_true", help=f"regenerate {XFAIL_FILE.name} from this run")
    parser.add_argument("--from-json", type=Path, help="report (and --write-xfail) a saved --json run, running nothing")
    args = parser.parse_args(argv)
    targets = tuple(args.target or TARGETS)

    def write(runs):
        if args.json:
            args.json.write_text(json.dumps({"date": str(datetime.date.today()), "targets": targets,
                                             "summary": summary(runs, targets), "runs": runs}, indent=1) + "\n",
                                 encoding="utf-8")

    if args.keras_only:
        print(f"Keras coverage ({datetime.date.today()})")
        for line in keras_coverage():
            print(line)
        return
    if args.from_json:
        saved = json.loads(args.from_json.read_text(encoding="utf-8"))
        runs, targets = saved["runs"], tuple(saved["targets"])
    else:
        names = chosen(args.entries.split(",") if args.entries else None, args.limit, args.quick)
        runs = measure(names, targets, torchax=not args.no_torchax, partial=write)
    subset = args.entries or args.limit or args.quick or args.from_json or args.no_keras
    _print(summary(runs, targets), args.top, keras=not subset)
    if args.write_xfail:
        if set(targets) != set(TARGETS):
            raise SystemExit("--write-xfail needs both targets (drop --target)")
        XFAIL_FILE.write_text(xfail_text(runs, targets), encoding="utf-8")
        print(f"wrote {XFAIL_FILE}", file=sys.stderr)


if __name__ == "__main__":
    main()
