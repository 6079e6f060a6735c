"""Every op-family test runs on every target: a test under tests/ops that takes a ``target`` argument is
parametrized here over ``harness.TARGETS`` (keras-jax and torch-xla; Note [both targets] in
tests/support/harness.py). The harnesses (``check_torch_op``, ``check_keras_model``) have no default target,
so a family test checks an emitter only through this parameter, and a new case row or property runs on
both targets without anyone remembering to say so.

The harnesses also hold each family test to its parameter (``harness.expected_target``): a family test that
checks a target it did not receive as ``target`` (a literal, or none at all) fails and says why.

``ONE_TARGET`` lists the tests that must run on one target only, each with its reason;
tests/ops/test_completeness.py checks that every entry still names a family test.
"""
import pytest

from tests.support.harness import TARGETS, expected_target

#: test function name -> (the one target it runs on, why)
ONE_TARGET = {
    "test_zero_pad_on_spatial_axes_is_a_keras_layer": ("keras-jax", "reads the emitted Keras source for the "
                                                                    "layer it chose"),
}


def targets_for(name) -> tuple:
    """The targets the family test ``name`` runs on: its ONE_TARGET entry, else all of them."""
    return (ONE_TARGET[name][0],) if name in ONE_TARGET else TARGETS


def pytest_generate_tests(metafunc):
    if "target" in metafunc.fixturenames:
        metafunc.parametrize("target", targets_for(metafunc.function.__name__))


@pytest.fixture(autouse=True)
def _harness_checks_the_parametrized_target(request):
    callspec = getattr(request.node, "callspec", None)
    with expected_target(callspec.params.get("target", "") if callspec else ""):
        yield
