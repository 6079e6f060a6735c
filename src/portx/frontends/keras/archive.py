"""Reading a stored Keras model's description without trusting it: the ``.keras`` zip and the legacy ``.h5``.

Note [keras archive checks]: before Keras sees a file, portx reads the model's description itself and refuses
(BadInput, naming the file and the field) what Keras would choke on or what could hurt the machine:

- zip members whose names are absolute, hold ``..``, a backslash or NUL, or repeat (zipfile reads the last
  copy, another tool the first); members declaring far more bytes than they store (decompression bombs);
  a config.json over ``MAX_CONFIG_BYTES`` or not UTF-8;
- JSON nested more than ``MAX_DEPTH`` levels (Keras' json.loads and deserializer recurse once per level,
  so a 100,000-deep file ends in RecursionError), or whose top level is not an object with a class name;
- an ``.h5`` whose ``model_config`` attribute is not the JSON text of such an object;
- HDF5 datasets declaring far more bytes than they store (shape bombs Keras would allocate while reading).

The result carries the parsed config and the number of weight bytes the file holds, the budget of
Note [keras load guards]. Walks are iterative, so hostile nesting cannot exhaust the Python stack.

Example:
    >>> stored = read_stored_model(Path("model.keras"))
    >>> stored.config["class_name"], stored.weight_bytes
    ('Functional', 11652)
"""
from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from ...errors import BadInput

__all__ = ["nested_deeper_than", "StoredModel", "read_stored_model", "read_stored_folder", "is_keras_folder",
           "FOLDER_WEIGHTS", "stored_layers", "iter_objects", "object_name",
           "json_kind", "MAX_DEPTH", "MAX_CONFIG_BYTES"]

#: deepest JSON nesting accepted; Keras' own configs stay under 40 even for models nested several times
MAX_DEPTH = 256
#: largest config.json / model_config accepted (a 2,000-layer model's config is about 3 MB)
MAX_CONFIG_BYTES = 64 << 20
#: a member or dataset declaring more than this many times its stored bytes is a bomb ...
_MAX_EXPANSION = 100
#: ... once it declares more than this many bytes (small members compress well for honest reasons)
_BOMB_FLOOR = 16 << 20
#: the HDF5 objects visited before an .h5 file counts as hostile (a big model has a few thousand)
_MAX_H5_OBJECTS = 200_000
_KNOWN_MEMBERS = {"config.json", "metadata.json", "model.weights.h5", "model.weights.npz"}
#: what names a folder as Keras' (``save_to_preset``, ``model.save(..., zipped=False)``): its weights files
FOLDER_WEIGHTS = ("model.weights.h5", "model.weights.json")
#: a shard as Keras 3's ``save_weights(..., max_shard_size=)`` names it: a plain name beside the index
_SHARD = re.compile(r"[\w.-]+_\d{5}\.weights\.h5")
_RESAVE = "the file may be truncated or of another kind; re-save it with model.save()"


@dataclass(frozen=True)
class StoredModel:
    """A stored model's parsed config and the bytes of weights its file holds; for a folder, also the weights
    file Keras' ``load_weights`` reads (``model.weights.h5``, or the ``model.weights.json`` of its shards)."""

    config: dict
    weight_bytes: int
    weights: Path | None = None


def read_stored_model(path: Path) -> StoredModel:
    """The checked config of a ``.keras`` or ``.h5`` file (Note [keras archive checks]); BadInput when hostile."""
    if path.suffix.lower() == ".keras":
        return _read_archive(path)
    return _read_h5(path)


def _read_archive(path) -> StoredModel:
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            _check_members(path, infos)
            names = {i.filename: i for i in infos}
            if "config.json" not in names:
                raise BadInput(f"{path}: not a readable .keras archive (no config.json in a zip file)", hint=_RESAVE)
            unknown = [n for n in names if n not in _KNOWN_MEMBERS and not n.startswith("assets/")]
            if unknown:
                raise BadInput(f"{path}: unexpected archive member {unknown[0]!r}",
                               hint="a .keras file holds config.json, metadata.json, model.weights.h5 and assets/")
            if names["config.json"].file_size > MAX_CONFIG_BYTES:
                raise BadInput(f"{path}: config.json declares {names['config.json'].file_size} bytes, more than the "
                               f"{MAX_CONFIG_BYTES >> 20} MiB portx reads", hint=_RESAVE)
            raw = z.read("config.json")
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - BadZipFile, zlib.error, RuntimeError (encrypted), EOFError...
        raise BadInput(f"{path}: not a readable .keras archive ({_why(exc)})", hint=_RESAVE) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: config.json is not UTF-8 text (byte {exc.start})", hint=_RESAVE) from None
    weights = names.get("model.weights.h5") or names.get("model.weights.npz")
    return StoredModel(_parse_config(path, "config.json", text), weights.file_size if weights else 0)


