"""PyTorch's OpInfo database (``op_db``) through portx to both targets (tests/conformance/op_db_cases.py).

Each entry passes (converts with verification on, and the emitted model gives eager's outputs on the OpInfo
sample), or is listed in ``op_db_xfail.toml`` with its reason and fails (strict xfail, so a fix flips it). A
listed reason starts with the outcome class (``unsupported:``, ``not-tpu-legal:``, ``wrong:``, ``crash:``) and
the entry must fail in that class: a crash never hides behind another reason. CI runs ``QUICK``, a fixed sample
across the op families; ``PORTX_SLOW=1`` runs every entry ``torch.export`` takes. ``benchmarks/op_coverage.py``
prints the pass rates beside torchax's and regenerates the list (``--quick --write-xfail``).
"""
import os

import pytest

from tests.conformance.op_db_cases import (OUTCOMES, QUICK, TARGETS, XFAIL, Program, entries, entry_program,
                                           run_entry, xfail_reason)


class OutcomeChanged(Exception):
    """A listed entry failed in another outcome class than its reason names (not an expected failure)."""


def _exportable():
    return sorted(n for n in entries() if isinstance(entry_program(n), Program))


def _params():
    """QUICK on both targets, and under ``PORTX_SLOW=1`` every other entry ``torch.export`` takes (marked slow)."""
    names = sorted(set(QUICK) | set(_exportable() if os.environ.get("PORTX_SLOW") == "1" else ()))
    for name in names:
        for target in TARGETS:
            reason = xfail_reason(name, target)
            marks = [pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError)] if reason else []
            yield pytest.param(name, target, id=f"{name}-{target}",
                               marks=marks + ([] if name in QUICK else [pytest.mark.slow]))


@pytest.mark.parametrize("name,target", list(_params()))
def test_entry(name, target):
    result = run_entry(name, target)
    assert result.outcome != "skipped", f"{name}: {result.problem}"
    listed = xfail_reason(name, target)
    if listed and result.outcome != "pass" and listed.split(":")[0] != result.outcome:
        raise OutcomeChanged(f"{name} on {target}: listed as {listed!r}, now {result.outcome}: {result.problem}")
    assert result.outcome == "pass", f"{name} on {target}: {result.outcome}: {result.problem}"


def test_xfail_list_is_data_about_known_entries():
    stale = sorted(set(XFAIL) - set(entries()))
    assert not stale, f"op_db_xfail.toml lists entries op_db does not have: {stale[:10]}"
    reasons = [r for v in XFAIL.values() for r in (v.values() if isinstance(v, dict) else [v])]
    unclassed = [r for r in reasons if r.split(":")[0] not in OUTCOMES[1:]]
    assert not unclassed, f"a reason must start with its outcome class {OUTCOMES[1:]}: {unclassed[:5]}"
    assert all(set(v) <= set(TARGETS) for v in XFAIL.values() if isinstance(v, dict))


def test_quick_subset_is_exportable_and_spans_the_families():
    skipped = {n: entry_program(n) for n in QUICK if not isinstance(entry_program(n), Program)}
    assert not skipped, f"QUICK entries torch.export does not take: {skipped}"
    assert not any(entry_program(n).deterministic for n in ("randn_like", "nn.functional.dropout"))
    assert {n.split(".")[0] for n in QUICK} >= {"nn", "linalg", "fft", "abs", "sum", "sort", "cat"}
