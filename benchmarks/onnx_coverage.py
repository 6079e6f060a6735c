"""ONNX conformance coverage: ONNX's own node test cases through portx to both targets, pass rate per op.

Runs every node case of every op the ONNX frontend claims (tests/conformance/onnx_cases.py; a few minutes on
two cores) and prints one row per op and the totals. ``--op Conv --op Resize`` limits it to some ops.

Example:
    $ KERAS_BACKEND=jax .venv/bin/python benchmarks/onnx_coverage.py
"""
import argparse
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conformance.onnx_cases import TARGETS, case_op, claimed_cases, run_case  # noqa: E402

__all__ = ["coverage", "main"]


def coverage(ops=None) -> dict:
    """{op: {target: (passed, total)}} over the claimed node cases (of ``ops`` when given)."""
    table = {}
    for name, case in sorted(claimed_cases().items()):
        op = case_op(case)
        if ops and op not in ops:
            continue
        for target in TARGETS:
            row = table.setdefault(op, {}).setdefault(target, [0, 0])
            row[0] += run_case(case, target) is None
            row[1] += 1
    return table


def _rate(passed, total):
    return f"{passed:4d}/{total:<4d} {100 * passed / total:5.1f}%" if total else "   -"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", action="append", help="only this ONNX op type (repeatable)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the dtype passes' notes, once per case
    table = coverage(set(args.op) if args.op else None)
    print(f"{'op':28s}" + "".join(f"{t:>20s}" for t in TARGETS))
    totals = {t: [0, 0] for t in TARGETS}
    for op, rows in sorted(table.items()):
        print(f"{op:28s}" + "".join(f"{_rate(*rows[t]):>20s}" for t in TARGETS))
        for t in TARGETS:
            totals[t][0] += rows[t][0]
            totals[t][1] += rows[t][1]
    print(f"{'TOTAL (' + str(len(table)) + ' ops)':28s}" + "".join(f"{_rate(*totals[t]):>20s}" for t in TARGETS))


if __name__ == "__main__":
    main()
