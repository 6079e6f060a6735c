"""Runs an emitted torch model.py under its ``tp_plan()`` on N CPU processes (gloo), for
tests/targets/torch_xla/test_sharding.py and benchmarks/sharding.py.

Example: ``outputs = run_tp_plan("out/", [ids], world=4)`` (rank 0's output, gathered).
"""
import os
import socket

import numpy as np
import torch
import torch.multiprocessing as mp

from portx.targets.codegen import import_by_path

__all__ = ["run_tp_plan"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, folder, arrays, queue):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        module = import_by_path(os.path.join(folder, "model.py"))
        model = parallelize_module(module.load_model(), init_device_mesh("cpu", (world,)), module.tp_plan())
        with torch.no_grad():
            out = model(*[torch.from_numpy(a) for a in arrays])
        out = out.full_tensor() if hasattr(out, "full_tensor") else out
        local = sum(p.to_local().numel() if hasattr(p, "to_local") else p.numel() for p in model.parameters())
        if rank == 0:
            queue.put((out.numpy(), local))
    finally:
        dist.destroy_process_group()


def run_tp_plan(folder, arrays, world) -> tuple:
    """(rank 0's output, the parameter elements rank 0 holds) for the model in ``folder`` on ``world``
    processes under its tp_plan()."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, str(folder), arrays, queue)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        result = queue.get(timeout=600)
    finally:
        for p in procs:
            p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return np.asarray(result[0]), result[1]
