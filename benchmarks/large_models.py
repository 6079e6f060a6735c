"""Large decoders as TPU teams bring them: portx, keras-hub and the read-and-write floor on the same folder.

Run: .venv/bin/python benchmarks/large_models.py [--sizes tiny,1b,3b,8b] [--mem-limit-gb 16] [--timeout 1800]
     [--only portx,keras-hub,floor] [--json PATH] [--portx-args="--no-shard-proof"] [--cold]

For each size it writes (once per machine, cached) a Hugging Face Llama folder with random bfloat16 weights:
``config.json`` for ``LlamaForCausalLM``, ``model-0000k-of-0000n.safetensors`` shards of at most 5 GB (as the
published checkpoints are cut) and ``model.safetensors.index.json``. The writer never holds a model: each shard's
header is computed from the shapes, then each tensor is generated in chunks of rows and streamed to disk, so the
generator's memory is one chunk (64 MB). The cache is ``$PORTX_BENCH_CACHE`` or ``~/.cache/portx-bench``
(outside the repository; 8B takes 16 GB of disk), a folder per size, complete once its ``.complete`` exists.

Sizes (Llama 3 shapes; ``tiny`` is a 2-layer smoke shape):

  tiny  2 layers, hidden 64, 4 heads / 2 kv heads, intermediate 128, vocab 1000          (~0.6 MB)
  1b    Llama-3.2-1B: 16 layers, hidden 2048, 32 / 8 heads, intermediate 8192, tied    (2.5 GB)
  3b    Llama-3.2-3B: 28 layers, hidden 3072, 24 / 8 heads, intermediate 8192, tied    (6.4 GB)
  8b    Llama-3-8B:   32 layers, hidden 4096, 32 / 8 heads, intermediate 14336         (16.1 GB)

Each measurement runs in its own process tree, one after another (never two at once), while this process samples
the tree's resident memory from /proc every 0.1 s (the sum of VmRSS over the process and its descendants, so
memory-mapped file pages that stay resident count, as the kernel counts them); a tree above ``--mem-limit-gb``
is killed and its row says so. Columns:

  seconds     wall time of the process (imports included: the imports row gives them)
  peak GB     the tree's highest resident memory
  above GB    peak minus the imports row's peak (Python + torch + JAX + Keras loaded, no model)
  /weights    above GB over the folder's weight bytes
  result      ok, or the exit code and the last line the process wrote, or where memory ran out

Rows: ``imports`` (the baseline); ``portx`` (``portx convert FOLDER --to keras-jax``: conversion and
verification, as users run it); ``keras-hub`` (``Llama3Backbone.from_preset(FOLDER)`` then
``save_to_preset(OUT, max_shard_size=2)``, which checks nothing); ``floor read`` / ``floor write`` (every
shard read once, in 64 MB blocks, then the same bytes written once: the least any converter does; the
files were just written or read, so the read may come from the page cache, as it does for the others).

``--cold`` starts every row from disk instead: before each one the folder's shards are dropped from the page
cache (``posix_fadvise(POSIX_FADV_DONTNEED)``, which needs no privileges and drops a file's clean pages), and the
log line gives the share of the shards' pages still resident after the drop (``mincore``), so a row that read
from memory shows it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from portx.targets.torch_xla.shards import plan_shards

ROOT = Path(__file__).resolve().parents[1]
#: Llama 3 shapes (transformers' LlamaConfig fields); Llama-3.2 configs carry their rope scaling
SIZES = {
    "tiny": dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, vocab_size=1000, tie_word_embeddings=False, max_position_embeddings=256),
    "1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True, max_position_embeddings=131072,
               rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    "3b": dict(num_hidden_layers=28, hidden_size=3072, num_attention_heads=24, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True, max_position_embeddings=131072,
               rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    "8b": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=14336, vocab_size=128256, tie_word_embeddings=False, max_position_embeddings=8192),
}
#: the published Llama checkpoints' shard size (save_pretrained(max_shard_size="5GB"))
SHARD_BYTES = 5 * 10**9
_CHUNK = 64 << 20  # bytes generated, read or written at a time


def llama_config(shape: dict) -> dict:
    """config.json for ``LlamaForCausalLM`` at ``shape`` (SIZES' fields), bfloat16 as Meta publishes it."""
    heads = shape["num_attention_heads"]
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
            "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
            "head_dim": shape["hidden_size"] // heads, "initializer_range": 0.02, "mlp_bias": False,
            "pretraining_tp": 1, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
            "use_cache": True, "rope_scaling": None, **shape}


