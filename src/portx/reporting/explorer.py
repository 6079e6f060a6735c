"""Model Explorer on portx's graph: ``portx convert --explore`` writes OUT/explorer/, ``portx explore OUT`` serves it.

OUT/explorer/ holds ``graph.json`` (the IR as a Model Explorer graph, reporting/explorer_graph.py) and one node-data
file per overlay: ``node_data_error.json`` (each node's max relative error against the IR's NumPy
reference, when the conversion was verified), ``node_data_tpu.json`` (the target op table's status) and
``node_data_layout.json`` (NCHW/NHWC per node). Any Model Explorer can load them; ``serve`` starts one
(the ``[explore]`` extra) on a free local port, with a ``torch.export`` source (``.pt2``) beside it.

Example:
    >>> write_explorer("out/explorer", result.graph, "keras-jax", label="tiny_cnn")
    >>> serve(prepare("out/", port=8080, source="model.pt2"), open_browser=False)   # blocks until Ctrl+C
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

from ..errors import BadInput
from ..session.report_sections import NodeErrors
from .explorer_graph import GRAPH_ID, error_overlay, graph_collection, layout_overlay, tpu_overlay

__all__ = ["EXPLORER", "GRAPH_FILE", "write_explorer", "write_conversion", "explorer_files", "free_port", "prepare",
           "serve"]

#: the folder inside OUT, and the graph file in it
EXPLORER, GRAPH_FILE = "explorer", "graph.json"
#: sources Model Explorer reads itself (its built-in torch.export adapter)
_SOURCE_SUFFIXES = (".pt2",)
#: the id Model Explorer's torch.export adapter gives the graph it reads
_SOURCE_GRAPH_ID = "graph"
_INSTALL = "pip install 'portx[explore]'"
#: the page shows the overlay loaded last: the error one when there is one
_FIRST_SHOWN = ("node_data_error.json",)


def _dump(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_explorer(folder, graph, target: str, label: str = "model", errors=None, info=None) -> list:
    """Write graph.json and the overlays into ``folder``; returns the paths written.

    ``errors`` (value name -> a row with ``max_rel`` and ``passed``) adds node_data_error.json; ``info`` adds
    side-panel rows.
    Example: ``write_explorer(tmp / "explorer", graph, "keras-jax", "tiny_cnn", errors)``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    panel = {"target": target, "portx IR nodes": str(len(graph.nodes)), **(info or {})}
    paths = [_dump(folder / GRAPH_FILE, graph_collection(graph, f"{label} (portx IR for {target})", panel))]
    if errors is not None:
        paths.append(_dump(folder / "node_data_error.json", error_overlay(graph, errors)))
    paths.append(_dump(folder / "node_data_tpu.json", tpu_overlay(graph, target)))
    paths.append(_dump(folder / "node_data_layout.json", layout_overlay(graph)))
    return paths


def write_conversion(out, src, graph, target, report) -> list:
    """``convert(explore=True)``'s OUT/explorer/ for the typed ``report`` (session/report.py): the rows of its
    ``node_errors`` (verification/trace.py) become the error overlay, and where it was skipped the side panel says
    why."""
    # Note [optional fields] (reporting/text.py): a row without its value names no node
    node_errors = report.node_errors or NodeErrors()
    rows = {row.value: row for row in node_errors.rows or [] if row.value is not None}
    info = {"error overlay": f"none: {node_errors.skipped}"} if node_errors.skipped else {}
    return write_explorer(Path(out) / EXPLORER, graph, target.name, Path(str(src.label)).name or "model",
                          rows or None, info)


