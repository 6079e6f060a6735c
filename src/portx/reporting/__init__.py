"""What portx shows of a conversion: the console lines (``text``), report.html (``html``) and Model Explorer's
graph and overlays (``explorer``, ``explorer_graph``). Each reads the typed report (session/report.py) by its
attributes (Note [optional fields] in reporting/text.py)."""