def llama_tensors(shape: dict) -> list:
    """[(name, shape)] of a Llama checkpoint in Hugging Face's order and names."""
    h, heads, kv = shape["hidden_size"], shape["num_attention_heads"], shape["num_key_value_heads"]
    d, inter = h // heads, shape["intermediate_size"]
    rows = [("model.embed_tokens.weight", (shape["vocab_size"], h))]
    for i in range(shape["num_hidden_layers"]):
        p = f"model.layers.{i}."
        rows += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.q_proj.weight", (heads * d, h)),
                 (p + "self_attn.k_proj.weight", (kv * d, h)), (p + "self_attn.v_proj.weight", (kv * d, h)),
                 (p + "self_attn.o_proj.weight", (h, heads * d)), (p + "post_attention_layernorm.weight", (h,)),
                 (p + "mlp.gate_proj.weight", (inter, h)), (p + "mlp.up_proj.weight", (inter, h)),
                 (p + "mlp.down_proj.weight", (h, inter))]
    rows.append(("model.norm.weight", (h,)))
    if not shape["tie_word_embeddings"]:
        rows.append(("lm_head.weight", (shape["vocab_size"], h)))
    return rows


def _bf16_chunk(rng, name, count) -> bytes:
    """``count`` bfloat16 values: ones for norm weights, else N(0, 0.02) (float32's top 16 bits)."""
    if name.endswith("norm.weight"):
        return np.full(count, 0x3F80, dtype="<u2").tobytes()
    values = rng.standard_normal(count, dtype=np.float32) * np.float32(0.02)
    return (values.view(np.uint32) >> 16).astype("<u2").tobytes()


def write_shard(path: Path, tensors, rng) -> int:
    """Stream one safetensors file: the header from the shapes, then each tensor in chunks. Returns its bytes."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dims in tensors:
        header[name] = {"dtype": "BF16", "shape": list(dims), "data_offsets": [offset, offset + 2 * math.prod(dims)]}
        offset += 2 * math.prod(dims)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for name, dims in tensors:
            left = math.prod(dims)
            while left:
                count = min(left, _CHUNK // 2)
                f.write(_bf16_chunk(rng, name, count))
                left -= count
    return offset


def write_llama_folder(folder: Path, shape: dict, shard_bytes=SHARD_BYTES, seed=0) -> Path:
    """A Hugging Face Llama folder of random bfloat16 weights, shard by shard; returns ``folder``.

    Example: ``write_llama_folder(Path("/tmp/llama"), SIZES["tiny"], shard_bytes=200_000)``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    dims = dict(llama_tensors(shape))
    shards = [[(n, dims[n]) for n in names] for names in plan_shards({n: 2 * math.prod(d) for n, d in dims.items()},
                                                                      shard_bytes)]
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards, start=1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        total += write_shard(folder / name, tensors, rng)
        weight_map.update({t: name for t, _ in tensors})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    (folder / "config.json").write_text(json.dumps(llama_config(shape), indent=2) + "\n")
    (folder / "generation_config.json").write_text(json.dumps({"bos_token_id": 128000, "eos_token_id": 128001}))
    return folder


def cached_folder(size: str, log=print) -> Path:
    """The cached folder of ``size`` (SIZES), written first where it is missing or incomplete."""
    cache = Path(os.environ.get("PORTX_BENCH_CACHE") or Path.home() / ".cache" / "portx-bench")
    folder = cache / f"llama-{size}-bf16"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        log(f"writing {folder} (random bfloat16, once per machine)")
        start = time.perf_counter()
        write_llama_folder(folder, SIZES[size])
        (folder / ".complete").write_text(f"{time.perf_counter() - start:.1f} s\n")
    return folder


