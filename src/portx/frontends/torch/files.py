"""Reading PyTorch sources safely: live modules, .pt2, TorchScript .pt, pickles (opt-in only).

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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...errors import BadInput, first_line
from ...ir import batch_inputs
from ..input_spec import parse_input_spec
from . import export_module, lower_exported, walk_program
from .arrays import array_of
from .symbols import divisor, export_free, hints_at, input_symbols, named_sites, resized_at, size_hints, symbol_rows

__all__ = ["TorchSource", "load_torch_source", "from_module", "output_structure"]

@dataclass
class TorchSource:
    """A loaded PyTorch model: its ExportedProgram, example inputs and the module (or callable) to run.

    It follows the Source protocol of ``frontends/__init__.py``: ``lower()``, ``run(*arrays)``, ``intermediates()``.
    Example: ``src = from_module(net, (x,)); src.run(x.numpy())[0].shape``.
    """

    program: object
    example_inputs: tuple
    module: object  # callable(*torch tensors) -> tensor or nested tensors
    label: str
    notes: list = field(default_factory=list)  # warnings for the report (renamed names, pinned dims)
    declared: list = field(default_factory=list)  # dynamic dims the program declares (``dynamic_dims``)
    batch_given: int = 0  # the example's batch as given, where it was traced at another (Note [batch of one])
    _walked: tuple = field(default=None, init=False, repr=False, compare=False)  # (program, prepared, lowering)
    pinned: dict = None  # {(input, axis): why} for the axes exported free that torch specialised
    at: dict = None  # {symbol: size} where the program is lowered at other sizes than its example's
    prepared: dict = field(default_factory=dict)  # its program prepared for lowering, shared by its resized copies

    def symbolic(self, sites) -> bool:
        """True when every (input, axis) of ``sites`` is a symbol of the program (Note [symbolic export])."""
        return self.pinned is not None and all(tuple(site) in input_symbols(self.program) for site in sites)

    def divisor(self, sites) -> int:  # what torch divides ``sites`` by: Note [divided dims] in session/free_dims.py
        return 1 if self.pinned is None else divisor(self.program, sites)

    def dynamic_dims(self) -> list:
        """The dims a .pt2 declares with ``torch.export.Dim``: [{"symbol", "sites": [[input, axis]], "min",
        "max"}] (Note [free dims] in ir/types.py)."""
        return self.declared

    def resized(self, sizes):
        """This model traced at other input sizes: ``sizes`` is {(input index, axis): size}. BadInput when
        it cannot run there (a .pt2 exported with static shapes, a view to a constant size)."""
        args = tuple(resize_tensor(t, {axis: n for (i, axis), n in sizes.items() if i == k})
                     for k, t in enumerate(self.example_inputs))
        at = self.symbols_at(sizes)
        if at is not None:  # the same program at other sizes of its symbols: no tracing (Note [symbolic export])
            return TorchSource(self.program, args, self.module, self.label, [], self.declared, self.batch_given,
                               self.pinned, at, self.prepared)
        program = None
        if isinstance(self.module, torch.jit.ScriptModule):
            from torch._export.converter import TS2EPConverter  # private API; pinned by tests/frontends
            try:
                program = TS2EPConverter(self.module, args).convert()
            except Exception as exc:  # noqa: BLE001 - any failure means "not at this size"
                raise BadInput(f"{self.label}: does not trace at input sizes {_sizes_text(args)} "
                               f"({first_line(exc, 160, type(exc).__name__)})") from None
        elif self.pinned is not None:  # exported symbolic again: a batch of 1 torch specialised, now 2
            sites = sorted({*input_symbols(self.program), *self.pinned, *sizes})
            program, pinned = export_free(self.module, args, sites)
            if program is not None:
                return TorchSource(program, args, self.module, self.label, [], self.declared, self.batch_given, pinned)
        if program is None:
            try:
                program = export_module(self.module, args)
            except BadInput as exc:
                why = "exported with static shapes; re-export it with torch.export.Dim to free them" \
                    if "Guard failed" in str(exc) else str(exc).split(". ")[0]
                raise BadInput(f"{self.label}: does not run at input sizes {_sizes_text(args)} ({why})") from None
        return TorchSource(program, args, self.module, self.label, [], self.declared, self.batch_given)

    def symbols_at(self, sizes):
        """{symbol: size} of the program at ``sizes`` ({(input, axis): size}) by substitution (``resized_at``), None
        where the program is not symbolic there (Note [symbolic export])."""
        return None if self.pinned is None else resized_at(self.program, input_symbols(self.program),
                                                           self.at or size_hints(self.program), sizes)

    def hints(self, sizes):
        """What ``lower()`` would give at other sizes of the program's symbols (``sizes``: {(input, axis): size}),
        read from torch's symbolic shapes without lowering again (``hints_at``, Note [symbols read directly]);
        None where the program is not symbolic there."""
        at = self.symbols_at(sizes)
        return None if at is None else hints_at(self.walk(self.program)[1], at)

    def lower(self, name="model", strict_tpu=False):
        """The IR Graph, with the program's output nesting in ``meta`` (Note [output structure])."""
        graph = lower_exported(self.program, name=name, strict_tpu=strict_tpu, walk=self.walk)
        structure = output_structure(self.program)
        return graph if structure is None else graph.replace(meta={**graph.meta, "output_structure": structure})

    def torch_inputs(self, arrays) -> list:
        """NumPy arrays as tensors of the example inputs' dtypes (int64 ids the IR narrowed to int32 go back)."""
        # np.ascontiguousarray would turn a 0-d input into shape (1,); np.require keeps the rank
        return [torch.from_numpy(np.require(a, requirements="C")).to(ex.dtype) if isinstance(ex, torch.Tensor)
                else torch.from_numpy(np.require(a, requirements="C")) for a, ex in zip(arrays, self.example_inputs)]

    def run(self, *arrays) -> list:
        """The module's outputs on NumPy inputs, flattened in torch.export's output order, as NumPy."""
        with torch.no_grad():
            out = self.module(*self.torch_inputs(arrays))
        flat = torch.utils._pytree.tree_leaves(out)  # nested dicts/tuples/lists, in torch.export's output order
        return [array_of(t, keep_bfloat16=True) for t in flat]  # compared at bfloat16's resolution

    def walk(self, program):
        """``walk_program(program)``, kept for the last program walked (Note [one walk per program]).

        Example: ``src.walk(src.program)[1].env`` maps each fx node to its IR value.
        """
        if self._walked is None or self._walked[0] is not program:  # at its sizes, sharing its prepared program
            self._walked = (program, *walk_program(program, self.at, self.prepared))
        return self._walked[1:]

    # Note [one walk per program]: lowering a program (its decompositions, then every import rule) is most of
    # ``lower``. The source's own run for verification needs the same walk (which IR value each fx node became),
    # and walked the program again: 91 s of the 104 s that run took on the 1B Llama folder (a busy machine). A
    # TorchSource keeps the walk of its program, so ``lower`` and ``intermediates`` share one; a source traced
    # again (``resized``) is a new object that walks its own program. The walk holds the lowered nodes and views
    # of the weights the graph holds anyway.

    def intermediates(self, arrays, keep=None, release=None) -> dict:
        """IR value name -> the program's own intermediate on ``arrays`` (see torch_intermediates.py)."""
        from .intermediates import source_intermediates

        return source_intermediates(self, arrays, keep, release)

    def stream_intermediates(self, arrays, keep=None, release=None) -> tuple:
        """``intermediates`` made one at a time, as far as asked: (their names, an iterator of (name, value))."""
        from .intermediates import stream_intermediates

        return stream_intermediates(self, arrays, keep, release)


