"""portx's tests, a package so that test modules import their helpers as ``tests.support.<module>`` and files in
different folders may share a name (``tests/ops/conv/test_from_keras.py``, ``tests/ops/pool/test_from_keras.py``).
The map of the tree is tests/README.md."""
