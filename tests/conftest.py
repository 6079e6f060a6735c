"""Shared test set-up: JAX backend for Keras on CPU, the hypothesis profiles, the slow-sweep switch
(``PORTX_SLOW=1``), ``--update-golden``, and CI's no-silent-skips rule.

Helpers live in tests/support/ (imported as ``tests.support.<module>``); tests/ops/conftest.py runs every
op-family test on both targets. The map of the tree is tests/README.md.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# ci: pull requests replay the same few examples; random: .ci/run's fuzz step, new examples every run
# (the seed is printed: `pytest --hypothesis-seed=N` replays it); fuzz: the campaign, 1,000 examples per fuzzer
# (Note [fuzz budget] in tests/support/fuzz_budget.py).
settings.register_profile("ci", max_examples=8, deadline=None, derandomize=True)
settings.register_profile("random", max_examples=50, deadline=None, print_blob=True)
settings.register_profile("fuzz", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile({"1": "fuzz", "random": "random"}.get(os.environ.get("PORTX_FUZZ", ""), "ci"))

#: skip reasons that are allowed under CI=true: opt-in sweeps, and extras marked optional_extra
_ALLOWED_SKIPS = ("slow sweep: run with PORTX_SLOW=1",)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PORTX_SLOW") == "1" or config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="slow sweep: run with PORTX_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/targets/keras_jax/golden/ from the current emitter")


def pytest_configure(config):
    config.addinivalue_line("markers", "optional_extra(reason): needs an optional extra; may skip even under CI=true")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skip for a missing dependency is a failure: a red CI, not a quietly thinner one."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("CI") != "true" or item.get_closest_marker("optional_extra"):
        return
    if hasattr(report, "wasxfail"):  # an expected failure (strict xfail data) is reported as skipped: not a skip
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(allowed in reason for allowed in _ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI=true ({reason}): a required dependency or tool is missing; install it, or "
                       "mark the test optional_extra(reason=...) if it belongs to an optional extra")
