"""Emitted lines per model, flat (before) and structured (after): repeated blocks written once (Note [structured
code] in src/portx/targets/structure.py).

Run: .venv/bin/python benchmarks/emitted_lines.py [--models a,b] (``--help`` lists the models)

Prints one plain-text table, one row per (model, target):

  model    resnet50: torchvision's ResNet-50 layout (tests/support/structured_models.py, torchvision does not
           import here), input (1, 3, 64, 64); decoder32: tiny_llama's decoder with 32 blocks (width 32);
           keras_resnet50: keras.applications.ResNet50(weights=None), input (1, 32, 32, 3); vit: the small ViT;
           hf_llama32: a Hugging Face LlamaForCausalLM with 32 decoder layers (width 32, random weights), ids (1, 8);
           hub_gpt2, hub_llama_dropout: keras-hub's GPT2Backbone and LlamaBackbone(dropout=0.1), 4 layers, width 32;
           hub_mit: keras-hub's MiTBackbone, two stages of two blocks (heads 1, 2; spatial reduction 2, 1);
           tv_vit12: torchvision's ViT layout, 12 encoder layers named encoder_layer_N (structured_models.py);
           zoo_resnet: the zoo's ResNet (two BasicBlocks a stage, tests/support/zoo.py); zoo_convnext, zoo_unet: the
           zoo's ConvNeXt (two stages of one block class at two widths) and UNet (five double convs, no block
           number in their names: tests/test_zoo.py REPEATS); inception: keras.applications
           InceptionV3 (tests/support/zoo_keras.build_application: 75x75, blocks cut from the graph); nasnet:
           keras.applications.NASNetMobile, input (1, 32, 32, 3) (cells named by a suffix id); efficientnetb0,
           mobilenetv2 (alpha 0.35), mobilenetv3small, convnext_tiny: those keras.applications at 32x32 (blocks
           that differ by optional parts, pad widths and activations; ConvNeXt's numbered downsampling blocks)
  flat     lines of model.py with the blocks left flat (graph.meta["blocks"] and the names of blocks cut from the graph
           emptied: what portx wrote before structured code; torch submodules still sit at their source paths,
           Note [nested paths])
  after    lines of model.py as portx writes it now: the structured form where it is not longer than the flat
           one (Note [structured only where shorter] in src/portx/targets/structure.py)
  defs     block functions (Keras) or classes (torch) written; loops: Keras for-loops / torch chained containers

Each graph is what convert emits: the target's passes, then the free dims it keeps by default (``lower_for``; they
prepend nodes, Note [blocks after free dims] in src/portx/passes/free_dims.py). Both counts are the model code that
``emit_graph`` returns; the layout map or tp_plan table appended after it
(one line per weight, the same either way) is not counted. Each model runs in its own process (Note [one model
per process]); a model that fails is one row with the reason, and the table goes on.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
# benchmarks/transformers.py would shadow the transformers package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from portx import ops  # noqa: E402,F401  (registers every op)
from portx.frontends import load  # noqa: E402
from portx.logs import quiet_loggers, quiet_native_logs  # noqa: E402
from portx.session.dims import lower_for  # noqa: E402
from portx.targets import TARGETS  # noqa: E402
from tests.support.structured_models import ResNet, hf_llama, keras_resnet, small_decoder, small_vit, \
    torchvision_vit  # noqa: E402
from tests.support.zoo import ZOO  # noqa: E402


def resnet50():
    import torch

    torch.manual_seed(0)
    return load(ResNet().eval(), example_inputs=(torch.randn(1, 3, 64, 64),))


def decoder32():
    model, inputs = small_decoder(layers=32)
    return load(model, example_inputs=inputs)


def hf_llama32():
    model, inputs = hf_llama(layers=32)
    return load(model, example_inputs=inputs)


def keras_resnet50():
    import keras

    keras.utils.set_random_seed(0)
    return load(keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3)))


def inception():
    from tests.support.zoo_keras import build_application

    return load(build_application("InceptionV3")[0])


def vit():
    model, inputs = small_vit()
    return load(model, example_inputs=inputs)


def tv_vit12():
    model, inputs = torchvision_vit(layers=12)
    return load(model, example_inputs=inputs)


def zoo(name):
    """The zoo's model ``name`` (tests/support/zoo.py) at its example inputs."""
    model, inputs = ZOO[name]()
    return load(model, example_inputs=inputs)


def application(name, **kwargs):
    """keras.applications ``name`` at its smallest side (NASNetMobile, MobileNets: 32x32), NumPy-drawn weights
    (tests/support/zoo_keras.py)."""
    from tests.support.zoo_keras import build_application

    return load(build_application(name, **kwargs)[0])


def hub(name, **extra):
    """A keras-hub backbone (``GPT2Backbone``, ``LlamaBackbone``) with 4 layers, width 32, seed 0."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    config = dict(vocabulary_size=100, num_layers=4, hidden_dim=32, intermediate_dim=64, **extra)
    return load(getattr(keras_hub.models, name)(**config))


def hub_mit():
    """keras-hub's MiTBackbone at 32x32: two stages of two blocks, MiT-B0's pattern of heads (1, 2) and spatial
    reduction (2, 1), seed 0."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    return load(keras_hub.models.MiTBackbone(
        image_shape=(32, 32, 3), layerwise_depths=[2, 2], num_layers=2, layerwise_num_heads=[1, 2],
        layerwise_sr_ratios=[2, 1], max_drop_path_rate=0.0, layerwise_patch_sizes=[7, 3], layerwise_strides=[4, 2],
        hidden_dims=[16, 32]))


