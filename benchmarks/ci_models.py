"""Time CI's whole-model tests: wall and CPU seconds per test, and the set's total, as CI runs them (-n 2).

Run: .venv/bin/python benchmarks/ci_models.py [extra pytest args, e.g. -k densenet]

Prints one row per test (wall = seconds of the test's call; cpu = user + system seconds of the worker
process during the call, child processes included), sorted by cpu, then the sums and the set's wall time.
On a shared machine wall times stretch with the load; cpu is the steadier figure, and cpu / 2 is about what
the set costs on two idle cores. Runs the normal suite's cases only (no PORTX_SLOW).

Also a pytest plugin (``-p ci_models`` with benchmarks/ on the path): that is how the script measures.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

__all__ = ["CI_MODEL_TESTS", "main"]

#: the test files that convert whole models in the normal suite
CI_MODEL_TESTS = ["tests/test_keras_applications_torch.py", "tests/frontends/test_keras_applications.py",
                  "tests/test_zoo.py", "tests/test_zoo_both_ways.py"]


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    wall, cpu = time.perf_counter(), _cpu()
    yield
    item.user_properties.append(("ci_models", (time.perf_counter() - wall, _cpu() - cpu)))


def pytest_terminal_summary(terminalreporter):
    rows = [(r.nodeid, *dict(r.user_properties)["ci_models"]) for r in terminalreporter.stats.get("passed", [])
            + terminalreporter.stats.get("failed", []) if r.when == "call" and "ci_models" in dict(r.user_properties)]
    if not rows:
        return
    write, width = terminalreporter.write_line, max(len(row[0]) for row in rows) + 2
    write(f"{'test':<{width}}{'wall s':>9}{'cpu s':>9}")
    for nodeid, wall, cpu in sorted(rows, key=lambda row: -row[2]):
        write(f"{nodeid:<{width}}{wall:>9.1f}{cpu:>9.1f}")
    total = f"sum over {len(rows)} tests"
    write(f"{total:<{width}}{sum(row[1] for row in rows):>9.1f}{sum(row[2] for row in rows):>9.1f}")


def main(argv) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.path.join(root, "benchmarks")}
    env.pop("PORTX_SLOW", None)
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                            "-p", "ci_models", *CI_MODEL_TESTS, *argv], cwd=root, env=env)
    print(f"set wall time with -n 2: {time.perf_counter() - start:.0f} s "
          f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