def weight_bytes(folder: Path) -> int:
    """The weight bytes the folder's index declares."""
    return json.loads((folder / "model.safetensors.index.json").read_text())["metadata"]["total_size"]


def _children(pid) -> list:
    found, stack = [], [pid]
    while stack:
        p = stack.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                stack += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def tree_rss(pid) -> int:
    """Resident bytes of ``pid`` and its descendants (VmRSS summed), 0 when it is gone."""
    total = 0
    for p in _children(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def watched(cmd, limit_bytes, timeout, env=None) -> dict:
    """Run ``cmd`` in its own process group, sampling its tree's RSS; kill it past ``limit_bytes`` or ``timeout``.

    Returns {"seconds", "peak", "code", "last", "killed": None | "memory" | "time", "tail": the last 60 lines}.
    """
    log = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    peak, killed = 0, None
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        if killed is None and (peak > limit_bytes or time.perf_counter() - start > timeout):
            killed = "memory" if peak > limit_bytes else "time"
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    log.seek(0)
    lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    return {"seconds": seconds, "peak": peak, "code": proc.returncode, "last": lines[-1][:160] if lines else "",
            "killed": killed, "tail": lines[-60:]}  # --json keeps it: portx's stage times, a traceback


def _python(code, *args) -> list:
    return [sys.executable, "-c", code, *args]


_IMPORTS = "import portx.api, torch, jax, keras, transformers"
_PORTX = "import sys; from portx.cli import main; sys.argv[0] = 'portx'; main()"
_KERAS_HUB = ("import sys, keras_hub; m = keras_hub.models.Llama3Backbone.from_preset(sys.argv[1]); "
              "m.save_to_preset(sys.argv[2], max_shard_size=2)")


def floor(folder: Path, out: Path) -> tuple:
    """(read seconds, write seconds): every shard read once, then the same bytes written once into ``out``."""
    shards = sorted(folder.glob("model-*.safetensors"))
    start = time.perf_counter()
    for path in shards:
        with open(path, "rb") as f:
            while f.read(_CHUNK):
                pass
    read = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    block = b"\0" * _CHUNK
    start = time.perf_counter()
    for path in shards:
        left = path.stat().st_size
        with open(out / path.name, "wb") as f:
            while left:
                left -= f.write(block[:min(left, _CHUNK)])
    return read, time.perf_counter() - start


def resident_share(paths) -> float:
    """The share of ``paths``' pages in the page cache: ``mincore`` over a read-only mapping of each file."""
    import ctypes
    libc, page = ctypes.CDLL(None, use_errno=True), os.sysconf("SC_PAGE_SIZE")
    libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                              ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    resident = total = 0
    for path in paths:
        size, pages = path.stat().st_size, -(-path.stat().st_size // page)
        fd = os.open(path, os.O_RDONLY)
        try:
            address = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
            if address in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), f"mmap failed on {path}")
            try:
                vec = (ctypes.c_ubyte * pages)()
                if libc.mincore(address, size, vec) != 0:
                    raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
                resident += int((np.frombuffer(vec, np.uint8) & 1).sum())
            finally:
                libc.munmap(address, size)
        finally:
            os.close(fd)
        total += pages
    return resident / max(total, 1)


def drop_cached(folder: Path) -> float:
    """Drop ``folder``'s shards from the page cache; the share of their pages still resident afterwards."""
    shards = sorted(folder.glob("model-*.safetensors"))
    for path in shards:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return resident_share(shards)