MODELS = {"resnet50": (resnet50, ("keras-jax", "torch-xla")), "decoder32": (decoder32, ("keras-jax", "torch-xla")),
          "keras_resnet50": (keras_resnet50, ("torch-xla", "keras-jax")), "vit": (vit, ("keras-jax", "torch-xla")),
          "keras_resnet_small": (lambda: load(keras_resnet()), ("torch-xla", "keras-jax")),
          "tv_vit12": (tv_vit12, ("torch-xla", "keras-jax")),
          "zoo_resnet": (lambda: zoo("resnet"), ("torch-xla", "keras-jax")),
          "hf_llama32": (hf_llama32, ("keras-jax", "torch-xla")), "inception": (inception, ("torch-xla", "keras-jax")),
          "hub_gpt2": (lambda: hub("GPT2Backbone", num_heads=2, max_sequence_length=16), ("torch-xla", "keras-jax")),
          "hub_llama_dropout": (lambda: hub("LlamaBackbone", num_query_heads=4, num_key_value_heads=2, dropout=0.1),
                                ("torch-xla", "keras-jax")),
          "nasnet": (lambda: application("NASNetMobile"), ("torch-xla", "keras-jax")),
          "efficientnetb0": (lambda: application("EfficientNetB0"), ("torch-xla", "keras-jax")),
          "mobilenetv2": (lambda: application("MobileNetV2", alpha=0.35), ("torch-xla", "keras-jax")),
          "mobilenetv3small": (lambda: application("MobileNetV3Small"), ("torch-xla", "keras-jax")),
          "convnext_tiny": (lambda: application("ConvNeXtTiny"), ("torch-xla", "keras-jax")),
          "hub_mit": (hub_mit, ("torch-xla", "keras-jax")),
          "zoo_convnext": (lambda: zoo("convnext"), ("keras-jax", "torch-xla")),
          "zoo_unet": (lambda: zoo("unet"), ("keras-jax", "torch-xla"))}


def emitted(graph, target) -> tuple:
    """(flat lines, structured lines, block definitions, loops) of ``graph`` emitted for ``target``."""
    flat = TARGETS[target].emitter(graph.replace(meta={**graph.meta, "blocks": [], "block_names": {}})).emit_graph()
    emitter = TARGETS[target].emitter(graph)
    text = emitter.emit_graph()
    defs = len(getattr(emitter, "functions", None) or getattr(emitter, "classes", []))
    loops = text.count("    for i in range(") + text.count("    for block in self.") + text.count("= nn.Sequential(")
    return len(flat.splitlines()), len(text.splitlines()), defs, loops


def measure(name):
    """The table's rows for model ``name``, one per target (the frameworks kept quiet: no start-up lines)."""
    make, targets = MODELS[name]
    with quiet_loggers(), quiet_native_logs(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = make()
        raw = src.lower()
        for target in targets:
            yield _row(name, target, *emitted(lower_for(src, TARGETS[target], raw=raw), target))


def _row(name, target, *cells):
    return f"{name:<20}{target:<11}" + "".join(f"{c:>{w}}" for c, w in zip(cells, (7, 7, 6, 7)))


def _failed(name, why):
    return f"{name:<20}{'-':<11}  failed: {why}"


def _one(name) -> int:
    """The child's work: print ``name``'s rows, or one row with the reason it failed."""
    try:
        for row in measure(name):
            print(row, flush=True)
    except Exception as exc:  # noqa: BLE001 - a benchmark row, not portx: the reason is the output
        text = str(exc).strip().splitlines()
        print(_failed(name, f"{type(exc).__name__}" + (f": {text[0][:120]}" if text else "")), flush=True)
    return 0


def rows_in_child(name, command=None):
    """Note [one model per process]: each model is built, lowered and emitted in its own process, so the memory
    of one is back before the next, and a model whose process dies (the kernel's out-of-memory killer under load,
    a native crash) is one row with the reason while the table goes on."""
    command = command or [sys.executable, str(Path(__file__).resolve()), "--one", name]
    with tempfile.TemporaryFile("w+") as err:  # a file, not a pipe: a chatty child cannot block on it
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True) as child:
            yield from (line.rstrip("\n") for line in child.stdout)
        err.seek(0)
        last = (err.read().strip().splitlines() or ["no message"])[-1]
    if child.returncode < 0:
        why = signal.Signals(-child.returncode).name
        yield _failed(name, f"killed by {why}" + (" (out of memory?)" if why == "SIGKILL" else ""))
    elif child.returncode:
        yield _failed(name, f"exit {child.returncode}: {last[:120]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Emitted lines per model and target, flat and structured.")
    parser.add_argument("--models", default="resnet50,decoder32,keras_resnet50", metavar="A,B,...",
                        help=f"comma-separated, from: {', '.join(MODELS)} (default: %(default)s)")
    parser.add_argument("--one", choices=MODELS, help=argparse.SUPPRESS)  # the child's part (rows_in_child)
    args = parser.parse_args(argv)
    if args.one:
        return _one(args.one)
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    print(f"{'model':<20}{'target':<11}{'flat':>7}{'after':>7}{'defs':>6}{'loops':>7}", flush=True)
    for name in names:
        for row in rows_in_child(name):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
