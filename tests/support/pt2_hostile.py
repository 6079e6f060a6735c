"""Builders of hostile ``.pt2`` archives: a real torch.export archive, then one member edited.

Every code-execution payload creates a marker file when it runs; the tests assert it never exists.
"""
import io
import json
import pickle
import zipfile

import torch
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)
        self.register_buffer("offset", torch.arange(3.0))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) + self.offset + torch.tensor([1.0, 2.0, 3.0])


class Marker:
    """Unpickling this creates a file: the proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def payload(marker) -> bytes:
    """A torch.save archive whose unpickling creates ``marker``."""
    buffer = io.BytesIO()
    torch.save({"w": Marker(marker)}, buffer)
    return buffer.getvalue()


def raw_pickle(marker) -> bytes:
    return pickle.dumps(Marker(marker))


def export_small(path, model=None, x=None, **kwargs):
    model = model or Small().eval()
    torch.export.save(torch.export.export(model, (torch.randn(2, 4) if x is None else x,), **kwargs), path)
    return path


def rewrite(src, dst, edit_json=None, members=None, drop=(), configs=None):
    """Copy archive ``src`` to ``dst``; ``edit_json(doc)`` edits model.json in place; ``members``
    {relative name: bytes} adds or replaces members; ``configs`` {kind: edit(config)} edits the
    weights/constants configs; ``drop`` removes members."""
    with zipfile.ZipFile(src) as zin:
        root = zin.namelist()[0].split("/", 1)[0]
        data = {n[len(root) + 1:]: zin.read(n) for n in zin.namelist()}
    if edit_json:
        doc = json.loads(data["models/model.json"])
        edit_json(doc)
        data["models/model.json"] = json.dumps(doc).encode()
    for kind, edit in (configs or {}).items():
        name = f"data/{kind}/model_{kind}_config.json"
        config = json.loads(data[name])
        edit(config)
        data[name] = json.dumps(config).encode()
    data.update(members or {})
    for name in drop:
        data.pop(name, None)
    with zipfile.ZipFile(dst, "w") as zout:
        for name, blob in data.items():
            zout.writestr(name if name.startswith("../") else f"{root}/{name}", blob)
    return dst


def strings_at(doc, key):
    """Every dict holding ``key`` anywhere in the document (to edit names wherever they occur)."""
    found, stack = [], [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node:
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def rename_everywhere(doc, old, new):
    """Replace string ``old`` by ``new`` in every value and key of the document (a consistent rename)."""
    def visit(node):
        if isinstance(node, dict):
            return {(new if k == old else k): visit(v) for k, v in node.items()}
        if isinstance(node, list):
            return [visit(v) for v in node]
        return new if node == old else node

    renamed = visit(doc)
    doc.clear()
    doc.update(renamed)


def mutate(doc, path, value, delete):
    """Set (or delete) the item at ``path`` of a JSON document; returns it (``value`` when ``path`` is empty)."""
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return doc