def resize_tensor(t, axes: dict):
    """``t`` cut or repeated along each axis in ``axes`` ({axis: size}) to that size (rows cycle)."""
    for axis, n in axes.items():
        t = t.index_select(axis, torch.arange(n) % t.shape[axis])
    return t


def _sizes_text(args) -> str:
    return ", ".join("x".join(str(d) for d in a.shape) for a in args if isinstance(a, torch.Tensor))


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


def from_module(module, example_inputs, label=None, batch=None, free=()) -> TorchSource:
    """Wrap a live ``nn.Module`` with example inputs (tensors or NumPy arrays); ``batch``: trace an example batch
    of 1 at this many rows instead, where the module traces there (Note [batch of one]); ``free``: ``--dynamic``
    specs (``["x:1"]``) of the axes exported symbolic besides the batch (Note [symbolic export])."""
    if not isinstance(module, torch.nn.Module):
        raise BadInput(f"{type(module).__name__} is not a torch.nn.Module", hint="pass an nn.Module or a file path")
    if example_inputs is None:
        raise BadInput(f"{type(module).__name__}: example_inputs are required for a live module",
                       hint="pass example_inputs=(tensor, ...) with the shapes to convert for")
    if isinstance(example_inputs, (torch.Tensor, np.ndarray)):  # one bare input: the common slip
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise BadInput(f"{type(module).__name__}: example_inputs is a {type(example_inputs).__name__}",
                       hint="pass a tuple of tensors, one per forward argument: example_inputs=(x,)")
    inputs = tuple(torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x for x in example_inputs)
    _check_input_dtypes(module, inputs)
    module.eval()
    wider = _batch_at(inputs, batch) if batch else None
    if wider is not None:  # Note [batch of one]
        try:
            return _exported(module, wider, label or type(module).__name__, free, batch_given=1)
        except BadInput:  # not at that batch: traced at the example's, and find_free says why it stays pinned
            pass
    return _exported(module, inputs, label or type(module).__name__, free)


