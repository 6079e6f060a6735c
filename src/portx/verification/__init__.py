"""Verification: a converted model against its source, output by output and layer by layer, for any target.

- ``compare.py``: seeded valid inputs, NaN/Inf-aware comparisons, the IR's NumPy reference run;
- ``trace.py``: each emitted intermediate against that reference, and the first node that differs;
- ``recheck.py``: re-checking a converted folder (``portx verify``, ``portx.testing``).

This package sits above frontends, passes and targets and below session and api: it never imports either,
but for the typed report, data only (Note [the report is a leaf] in session/__init__.py).

Example:
    >>> from portx.verification.recheck import verify_converted
    >>> verify_converted("model.pt2", "out/", lower=session.dims.lower_for, samples=3).passed
    True
"""
