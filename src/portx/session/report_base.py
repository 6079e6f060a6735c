"""What every report dataclass shares (``Section``: ``read``, ``to_dict``, ``from_dict``; ``json_ready``,
``read_typed``), for report_sections.py, report_rows.py and report.py. A leaf (Note [the report is a leaf] in
session/__init__.py).

Example:
    >>> json_ready(Gradients(passed=None, skipped="no floating output"))
    {'passed': None, 'skipped': 'no floating output'}
"""
from __future__ import annotations

import dataclasses

__all__ = ["Section", "json_ready", "read_typed", "from_dict"]


def from_dict(cls, data: dict):
    """``data`` (a builder's dict, each key a field of ``cls``) as ``cls``, its ``NESTED`` fields typed too; a key
    ``cls`` lacks is a TypeError (Note [typed sections]). Example: ``from_dict(Gradients, compare_gradients(...))``."""
    values = dict(data)
    for name, kind in getattr(cls, "NESTED", {}).items():
        value = values.get(name)
        if isinstance(kind, list) and isinstance(value, list):
            values[name] = [from_dict(_picked(kind[0], row), row) if isinstance(row, dict) else row for row in value]
        elif isinstance(kind, type) and isinstance(value, dict):
            values[name] = from_dict(kind, value)
    return cls(**values)


class Section:
    """``from_dict`` / ``read`` / ``to_dict`` for the report dataclasses (these sections, and report.py's)."""

    #: fields left out of the JSON where None (``json_ready``)
    OMITTED: tuple = ()
    #: field -> the field whose value keeps it in the JSON as null (Note [typed sections])
    KEPT_WITH: dict = {}
    #: field -> how ``read`` types its JSON: a report dataclass for an object, ``[cls]`` a list, ``{cls}`` a dict
    NESTED: dict = {}

    @classmethod
    def from_dict(cls, data: dict):
        """This section from its builder's dict (``from_dict``). Example: ``TpuProof.from_dict(proof).verdict``."""
        return from_dict(cls, data)

    @classmethod
    def read(cls, data):
        """The typed form of a JSON report (report.json's dict) that may lack any field or hold more: a missing field
        is None or its default, an unknown one is dropped, a malformed section reads as missing.
        Example: ``ConversionReport.read(json.loads(Path("out/report.json").read_text())).verification``."""
        return read_typed(cls, data)

    def to_dict(self) -> dict:
        """The JSON form (plain dicts and lists). Example: ``report.to_dict()["verification"]["passed"]``."""
        return json_ready(self)


def json_ready(value):
    """``value`` with every report dataclass replaced by its dict, omitting ``OMITTED`` fields that are None (but
    for those ``KEPT_WITH`` another field that is not: Note [typed sections] in report_sections.py)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        omitted, kept = getattr(value, "OMITTED", ()), getattr(value, "KEPT_WITH", {})
        return {f.name: json_ready(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.name in omitted and getattr(value, f.name) is None
                        and (f.name not in kept or getattr(value, kept[f.name]) is None))}
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def read_typed(cls, data):
    """``data`` (JSON) as the dataclass ``cls`` (``Section.read``; also the block rows, whose
    ``NESTED`` says the same). Example: ``read_typed(BlockRow, row).worst()``."""
    data = data if isinstance(data, dict) else {}
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            values[f.name] = _read_nested(getattr(cls, "NESTED", {}).get(f.name), data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = None
    return cls(**values)


def _read_nested(kind, value):
    """``value`` (JSON) read as ``kind`` says (``Section.NESTED``); None when its shape does not fit."""
    if kind is None:
        return value
    if isinstance(kind, list):
        return [_read_one(kind[0], v) for v in value if isinstance(v, dict)] if isinstance(value, list) else None
    if isinstance(kind, set):
        [row] = kind
        return {k: _read_one(row, v) for k, v in value.items() if isinstance(v, dict)} \
            if isinstance(value, dict) else None
    return _read_one(kind, value) if isinstance(value, dict) else None


def _read_one(cls, data):
    """``data`` (JSON) as ``cls``, or the class its ``pick`` names for it."""
    return read_typed(_picked(cls, data), data)


def _picked(cls, data):
    """The class a row ``data`` is: ``cls.pick(data)`` where ``cls`` has one (a list of rows of two kinds: Note [two
    output rows] in report_rows.py), else ``cls``."""
    pick = getattr(cls, "pick", None)
    return pick(data) if pick is not None else cls