def measure(size, only, limit, timeout, log=print, portx_args=(), cold=False) -> list:
    """Rows for one size: imports, portx, keras-hub, the floor (those in ``only``); ``portx_args`` go after
    ``portx convert FOLDER --to keras-jax -o OUT`` (``--no-shard-proof``); ``cold``: each row from disk."""
    folder = cached_folder(size, log)

    def start(what):
        log(f"{size}: {what} ..." + (f" (after the drop, {drop_cached(folder):.1%} of the shards cached)"
                                     if cold else ""))

    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    rows = [dict(size=size, what="imports", **watched(_python(_IMPORTS), limit, timeout, env))]
    with tempfile.TemporaryDirectory(prefix="portx-bench-", dir=folder.parent) as tmp:
        runs = {"portx": _python(_PORTX, "convert", str(folder), "--to", "keras-jax", "-o", f"{tmp}/portx",
                                 *portx_args),
                "keras-hub": _python(_KERAS_HUB, str(folder), f"{tmp}/keras-hub")}
        for what, cmd in runs.items():
            if what in only:
                start(what)
                rows.append(dict(size=size, what=what, **watched(cmd, limit, timeout, env)))
        if "floor" in only:
            start("floor")
            read, write = floor(folder, Path(tmp) / "floor")
            rows += [dict(size=size, what="floor read", seconds=read, code=0, last="", killed=None),
                     dict(size=size, what="floor write", seconds=write, code=0, last="", killed=None)]
    for row in rows:
        row["weights"] = weight_bytes(folder)
    return rows


def _result(row, limit) -> str:
    if row["killed"] == "memory":
        return f"killed at {limit / 1e9:.1f} GB after {row['seconds']:.0f} s (out of memory)"
    if row["killed"] == "time":
        return f"killed after {row['seconds']:.0f} s (timeout)"
    return "ok" if row["code"] == 0 else f"exit {row['code']}: {row['last']}"


def table(rows, limit) -> str:
    """The rows as a fixed-width table (see the module docstring for the columns)."""
    base = {r["size"]: r.get("peak", 0) for r in rows if r["what"] == "imports"}
    lines = [f"{'size':<5} {'weights GB':>10} {'what':<12} {'seconds':>8} {'peak GB':>8} {'above GB':>8} "
             f"{'/weights':>8}  result"]
    for r in rows:
        peak = r.get("peak")
        above = peak - base[r["size"]] if peak and r["what"] != "imports" else None
        above = above if above and above > 0 else None  # below the imports' peak: the process failed early
        cells = [f"{r['size']:<5}", f"{r['weights'] / 1e9:>10.3f}", f"{r['what']:<12}", f"{r['seconds']:>8.1f}",
                 f"{peak / 1e9:>8.2f}" if peak else f"{'':>8}", f"{above / 1e9:>8.2f}" if above else f"{'':>8}",
                 f"{above / r['weights']:>8.2f}" if above else f"{'':>8}"]
        lines.append(" ".join(cells) + "  " + _result(r, limit))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="tiny,1b", help="comma-separated: tiny, 1b, 3b, 8b (default tiny,1b)")
    parser.add_argument("--only", default="portx,keras-hub,floor", help="which rows besides imports")
    parser.add_argument("--mem-limit-gb", type=float, default=16.0, help="kill a process tree above this RSS")
    parser.add_argument("--timeout", type=float, default=1800, help="kill a process tree after this many seconds")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--portx-args", default="", help="more arguments for portx convert, space-separated "
                                                         "(--portx-args=\"--no-shard-proof --profile\")")
    parser.add_argument("--cold", action="store_true", help="drop the folder from the page cache before each row")
    args = parser.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size {unknown[0]!r}; choose from {', '.join(SIZES)}")
    limit = int(args.mem_limit_gb * 1e9)
    rows = []
    for size in sizes:
        rows += measure(size, set(args.only.split(",")), limit, args.timeout, log=lambda m: print(m, flush=True),
                        portx_args=args.portx_args.split(), cold=args.cold)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"limit {args.mem_limit_gb:g} GB{', portx ' + args.portx_args if args.portx_args else ''}"
          f"{', cold page cache' if args.cold else ''}\n"
          + table(rows, limit))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
