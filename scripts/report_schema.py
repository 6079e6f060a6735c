"""Write docs/report.schema.json: the JSON Schema of report.json and of ``portx verify --json``, made from the
typed reports (src/portx/session/report.py). Run it after changing a report dataclass, and commit the result;
tests/session/test_report_schema.py fails while the checked-in file differs.

    PYTHONPATH=src python scripts/report_schema.py
"""
from __future__ import annotations

import json
from pathlib import Path

from portx.session.report_schema import report_schema

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"

if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(report_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