def is_keras_folder(path) -> bool:
    """True for a folder Keras wrote: config.json beside ``model.weights.h5`` or ``model.weights.json``
    (a keras-hub preset, an unzipped ``.keras``); a Hugging Face folder has neither weights file."""
    folder = Path(path)
    return folder.is_dir() and (folder / "config.json").is_file() and any(
        (folder / name).is_file() for name in FOLDER_WEIGHTS)


def read_stored_folder(folder: Path) -> StoredModel:
    """The checked config of a Keras folder and its weights file, each ``.h5`` checked as Note [keras archive
    checks] says; a sharded set's index must name plain shard files beside it, all present (BadInput)."""
    config = _parse_config(folder / "config.json", "config.json", _small_text(folder / "config.json"))
    single = folder / "model.weights.h5"
    if single.is_file():
        _check_h5_file(single)
        return StoredModel(config, single.stat().st_size, single)
    index = folder / "model.weights.json"
    try:
        weight_map = json.loads(_small_text(index)).get("weight_map")
    except (ValueError, AttributeError) as exc:
        raise BadInput(f"{index}: not a Keras shard index ({_why(exc)})", hint=_RESAVE_WEIGHTS) from None
    names = [n for files in (weight_map or {}).values() for n in (files if isinstance(files, list) else [files])]
    if not isinstance(weight_map, dict) or not names:
        raise BadInput(f"{index}: holds no weight_map of variable paths to shard files", hint=_RESAVE_WEIGHTS)
    for name in dict.fromkeys(names):
        if not isinstance(name, str) or not _SHARD.fullmatch(name):
            raise BadInput(f"{index}: shard {name!r} is not a shard file name beside the index "
                           "(NAME_00000.weights.h5)", hint="do not use this folder; re-save the weights")
        if not (folder / name).is_file():
            raise BadInput(f"{folder / name}: missing (listed in {index.name})", hint="copy the whole folder")
        _check_h5_file(folder / name)
    return StoredModel(config, sum((folder / n).stat().st_size for n in set(names)), index)


_RESAVE_WEIGHTS = "re-save them with model.save_weights(..., max_shard_size=) or backbone.save_to_preset()"


def _small_text(path) -> str:
    """The UTF-8 text of a config or index file of at most ``MAX_CONFIG_BYTES`` (BadInput otherwise)."""
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise BadInput(f"{path}: holds {path.stat().st_size} bytes, more than the {MAX_CONFIG_BYTES >> 20} MiB "
                           "portx reads", hint=_RESAVE)
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: is not UTF-8 text (byte {exc.start})", hint=_RESAVE) from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror})", hint="check the folder") from None


def _check_h5_file(path):
    import h5py

    try:
        with h5py.File(path, "r") as f:
            _check_h5_datasets(path, f)
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError... for damaged files
        raise BadInput(f"{path}: not a readable HDF5 file ({_why(exc)})", hint=_RESAVE) from None


def _why(exc) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:120]}" if text else type(exc).__name__


def _check_members(path, infos):
    """Refuse unsafe member names, repeated names and decompression bombs (Note [keras archive checks])."""
    seen = set()
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name).parts
        if (not name or name.startswith("/") or "\\" in name or "\x00" in name or ".." in parts
                or (parts and ":" in parts[0])):
            raise BadInput(f"{path}: archive member {name!r} has an unsafe name (absolute, '..' or a drive)",
                           hint="a .keras file written by Keras holds config.json, metadata.json, model.weights.h5 "
                                "and assets/; do not use this file")
        if name in seen:
            raise BadInput(f"{path}: archive member {name!r} appears twice, so tools may read different copies",
                           hint="re-save the model with model.save()")
        seen.add(name)
        if info.file_size > _BOMB_FLOOR and info.file_size > _MAX_EXPANSION * max(info.compress_size, 1):
            raise BadInput(f"{path}: archive member {name!r} declares {info.file_size} bytes but stores only "
                           f"{info.compress_size} (a decompression bomb?)", hint="do not use this file")


def _read_h5(path) -> StoredModel:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
            _check_h5_datasets(path, f)
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, TypeError... for damaged files
        raise BadInput(f"{path}: not a readable HDF5 file ({_why(exc)})", hint=_RESAVE) from None
    if raw is None:
        raise BadInput(f"{path}: holds weights but no model architecture",
                       hint="save the whole model (model.save('model.keras')) or pass the live model")
    if isinstance(raw, np.ndarray) and raw.shape == () and raw.dtype.kind in "SUO":
        raw = raw.item()
    if not isinstance(raw, (str, bytes)):
        kind = f"an array of shape {raw.shape}" if isinstance(raw, np.ndarray) else json_kind(raw.item()) \
            if isinstance(raw, np.generic) else json_kind(raw)
        raise BadInput(f"{path}: attribute model_config holds {kind} ({type(raw).__name__}), expected the "
                       "model's JSON text", hint=_RESAVE)
    if len(raw) > MAX_CONFIG_BYTES:
        raise BadInput(f"{path}: attribute model_config holds {len(raw)} bytes, more than the "
                       f"{MAX_CONFIG_BYTES >> 20} MiB portx reads", hint=_RESAVE)
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: attribute model_config is not UTF-8 text (byte {exc.start})", hint=_RESAVE) from None
    return StoredModel(_parse_config(path, "attribute model_config", text), path.stat().st_size)