def explorer_files(out) -> tuple:
    """(graph.json, its label, [overlay files]) in OUT/explorer/; BadInput (exit 2) saying how to write them
    when absent."""
    folder = Path(out) / EXPLORER
    graph = folder / GRAPH_FILE
    if not Path(out).is_dir():
        raise BadInput(f"{out}: no such folder", hint="pass the OUT folder of 'portx convert ... --explore'")
    if not graph.is_file():
        raise BadInput(f"{out} has no Model Explorer files ({EXPLORER}/{GRAPH_FILE})",
                       hint="write them with: portx convert SRC -o OUT --explore")
    try:
        label = json.loads(graph.read_text(encoding="utf-8"))["label"]
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise BadInput(f"{graph}: not readable as JSON ({type(exc).__name__})",
                       hint="write it again with: portx convert SRC -o OUT --explore --force") from None
    overlays = sorted(folder.glob("node_data_*.json"), key=lambda p: (p.name in _FIRST_SHOWN, p.name))
    return graph, label, overlays


def _in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1", wanted: int = 8080) -> int:
    """``wanted`` when nothing listens there, else a port the system picks. Example: ``free_port(wanted=8080)``."""
    if 0 < wanted < 65536 and not _in_use(host, wanted):
        return wanted
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _model_explorer():
    try:
        import model_explorer
    except ImportError:
        raise BadInput("portx explore needs Model Explorer (ai-edge-model-explorer), which is not installed",
                       hint=_INSTALL) from None
    return model_explorer


def _check_source(source):
    if source is None:
        return None
    path = Path(source)
    if not path.is_file():
        raise BadInput(f"--source {source}: no such file", hint="pass the model file that was converted")
    if path.suffix.lower() not in _SOURCE_SUFFIXES:
        raise BadInput(f"--source {source}: Model Explorer reads torch.export programs (.pt2) itself, not "
                       f"{path.suffix or 'this file'}", hint="drop --source; the portx graph keeps the source's "
                       "layer names as its namespaces")
    return str(path.resolve())


def _pane(graph_id, selected) -> dict:
    return {"deepestExpandedGroupNodeIds": [], "selectedNodeId": "", "selectedGraphId": graph_id,
            "selectedCollectionLabel": "", "widthFraction": 0.5, "selected": selected}


def _side_by_side(me):
    """A Model Explorer config whose URL opens two panes: the portx graph, and the source's graph (its
    torch.export adapter names it ``graph``) in a split pane beside it."""
    from urllib.parse import quote, unquote

    class SideBySide(type(me.config())):
        def to_url_param_value(self) -> str:
            data = json.loads(unquote(super().to_url_param_value()))
            data["uiState"] = {"paneStates": [_pane(GRAPH_ID, True), _pane(_SOURCE_GRAPH_ID, False)]}
            return quote(json.dumps(data))

    return SideBySide()


def prepare(out, port=None, source=None, host="127.0.0.1"):
    """Everything ``serve`` checks before it blocks: (model_explorer, config, port, notes); BadInput (2)
    without the extra, without OUT/explorer/ or with a --source Model Explorer cannot read."""
    graph, label, overlays = explorer_files(out)
    source = _check_source(source)
    me = _model_explorer()
    wanted = 8080 if port is None else port
    chosen = free_port(host, wanted)
    notes = [] if chosen == wanted else [f"port {wanted} is in use; serving on http://{host}:{chosen}/ instead"]
    config = (_side_by_side(me) if source else me.config()).add_model_from_path(str(graph.resolve()))
    for path in overlays:
        config.add_node_data_from_path(str(path.resolve()), model_name=label)  # the page matches collection labels
    if source:
        config.add_model_from_path(source)
        notes.append(f"the source {Path(source).name} is shown beside the portx graph (split pane)")
    return me, config, chosen, notes


def serve(prepared, host="127.0.0.1", open_browser=True) -> None:
    """Start Model Explorer on ``prepare``'s config; blocks until Ctrl+C or SIGTERM."""
    me, config, port, _ = prepared
    try:
        me.visualize_from_config(config=config, host=host, port=port, no_open_in_browser=not open_browser)
    except KeyboardInterrupt:
        pass
