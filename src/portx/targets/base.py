"""The Target protocol: what api and verification need from an output format, written once per target.

A target is an object, not a string: api indexes ``TARGETS[to]`` and verification asks ``target.owns(out)``,
and neither branches on a target's name. Each target package (``keras_jax/``, ``torch_xla/``) holds its
emitter (IR -> model.py + weights), its runtime (load, run, observe intermediates) and its TPU proof;
its ``Target`` subclass only points at them.

Example:
    >>> target = TARGETS["torch-xla"]
    >>> emitted = target.emit(graph, "out/")             # out/model.py, out/model.safetensors
    >>> model = target.load("out/")                      # as out/model.py's load_model() gives it
    >>> outputs = target.run(model, make_inputs(graph, seed=0))
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..session.report_sections import TpuProof  # a leaf: Note [the report is a leaf]
from .forward_cut import forward_cutter

__all__ = ["Target"]


class Target:
    """One output format. Subclasses set the attributes and implement the methods that raise here."""

    #: the key of emit rules (``@OP.emits(name)``) and pass pipelines, and the value of ``--to``
    name = ""
    #: other names the CLI accepts for this target (``--target tpu``)
    aliases = ()
    #: the op table (``op_tables/<table>.toml``) that gives each op's TPU status for this target
    table = ""
    #: the weights file written beside model.py
    weights_file = ""
    #: how every model.py this target writes begins (its docstring's first words)
    header = ""
    #: the deployable TPU artifact ``export_tpu`` writes into OUT, or None when the target has none
    tpu_artifact = None
    #: the framework its loaded models run in, which the gradient check differentiates them with
    #: (``frontends.base.TORCH`` or ``KERAS``)
    framework = ""

    def __repr__(self):
        return f"<target {self.name}>"

    def emitter(self, graph):
        """The in-memory emitter for ``graph`` (``.emit_graph()`` -> model.py text, ``.names``: Value -> variable)."""
        raise NotImplementedError

    def emit(self, graph, folder, max_shard_size=None) -> dict:
        """Write model.py and the weights into ``folder``: {"code", "weights", "var_of", "model", ...}.

        ``max_shard_size`` (bytes, or text such as ``"2GB"``): weights past it are written in shards.

        Raises UnsupportedOps listing every node the target cannot express (Note [emit-time unsupported]).
        """
        raise NotImplementedError

    def weights_path(self, folder) -> Path:
        """The weights file of OUT ``folder`` that ``load_model()`` reads first (an index, where sharded)."""
        return Path(folder) / self.weights_file

    def load(self, path):
        """The model in ``path`` (an OUT folder or its model.py), loaded as a user would (``load_model()``)."""
        raise NotImplementedError

    def build(self, graph):
        """``graph``'s model with its weights, as ``load`` gives it after ``emit``: the blocks of streaming
        verification (verification/streaming.py). By default emitted into a scratch folder and loaded from it."""
        folder = Path(tempfile.mkdtemp(prefix="portx-segment-"))
        try:
            self.emit(graph, folder)
            return self.load(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def load_abstract(self, path):
        """The model in ``path`` without its weights where the target can build it so (shapes and dtypes only,
        for parameter counts and the TPU proof: Note [weight budget]); by default loaded whole."""
        return self.load(path)

    def runner(self, model):
        """``arrays -> [array]`` running ``model``; prepared once, so several batches share one compile."""
        raise NotImplementedError

    def run(self, model, arrays) -> list:
        """``model``'s outputs on NumPy ``arrays``, flat, in the IR's output order."""
        return self.runner(model)(arrays)

    def observe(self, model, arrays, names, code=None) -> dict:
        """{variable: array} for the ``names`` (variables of the emitted code) on ``arrays``.

        ``code`` is the model.py ``model`` was loaded from, or None for a live model.
        """
        raise NotImplementedError

    def input_shapes(self, model):
        """The input shapes ``model`` takes, or None when the model does not say (a torch module)."""
        return None

    def parameter_counts(self, model) -> dict:
        """{"trainable": elements that train, "non_trainable": stored elements that do not} of ``model``."""
        raise NotImplementedError

    def rebind(self, model, graph, like) -> bool:
        """Give ``model`` (emitted from graph ``like``) the weights of ``graph``, a graph of the same structure
        (another block of a decoder), so that it runs without being emitted and compiled again; False where the
        target does not (verification/streaming.py then emits ``graph`` anew)."""
        return False

    def cutter(self, model, graph, emitted):
        """``cut(segment) -> (needed IR values, run) | why``: a block of the loaded ``model`` (emitted from ``graph``;
        ``emitted``: emit's dict) run on its own, sharing the model's weights (Note [cut blocks] in
        keras_jax/cuts.py); ``run(arrays)`` takes the needed values. By default a slice of a module's straight-line
        ``forward`` (Note [forward slices] in forward_cut.py)."""
        return forward_cutter(model, graph, emitted.get("var_of") or {}, emitted.get("block_inputs"))

    def prove_tpu(self, model, graph) -> dict:
        """Lower ``model`` for TPU: {"verdict": "ok"|"problems"|"failed"|"skipped", "problems": [...], ...}."""
        raise NotImplementedError

    def tpu_proof(self, model, graph) -> TpuProof:
        """``prove_tpu``'s proof as report["tpu"], typed (Note [typed sections] in session/report_sections.py).
        Example: ``KERAS_JAX.tpu_proof(model, graph).verdict`` -> ``"ok"``."""
        return TpuProof.from_dict(self.prove_tpu(model, graph))

    def prove_sharded(self, folder, graph, mesh, arrays, abstract=False) -> dict:
        """Run the model in ``folder`` split over ``mesh`` ({axis: size}) and compare it with one device;
        ``abstract``: lower it sharded on abstract weights instead, running nothing."""
        return {"verdict": "skipped", "why": f"--to {self.name} has no mesh proof; its model.py has tp_plan()"}

    def export_tpu(self, model, graph, path) -> dict:
        """Write the deployable TPU artifact to ``path`` (only where ``tpu_artifact`` is set)."""
        raise NotImplementedError(f"the {self.name} target writes no TPU artifact")

    def owns(self, out) -> bool:
        """True when ``out`` (an OUT folder or its model.py) was written for this target.

        Its weights file decides; without one (deleted, or never written), its model.py's first line, so
        that the error about the missing file names the right one.
        """
        if not isinstance(out, (str, os.PathLike)):
            return False
        path = Path(out)
        folder = path if path.is_dir() else path.parent
        if (folder / self.weights_file).is_file() or self.weights_path(folder).is_file():
            return True
        try:
            with open(path / "model.py" if path.is_dir() else path, encoding="utf-8", errors="replace") as f:
                return f.readline().startswith(self.header)
        except OSError:
            return False
