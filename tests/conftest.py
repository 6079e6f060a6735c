"""Shared test set-up: JAX backend for Keras, small thread pools, and the op-check harness."""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=8, deadline=None, derandomize=True)
settings.register_profile("fuzz", max_examples=200, deadline=None)
settings.load_profile("fuzz" if os.environ.get("PORTX_FUZZ") == "1" else "ci")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PORTX_SLOW") == "1" or config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="slow sweep: run with PORTX_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from the current emitter")