def _exported(module, inputs, label, free, batch_given=0) -> TorchSource:
    """``module`` exported once with axis 0 of its batch inputs and the ``free`` axes (``--dynamic`` specs) symbolic
    (Note [symbolic export]); at static sizes where torch.export cannot trace it so."""
    sites = [(i, 0) for i in batch_inputs([tuple(t.shape) for t in inputs])] + named_sites(module, inputs, free)
    program, pinned = export_free(module, inputs, sites) if sites else (None, None)
    if program is None:
        return TorchSource(export_module(module, inputs), inputs, module, label, batch_given=batch_given)
    return TorchSource(program, inputs, module, label, batch_given=batch_given, pinned=pinned)


def _batch_at(inputs, n):
    """``inputs`` with their batch (``batch_inputs``) of 1 repeated to ``n`` rows; None when the batch is not 1, or
    another input's axis 0 is ``n`` (the batch would then take it in: ``block_diag`` of 1, 2 and 3 rows)."""
    axes = batch_inputs([tuple(t.shape) for t in inputs])
    if not axes or inputs[axes[0]].shape[0] != 1:
        return None
    if any(t.dim() and t.shape[0] == n for i, t in enumerate(inputs) if i not in axes):
        return None
    return tuple(resize_tensor(t, {0: n}) if i in axes else t for i, t in enumerate(inputs))

# Note [batch of one]: torch specializes a size of 1, so find_free (session/free_dims.py) traces and lowers a
# batch-1 example again at 2 (ONE_TRACED_AT) before diffing it with 3, and the graph at 1 is thrown away. When
# the batch may stay free (no --static-batch, no --dynamic), convert asks ``load`` for a live module traced at 2
# from the start (rows repeated): one torch.export and one lowering fewer (resnet50: 0.9 s of 11). A module
# that does not trace at 2 is traced at its example, as before. ``batch_given`` keeps the 1: convert verifies the
# user's own example there (verification/dynamic.py ``example_shapes``), not the rows repeated.


def _check_input_dtypes(module, inputs):
    """A floating input of another dtype than the model's floating weights is the user's mistake (float16
    given to a float32 model): say so, instead of failing deep inside lowering."""
    weights = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if len(weights) != 1:
        return
    (dtype,) = weights
    for i, x in enumerate(inputs):
        if x.is_floating_point() and x.dtype != dtype:
            name = str(dtype).replace("torch.", "")
            raise BadInput(f"{type(module).__name__}: input {i} is {str(x.dtype).replace('torch.', '')} but the "
                           f"model's weights are {name}",
                           hint=f"give {name} inputs (--input NAME:SHAPE:{name}), or convert the model to the "
                                "input dtype first")


def _load_pt2(path, trust_pickle=False) -> TorchSource:
    from .pt2 import load_pt2_safely

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
    if declared:  # exported again from its module, its Dims symbolic (Note [symbolic export])
        ep, pinned = export_free(module, tuple(args), [site for row in declared for site in row["sites"]])
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


def output_structure(program):
    """The program's output nesting as plain data (see Note [output structure] in targets/codegen.py),
    or None when it is one tensor or a flat tuple (the emitted model then returns it as before)."""
    spec = program.call_spec.out_spec
    if spec is None or spec.is_leaf() or (spec.type in (tuple, list) and all(c.is_leaf() for c in spec.children())):
        return None
    counter = iter(range(spec.num_leaves))

    def plain(node):
        if node.is_leaf():
            return next(counter)
        children = [plain(c) for c in node.children()]
        if node.type is dict and all(isinstance(k, (str, int)) for k in node.context):
            return {"dict": [[k, c] for k, c in zip(node.context, children)]}
        if node.type in (tuple, list):
            return {node.type.__name__: children}
        raise TypeError(node.type)

    try:
        return plain(spec)
    except TypeError:  # namedtuples and custom containers: the emitted model returns the flat list
        return None
