"""Model Explorer: ``portx convert --explore`` writes graph JSON and overlays that Model Explorer's own dataclasses
take, namespaced by the source's module scopes; ``portx explore OUT`` serves them and a headless Chromium shows the
graph with the IR's node count; bad input (no files, no extra, a source it cannot read, a port in use)."""
import dataclasses
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.reporting.explorer import EXPLORER, GRAPH_FILE, free_port, prepare
from portx.reporting.explorer_graph import GRAPH_ID, namespace_of
from tests.support.cdp import chromium, load_page
from tests.support.hostile_names import EVIL, Evil


@pytest.fixture(scope="module")
def me():
    """Model Explorer's Python package (the [explore] extra); the tests that read or serve with it skip without."""
    return pytest.importorskip("model_explorer", reason="the [explore] extra (ai-edge-model-explorer) is missing")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x


class Nested(nn.Module):
    """stem -> stage (two residual blocks) -> head: a ResNet in miniature."""

    def __init__(self):
        super().__init__()
        self.stem, self.stage = nn.Conv2d(3, 4, 3, padding=1), nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.stage(self.stem(x)).mean((2, 3)))


def _convert(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(OUT, its source .pt2, report.json) of ``portx convert nested.pt2 --explore``."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("explore")
    source = folder / "nested.pt2"
    torch.export.save(torch.export.export(Nested().eval(), (torch.randn(2, 3, 8, 8),)), source)
    run = _convert("convert", source, "--to", "keras-jax", "-o", folder / "out", "--explore")
    assert run.exit_code == 0, run.output
    return folder / "out", source, json.loads((folder / "out" / "report.json").read_text())


def _load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=lambda c: pytest.fail(f"{path}: {c}"))


def _as_model_explorer(me, collection):
    """graph.json through Model Explorer's own dataclasses (TypeError on an unknown or missing field)."""
    gb = me.graph_builder

    def node(raw):
        fields = {**raw, "incomingEdges": [gb.IncomingEdge(**e) for e in raw["incomingEdges"]],
                  "attrs": [gb.KeyValue(**kv) for kv in raw["attrs"]],
                  "outputsMetadata": [gb.MetadataItem(m["id"], [gb.KeyValue(**kv) for kv in m["attrs"]])
                                      for m in raw["outputsMetadata"]],
                  "inputsMetadata": [gb.MetadataItem(m["id"], [gb.KeyValue(**kv) for kv in m["attrs"]])
                                     for m in raw["inputsMetadata"]]}
        return gb.GraphNode(**fields)

    graphs = [gb.Graph(**{**g, "nodes": [node(n) for n in g["nodes"]]}) for g in collection["graphs"]]
    return gb.GraphCollection(label=collection["label"], graphs=graphs)


def _overlay(me, path):
    """A node data file through Model Explorer's ModelNodeData (and back to the same JSON)."""
    nd = me.node_data_builder
    raw = _load(path)
    data = nd.ModelNodeData(graphsData={gid: nd.GraphNodeData(**{**g, "results": {
        k: nd.NodeDataResult(**r) for k, r in g["results"].items()}}) for gid, g in raw.items()})
    written = json.loads(data.to_json_string())  # Model Explorer adds its defaults
    assert {gid: {k: g[k] for k in raw[gid]} for gid, g in written.items()} == raw
    return raw[GRAPH_ID]


