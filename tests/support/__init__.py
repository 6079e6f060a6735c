"""Test helpers, imported as ``tests.support.<module>``: the op harnesses for both targets, the fuzz strategies,
the model zoo, the hostile-file builders and the test-only unsupported ops. Nothing here is collected as a test."""
