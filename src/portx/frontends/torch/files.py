"""Reading PyTorch files safely: .pt2, TorchScript .pt, pickles (opt-in only); live modules: live.py.

Note [safe loading]: nothing is unpickled by default. ``.pt`` files are opened with
``torch.load(weights_only=True)``, which refuses arbitrary objects; a full pickle of an
``nn.Module`` is loaded only with ``trust_pickle=True`` (``--trust-pickle``), because unpickling
runs code chosen by whoever wrote the file.

Example:
    >>> src = load_torch_source("model.pt2")
    >>> src.program, src.example_inputs
"""
from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path

import torch

from ...errors import BadInput, first_line
from ...ir import batch_inputs
from ..input_spec import parse_input_spec
from . import export_module
from .live import from_module
from .pt2 import load_pt2_safely
from .source import TorchSource
from .symbols import export_free, symbol_rows

__all__ = ["load_torch_source"]


def _example_from_specs(specs, path) -> tuple:
    if not specs:
        raise BadInput(f"{path}: this format does not record input shapes",
                       hint="pass --input NAME:SHAPE[:DTYPE] for every input, e.g. --input x:1x3x224x224")
    gen = torch.Generator().manual_seed(0)
    tensors = []
    for spec in specs:
        _, shape, dtype = parse_input_spec(spec)
        if dtype.startswith(("int", "uint")):
            tensors.append(torch.randint(0, 2, shape, generator=gen).to(getattr(torch, dtype)))
        elif dtype == "bool":
            tensors.append(torch.zeros(shape, dtype=torch.bool))
        else:
            tensors.append(torch.randn(shape, generator=gen).to(getattr(torch, dtype)))
    return tuple(tensors)


def _load_pt2(path, trust_pickle=False) -> TorchSource:
    try:
        ep, notes = load_pt2_safely(path, trust_pickle)
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - torch's deserializer raises anything on a damaged archive
        raise BadInput(f"{path}: not a readable torch.export archive ({type(exc).__name__})",
                       hint="the file may be truncated; re-save it with torch.export.save") from None
    user = set(ep.graph_signature.user_inputs)
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]
    declared = symbol_rows(ep)
    args = ep.example_inputs[0] if getattr(ep, "example_inputs", None) else None
    if args is None:
        args = tuple(torch.zeros([_hint(d) for d in n.meta["val"].shape], dtype=n.meta["val"].dtype)
                     for n in placeholders)
    try:
        module = ep.module()  # trusted: names cleaned, guards dropped
    except Exception as exc:  # noqa: BLE001 - torch checks parts of a program (module_call_graph) only here
        raise BadInput(f"{path}: torch.export loads the archive but cannot rebuild its module "
                       f"({type(exc).__name__}: {first_line(exc, 200)})",
                       hint="the archive's models/model.json was edited or damaged: export the model again") from None
    pinned = None
    if declared:  # exported again from its module, its Dims and its batch symbolic (Note [symbolic export])
        sites = [tuple(site) for row in declared for site in row["sites"]]
        batch = [(i, 0) for i in batch_inputs([tuple(a.shape) for a in args]) if (i, 0) not in sites]
        # its batch guard (at the export's batch) would pin the batch: the module exported drops it, the one run keeps
        # it (a batch torch still pins, by a literal, is freed by the ops' rules: Note [static batch])
        ep, pinned = export_free(ep.module(check_guards=False), tuple(args), sites + batch)
        pinned = {site: why for site, why in (pinned or {}).items() if site not in batch} if ep else None
        ep = ep or export_module(module, tuple(args))
    return TorchSource(ep, tuple(args), module, path.name, notes, declared, pinned=pinned)


def _hint(dim) -> int:
    return int(dim.node.hint) if isinstance(dim, torch.SymInt) and dim.node.hint is not None else int(dim)


def _is_torchscript(path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("constants.pkl") or "/code/" in n for n in z.namelist())
    except zipfile.BadZipFile:
        return False


