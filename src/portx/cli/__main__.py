"""``python -m portx.cli ...``: the ``portx`` command."""
from . import main

main()