def test_graph_json_is_model_explorer_graph_with_scopes_as_namespaces(converted, me):
    out, _, report = converted
    collection = _load(out / EXPLORER / GRAPH_FILE)
    typed = _as_model_explorer(me, collection)
    assert me.utils.remove_none(dataclasses.asdict(typed)["graphs"][0]["nodes"]) == collection["graphs"][0]["nodes"]
    nodes = typed.graphs[0].nodes
    assert len(nodes) == report["portx_ir_nodes"] and len({n.id for n in nodes}) == len(nodes)
    by_label = {}
    for n in nodes:
        by_label.setdefault(n.label, []).append(n.namespace)
    assert sorted(by_label["conv"]) == ["stage/0/conv", "stage/1/conv", "stem"]
    assert sorted(by_label["batch_norm"]) == ["stage/0/bn", "stage/1/bn"]
    assert by_label["linear"] == ["head"] and sorted(by_label["add"]) == ["stage/0", "stage/1"]
    ids = {n.id for n in nodes}
    assert all(e.sourceNodeId in ids for n in nodes for e in n.incomingEdges)
    assert sum(len(n.incomingEdges) for n in nodes) >= len(nodes) - 1  # one connected chain at least
    conv = next(n for n in nodes if n.namespace == "stem")
    meta = {kv.key: kv.value for kv in conv.outputsMetadata[0].attrs}
    assert meta["tensor_shape"].startswith("float32[") and meta["layout"] == "NHWC"


def test_overlays_have_one_value_per_node(converted, me):
    out, _, report = converted
    folder, count = out / EXPLORER, report["portx_ir_nodes"]
    tpu, layout = _overlay(me, folder / "node_data_tpu.json"), _overlay(me, folder / "node_data_layout.json")
    assert sorted(tpu["results"], key=int) == [str(i) for i in range(count)]
    assert sorted(layout["results"], key=int) == [str(i) for i in range(count)]
    assert {r["value"] for r in tpu["results"].values()} == {"native"}
    assert "NHWC" in {r["value"] for r in layout["results"].values()}
    error = _overlay(me, folder / "node_data_error.json")
    assert len(error["results"]) >= count - 2 and set(error["results"]) <= set(tpu["results"])
    assert all(0 <= r["value"] < 1e-4 for r in error["results"].values())


def test_namespace_keeps_one_level_per_scope_part():
    assert namespace_of("layer1.0.conv1") == "layer1/0/conv1"
    assert namespace_of("") == "" and namespace_of("a/b.c") == "a\u2215b/c"


def test_hostile_layer_names_stay_data(tmp_path, me):
    marker = tmp_path / "MARKER"
    torch.manual_seed(0)
    result = portx.convert(Evil(str(marker)), example_inputs=(torch.randn(2, 4),), out=tmp_path / "out",
                           explore=True)
    collection = _load(tmp_path / "out" / EXPLORER / GRAPH_FILE)
    nodes = _as_model_explorer(me, collection).graphs[0].nodes
    assert len(nodes) == len(result.graph.nodes)
    scopes = {kv.value for n in nodes for kv in n.attrs if kv.key == "scope"}
    for raw in EVIL:
        name = raw.format(m=marker)
        assert name in scopes or name[:100] in " ".join(scopes), name  # long names are cut, not mangled
    assert all(n.namespace.count("/") == 0 for n in nodes)  # one module level: a "/" in a name adds none
    assert not marker.exists()
    for path in (tmp_path / "out" / EXPLORER).glob("node_data_*.json"):
        assert len(_overlay(me, path)["results"]) <= len(nodes)