def _check_h5_datasets(path, f):
    """Refuse HDF5 datasets that declare far more bytes than they store (Note [keras archive checks])."""
    import h5py

    stack, visited = [f], 0
    while stack:
        group = stack.pop()
        for key in group:
            visited += 1
            if visited > _MAX_H5_OBJECTS:
                raise BadInput(f"{path}: holds more than {_MAX_H5_OBJECTS} HDF5 objects", hint=_RESAVE)
            item = group.get(key, getlink=True)
            if not isinstance(item, h5py.HardLink):
                raise BadInput(f"{path}: HDF5 entry {group.name.rstrip('/')}/{key} is a link to elsewhere",
                               hint="Keras writes no links; re-save the model with model.save()")
            item = group[key]
            if isinstance(item, h5py.Group):
                stack.append(item)
            elif isinstance(item, h5py.Dataset):
                declared = int(np.prod(item.shape, dtype=object)) * item.dtype.itemsize if item.shape else 0
                stored = item.id.get_storage_size()
                if declared > _BOMB_FLOOR and declared > _MAX_EXPANSION * max(stored, 1):
                    raise BadInput(f"{path}: dataset {item.name} declares shape {tuple(item.shape)} "
                                   f"({declared} bytes) but stores {stored} bytes (a shape bomb?)",
                                   hint="do not use this file")


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def nested_deeper_than(text, limit: int) -> bool:
    """True when JSON ``text`` nests arrays/objects more than ``limit`` deep, found by one linear scan before any
    parser recurses (a raised recursion limit, as a deep model's model.py sets, would let json.loads overflow the
    C stack on a hostile file instead of raising RecursionError)."""
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def _parse_config(path, field, text) -> dict:
    """JSON text -> the top-level config object, refusing deep nesting and other shapes (BadInput)."""
    try:
        if nested_deeper_than(text, MAX_DEPTH):
            raise RecursionError
        config = json.loads(text)
    except RecursionError:
        config = None
        depth = MAX_DEPTH + 1
    except ValueError as exc:
        raise BadInput(f"{path}: {field} is not JSON ({str(exc).splitlines()[0][:120]})", hint=_RESAVE) from None
    else:
        depth = _depth(config)
    if depth > MAX_DEPTH:
        raise BadInput(f"{path}: {field} is nested more than {MAX_DEPTH} levels deep",
                       hint="Keras writes configs a few dozen levels deep; do not use this file")
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str) \
            or not isinstance(config.get("config"), (dict, list)):
        found = json_kind(config) if not isinstance(config, dict) else "an object without a class_name and config"
        raise BadInput(f"{path}: {field} holds {found}, expected a JSON object with 'class_name' and 'config'",
                       hint=_RESAVE)
    return config


def json_kind(value) -> str:
    """How JSON calls a parsed value: ``json_kind(3)`` -> "a number", ``json_kind(None)`` -> "null"."""
    kinds = [(bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "an array"),
             (dict, "an object")]
    return next((kind for cls, kind in kinds if isinstance(value, cls)), "null" if value is None else "a value")


def _depth(obj) -> int:
    deepest, stack = 0, [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            stack.extend((child, depth + 1) for child in item)
    return deepest


def iter_objects(config):
    """Each serialized object (a dict with a ``class_name``) with the name of the layer that holds it.

    Example: ``[(obj["class_name"], layer) for obj, layer in iter_objects(config)]`` ->
    ``[("Functional", ""), ("InputLayer", "x"), ...]``.
    """
    stack = [(config, "", True)]
    while stack:
        item, layer, is_layer = stack.pop()
        if isinstance(item, dict):
            if "class_name" in item:
                if is_layer or "inbound_nodes" in item or "build_config" in item:
                    layer = object_name(item) or layer
                yield item, layer
            stack.extend((child, layer, key == "layers") for key, child in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((child, layer, is_layer) for child in reversed(item))


def object_name(obj) -> str:
    """The ``config.name`` of a serialized object, or "" where it has none (or not a string)."""
    inner = obj.get("config")
    name = inner.get("name") if isinstance(inner, dict) else None
    return name if isinstance(name, str) else ""


def stored_layers(config) -> list:
    """Every (class_name, layer name) in a stored config, nested models included (string names only)."""
    return [(obj["class_name"], object_name(obj)) for obj, _ in iter_objects(config)
            if isinstance(obj["class_name"], str) and object_name(obj)]
