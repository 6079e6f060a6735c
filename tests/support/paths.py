"""Paths the tests read, from the repository root, so a test file can move without counting ``parents[n]``.

Example: ``portx.convert(str(SAMPLE), out=tmp_path / "out")``.
"""
from pathlib import Path

__all__ = ["REPO", "SRC", "SAMPLE"]

#: the repository root (the folder holding pyproject.toml)
REPO = Path(__file__).resolve().parents[2]
#: the portx package's source folder
SRC = REPO / "src" / "portx"
#: the bundled sample model, a small CNN exported with torch.export
SAMPLE = REPO / "samples" / "tiny_cnn.pt2"