def _explore(*args, env=None):
    return subprocess.run([sys.executable, "-m", "portx.cli", "explore", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env)


def _one_portx_line(done, *words):
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("portx: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_explore_without_graph_files_says_how_to_write_them(tmp_path):
    (tmp_path / "out").mkdir()
    _one_portx_line(_explore(tmp_path / "out", "--no-browser"), "--explore", "portx convert")
    _one_portx_line(_explore(tmp_path / "missing", "--no-browser"), "no such folder")


def test_explore_without_the_extra_names_it(converted, tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['model_explorer'] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    _one_portx_line(_explore(converted[0], "--no-browser", env=env), "pip install 'portx[explore]'")


def test_source_model_explorer_cannot_read_is_refused(converted, tmp_path):
    keras_file = tmp_path / "m.keras"
    keras_file.write_bytes(b"PK")
    _one_portx_line(_explore(converted[0], "--source", keras_file, "--no-browser"), ".pt2", "--source")


def test_port_in_use_picks_another(converted, me):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _, config, chosen, notes = prepare(converted[0], port=port)
        assert chosen != port and free_port(wanted=chosen) == chosen
        assert notes == [f"port {port} is in use; serving on http://127.0.0.1:{chosen}/ instead"]
    assert len(config.node_data_sources) == 3 and config.model_sources[0]["url"].endswith(GRAPH_FILE)


def _url(proc, deadline):
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?data=\S+)", line)
        if found:
            return found.group(1), "".join(seen)
    pytest.fail(f"portx explore printed no URL: {''.join(seen)[-2000:]}")


def test_explore_renders_in_headless_chromium(converted, me, tmp_path):
    binary = chromium()
    if binary is None:
        print("skipped: no chromium on PATH (Debian: apt-get install chromium)")
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    out, source, report = converted
    with socket.socket() as busy:  # the port asked for is taken: another is chosen and printed
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "portx.cli", "explore", str(out), "--port", str(port),
                                 "--source", str(source), "--no-browser"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url, printed = _url(proc, time.monotonic() + 240)
            assert f"port {port} is in use; serving on" in printed and f":{port}/" not in url
            page = load_page(binary, url, ("op node count", "nested.pt2 | graph", "max relative error vs the IR "
                                           "reference"), tmp_path / "explore.png")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    counts = [int(n) for n in re.findall(r"op node count\s+(\d+)", page.text)]  # each pane's graph info
    assert len(counts) == 2 and counts[0] == report["portx_ir_nodes"], page.text[-1500:]
    for shown in ("nested.pt2 (portx IR for keras-jax) | portx IR", "nested.pt2 | graph", "NODE DATA PROVIDERS",
                  "max relative error vs the IR reference", "TPU status (keras-jax)", "layout", "stage"):
        assert shown in page.text, shown  # the panes' titles (IR left, the source right), overlays, a layer
    assert (tmp_path / "explore.png").stat().st_size > 10_000
    print(f"screenshot: {tmp_path / 'explore.png'}; console errors: {page.errors}")


def test_keras_layer_names_are_namespaces_and_unverified_runs_have_no_error_overlay(tmp_path, me):
    import keras

    keras.utils.set_random_seed(0)
    inner_in = keras.Input((6,))
    inner = keras.Model(inner_in, keras.layers.Dense(5, activation="relu", name="fc")(inner_in), name="encoder")
    x = keras.Input((6,))
    model = keras.Model(x, keras.layers.Dense(2, name="head")(inner(x)), name="outer")
    model.save(tmp_path / "m.keras")
    result = portx.convert(str(tmp_path / "m.keras"), to="torch-xla", out=tmp_path / "out", verify=False,
                           explore=True)
    folder = tmp_path / "out" / EXPLORER
    collection = _load(folder / GRAPH_FILE)
    nodes = _as_model_explorer(me, collection).graphs[0].nodes
    assert len(nodes) == len(result.graph.nodes)
    assert {"encoder/fc", "head"} <= {n.namespace for n in nodes}
    assert sorted(p.name for p in folder.iterdir()) == [GRAPH_FILE, "node_data_layout.json", "node_data_tpu.json"]
    panel = collection["graphs"][0]["groupNodeAttributes"][""]
    assert panel["error overlay"].startswith("none: verification was skipped")


def test_failed_verification_still_writes_the_error_overlay_red_from_the_broken_node(tmp_path, me):
    from portx.errors import VerificationFailed
    from tests.support.broken import FcReluFc, broken_keras_relu

    torch.manual_seed(0)
    with broken_keras_relu(), pytest.raises(VerificationFailed):
        portx.convert(FcReluFc(), example_inputs=(torch.randn(2, 8),), out=tmp_path / "out", grad=False, explore=True)
    nodes = _load(tmp_path / "out" / EXPLORER / GRAPH_FILE)["graphs"][0]["nodes"]
    error = _overlay(me, tmp_path / "out" / EXPLORER / "node_data_error.json")["results"]
    red = [nodes[int(i)]["namespace"] for i, r in error.items() if r["bgColor"] == "#ef9a9a"]
    assert red[0] == "act" and error["0"]["bgColor"] == "#c8e6c9"  # fc1 fine; act is where it diverges
