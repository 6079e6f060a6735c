"""What portx shows of a conversion: the console lines (``text``), report.html (``html``) and Model Explorer's
graph and overlays (``explorer``, ``explorer_graph``). Each reads the report as plain data."""