def _load_torchscript(path, specs, trust) -> TorchSource:
    if not trust:
        raise BadInput(f"{path}: is a TorchScript archive; torch.jit.load runs code stored in it (its "
                       "__setstate__ methods and pickled constants)",
                       hint="pass --trust-pickle only if you trust its author, or export the original module with "
                            "torch.export.save and convert the .pt2")
    try:
        scripted = torch.jit.load(str(path), map_location="cpu")  # trusted: only with --trust-pickle
    except Exception as exc:
        raise BadInput(f"{path}: not a readable TorchScript archive ({type(exc).__name__})",
                       hint="the file may be truncated; re-save it with torch.jit.save") from None
    inputs = _example_from_specs(specs, path)
    from torch._export.converter import TS2EPConverter  # private API; pinned by tests/frontends

    try:
        ep = TS2EPConverter(scripted, inputs).convert()
    except Exception as exc:
        raise BadInput(f"{path}: TorchScript could not be converted to torch.export ({type(exc).__name__}: "
                       f"{first_line(exc)})",
                       hint="export the original nn.Module with torch.export.save and convert the .pt2") from None
    return TorchSource(ep, inputs, scripted, path.name)


def _load_pickle(path, specs, trust_pickle) -> TorchSource:
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        named = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if not named:
            raise BadInput(f"{path}: not a readable PyTorch file (not a torch.save archive)",
                           hint="the file may be truncated or of another kind") from None
        if not trust_pickle:
            raise BadInput(f"{path}: a full pickle that references {named.group(1)}; loading it would run "
                           "code stored in the file",
                           hint="pass --trust-pickle only if you trust its author, or save the model "
                                "with torch.export.save and convert the .pt2") from None
        obj = _trusted_load(path)
    except Exception as exc:
        raise BadInput(f"{path}: not a readable PyTorch file ({type(exc).__name__})",
                       hint="the file may be truncated or of another kind") from None
    if isinstance(obj, torch.nn.Module):
        return from_module(obj, _example_from_specs(specs, path), path.name)
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise BadInput(f"{path}: holds a state_dict ({len(obj)} tensors) but no architecture",
                       hint="build the model in Python, model.load_state_dict(...), then "
                            "torch.export.save(torch.export.export(model.eval(), (x,)), 'model.pt2') and convert "
                            "that, or call portx.convert(model, example_inputs=(x,))")
    raise BadInput(f"{path}: holds a {type(obj).__name__}, not a model",
                   hint="save the model with torch.export.save (.pt2) or torch.jit.save (.pt)")


def _trusted_load(path):
    try:
        return torch.load(str(path), map_location="cpu", weights_only=False)  # trusted: --trust-pickle
    except Exception as exc:  # the pickle may need classes that are not importable here
        missing = re.search(r"No module named '([\w.]+)'|Can't get attribute '(\w+)'", str(exc))
        needs = f" (it needs {missing.group(1) or missing.group(2)})" if missing else ""
        raise BadInput(f"{path}: could not unpickle{needs}: {type(exc).__name__}: {first_line(exc, 160)}",
                       hint="make the package that defines the model class importable (install it or add it to "
                            "PYTHONPATH), or save the model with torch.export.save and convert the .pt2") from None


def load_torch_source(path, input_specs=(), trust_pickle=False) -> TorchSource:
    """Open a .pt2 / .pt / .pth file (see Note [safe loading])."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path}: no such file", hint="check the path")
    if path.is_dir():
        raise BadInput(f"{path}: is a directory, expected a model file", hint="pass the model file inside it")
    if path.stat().st_size == 0:
        raise BadInput(f"{path}: is empty", hint="re-save the model")
    suffix = path.suffix.lower()
    if suffix == ".pt2":
        return _load_pt2(path, trust_pickle)
    if suffix in (".pt", ".pth", ".bin"):
        if _is_torchscript(path):
            return _load_torchscript(path, input_specs, trust_pickle)
        return _load_pickle(path, input_specs, trust_pickle)
    raise BadInput(f"{path}: unknown model format {suffix or '(no extension)'}",
                   hint="portx reads .pt2 (torch.export), .pt (TorchScript, or a pickled module "
                        "with --trust-pickle), .keras / .h5 (Keras) and .onnx")
