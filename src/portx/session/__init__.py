"""One conversion, stage by stage (conversion.py), its free-dim handling (the dims/ package: the
candidates, which stay free, what is pinned at emit time, and the source lowered again for verify) and its
report (report.py). ``api`` drives it; verification never imports it, except the typed report.

Note [the report is a leaf]: report.py holds data only (dataclasses, no portx import), and verification builds
parts of it (``VerifyReport`` in recheck.py), so it is a leaf any layer may import (tests/test_layering.py
``LEAVES``). That is why this ``__init__`` imports nothing: importing ``portx.session.report`` must not import
the conversion, which imports verification. Take ``Conversion`` from ``portx.session.conversion``.

Example:
    >>> from portx.session.conversion import Conversion
"""
