"""Keras' own surface converted Keras -> torch: every public ``keras.layers`` class (keras_layer_cases.py) and
every public ``keras.ops`` function in a subclassed model through the JAX frontend (keras_ops_cases.py).

Each class or function has cases or a written refusal reason; each case passes, or is listed in
``keras_xfail.toml`` (tables ``layers`` and ``ops``) with its reason and fails (strict). CI runs each suite's
``QUICK`` cases; ``PORTX_SLOW=1`` runs every case. ``benchmarks/op_coverage.py`` prints the pass rates.
"""
import os

import pytest

from tests.conformance import keras_layer_cases, keras_ops_cases

#: suite name -> (cases module, what it enumerates)
SUITES = {"layers": (keras_layer_cases, keras_layer_cases.layer_classes),
          "ops": (keras_ops_cases, keras_ops_cases.functions)}


def _params(names_of):
    for suite, (module, _) in SUITES.items():
        for name in names_of(module):
            marks = [pytest.mark.xfail(reason=module.XFAIL[name], strict=True)] if name in module.XFAIL else []
            yield pytest.param(suite, name, id=f"{suite}:{name}", marks=marks)


@pytest.mark.parametrize("suite", SUITES)
def test_everything_public_has_cases_or_a_reason(suite):
    module, public = SUITES[suite]
    assert not module.uncovered(), f"keras.{suite} names with neither cases nor a refusal reason: {module.uncovered()}"
    assert not set(module.REFUSED) - set(public()), f"REFUSED names what keras.{suite} does not have"


@pytest.mark.parametrize("suite", SUITES)
def test_xfail_and_quick_name_only_cases(suite):
    module = SUITES[suite][0]
    unknown = set(module.XFAIL) - set(module.CASES)
    assert not unknown, f"keras_xfail.toml [{suite}] lists unknown cases: {unknown}"
    assert set(module.QUICK) <= set(module.CASES)


@pytest.mark.parametrize("suite, name", list(_params(lambda m: m.QUICK)))
def test_quick_case(suite, name):
    _check(SUITES[suite][0], name)


_EVERY = list(_params(lambda m: sorted(set(m.CASES) - set(m.QUICK)))) if os.environ.get("PORTX_SLOW") == "1" \
    else [pytest.param("", "", id="every")]


@pytest.mark.slow
@pytest.mark.parametrize("suite, name", _EVERY)
def test_every_case(suite, name):
    _check(SUITES[suite][0], name)


def _check(module, name):
    result = module.run_case(name)
    assert result.outcome == "pass", f"{name}: {result.outcome}: {result.problem}"
