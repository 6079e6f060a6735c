"""A loaded PyTorch model (``TorchSource``): its ExportedProgram, example inputs and the module to run, lowered
once per program (Note [one walk per program]) and resized by substitution into its symbols where it has them
(Note [symbolic export] in symbols.py). Loading it: files.py (files), live.py (live modules).

Example:
    >>> src = TorchSource(torch.export.export(net, (x,)), (x,), net, "Net")
    >>> src.lower().outputs
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ...errors import BadInput, first_line
from . import export_module, lower_exported, walk_program
from ..base import TORCH, Differentiable, SourceBase
from ...weights.tensors import array_of
from .intermediates import source_intermediates, stream_intermediates
from .symbols import divisor, export_free, hints_at, input_symbols, resized_at, size_hints

__all__ = ["TorchSource", "resize_tensor", "output_structure"]

@dataclass
class TorchSource(SourceBase):
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

    def divisor(self, sites) -> int:  # what torch divides ``sites`` by: Note [divided dims] in session/dims/find.py
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
        return [array_of(t) for t in flat]  # compared at bfloat16's resolution

    def differentiable(self) -> Differentiable:
        """The module, differentiated with ``torch.autograd`` (frontends/base.py)."""
        return Differentiable(self.module, TORCH)

    def examples(self) -> list:
        """The example inputs it was exported with (tensors)."""
        return list(self.example_inputs)

    def given_batch(self) -> int:
        """The example's batch as given, where it was traced at another (Note [batch of one])."""
        return self.batch_given

    def pinned_dims(self) -> dict | None:
        """The axes exported free that torch specialised, and why; None unless exported symbolically."""
        return self.pinned

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
        return source_intermediates(self, arrays, keep, release)

    def stream_intermediates(self, arrays, keep=None, release=None) -> tuple:
        """``intermediates`` made one at a time, as far as asked: (their names, an iterator of (name, value))."""
        return stream_intermediates(self, arrays, keep, release)


def resize_tensor(t, axes: dict):
    """``t`` cut or repeated along each axis in ``axes`` ({axis: size}) to that size (rows cycle)."""
    for axis, n in axes.items():
        t = t.index_select(axis, torch.arange(n) % t.shape[axis])
    return t


def _sizes_text(args) -> str:
    return ", ".join("x".join(str(d) for d in a.shape) for a in args if isinstance(a, torch.Tensor))


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
