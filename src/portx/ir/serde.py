"""Save and load an IR graph: ``graph.txt`` (the text form) plus ``params.npz``.

Example:
    >>> save_graph(g, "ir/"); g2 = load_graph("ir/")
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .graph import Graph
from .text import format_graph, parse_graph

__all__ = ["save_graph", "load_graph"]


def save_graph(graph: Graph, folder) -> Path:
    """Write ``folder/graph.txt`` and ``folder/params.npz``; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.txt").write_text(format_graph(graph) + "\n", encoding="utf-8")
    # npz keys cannot hold every character a name may; store by index with a name list.
    names = list(graph.params)
    np.savez(folder / "params.npz", __names__=np.array(names, dtype=object).astype(str),
             **{f"p{i}": graph.params[n] for i, n in enumerate(names)})
    return folder


def load_graph(folder) -> Graph:
    """Read what ``save_graph`` wrote (no pickles are loaded)."""
    folder = Path(folder)
    with np.load(folder / "params.npz", allow_pickle=False) as data:
        names = [str(n) for n in data["__names__"]]
        params = {n: data[f"p{i}"] for i, n in enumerate(names)}
    return parse_graph((folder / "graph.txt").read_text(encoding="utf-8"), params)
