"""uint16/uint32/uint64 arithmetic in the written PyTorch (Note [unsigned in int64] in targets/torch_xla/unsigned.py).

PyTorch has no CPU kernels for ``+``, ``-``, ``<``, shifts or ``minimum`` on uint32; the emitter computes them in
int64 and narrows back with the unsigned wrap-around. Each graph here is checked against the IR's NumPy
reference, and the wrap-around values are spelled out.
"""
import numpy as np
import pytest
import torch

from portx.ir import GraphBuilder, TensorType
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import run_reference
from tests.support.harness import emit_and_load

_TOP = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF}


def _arith_graph(dtype):
    """add, sub, mul, shifts, not, neg, minimum, trunc division and comparisons on two unsigned vectors and a
    stored unsigned constant."""
    b = GraphBuilder(f"{dtype}_arith")
    x = b.input("x", TensorType((6,), dtype))
    y = b.input("y", TensorType((6,), dtype))
    one = b.param("one", np.array(1, dtype=dtype))
    shift = b.param("shift", np.array([0, 1, 3, 15, 31, 7], dtype=dtype)[:6] % np.iinfo(dtype).bits)
    outs = [b.emit("add", [x, y], hint="total"),
            b.emit("sub", [x, y], hint="diff"),
            b.emit("sub", [x, one], hint="less_one"),
            b.emit("mul", [x, y], hint="prod"),
            b.emit("bitwise_left_shift", [x, shift], hint="shl"),
            b.emit("bitwise_right_shift", [x, shift], hint="shr"),
            b.emit("bitwise_xor", [x, y], hint="xor"),
            b.emit("bitwise_not", [x], hint="inverted"),
            b.emit("neg", [y], hint="negated"),
            b.emit("minimum", [x, y], hint="low"),
            b.emit("div", [x, b.emit("bitwise_or", [y, one], hint="odd")], {"rounding_mode": "trunc"}, hint="quot"),
            b.emit("lt", [x, y], hint="less"),
            b.emit("ge", [x, y], hint="ge"),
            b.emit("eq", [x, y], hint="same")]
    return b.finish(outs)


def _inputs(dtype):
    top = _TOP[dtype]
    x = np.array([0, 1, 5, top, top - 3, 1 << (np.iinfo(dtype).bits - 1)], dtype=dtype)
    y = np.array([1, 1, 7, 2, top, 3], dtype=dtype)
    return x, y


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_unsigned_arithmetic_wraps_like_the_reference(tmp_path, dtype):
    graph = _arith_graph(dtype)
    x, y = _inputs(dtype)
    model, code = emit_and_load(graph, tmp_path)
    assert f"& 0x{_TOP[dtype]:X}).to(torch.{dtype})" in code and ".to(torch.int64)" in code
    env = run_reference(graph, [x, y])
    got = run_torch(model, [x, y])
    for value, have in zip(graph.outputs, got):
        want = np.asarray(env[value])
        assert have.dtype == want.dtype == np.dtype(value.type.dtype), (value.name, have.dtype, want.dtype)
        np.testing.assert_array_equal(have, want, err_msg=f"{value.name}\n{code}")
    total, diff, less_one = got[:3]
    top = _TOP[dtype]
    assert total[3] == 1 and diff[0] == top and less_one[0] == top  # top + 2, 0 - 1, 0 - 1 wrap around
    assert got[4][4] == (((top - 3) << 31) & top if dtype == "uint32" else ((top - 3) << 15) & top)


def test_moves_stay_unsigned_and_uint64_keeps_its_bits(tmp_path):
    """Reshape, slice and concat run on uint32 as written; uint32 indices are read as int64; uint64 add/xor are
    exact mod 2**64."""
    b = GraphBuilder("moves")
    x = b.input("x", TensorType((2, 3), "uint32"))
    w = b.input("w", TensorType((3,), "uint64"))
    flat = b.emit("reshape", [x], {"shape": (6,)}, hint="flat")
    part = b.emit("slice", [flat], {"axis": 0, "start": 1, "end": 4, "step": 1}, hint="part")
    both = b.emit("concat", [part, part], {"axis": 0}, hint="both")
    big = b.param("big", np.array([2 ** 64 - 1, 2 ** 63, 5], dtype=np.uint64))
    wrapped = b.emit("add", [w, big], hint="wrapped")
    mixed = b.emit("bitwise_xor", [w, big], hint="mixed")
    picked = b.emit("index_select", [b.param("table", np.arange(10, 16, dtype=np.float32)), flat], {"axis": 0},
                    hint="picked")  # uint32 indices: torch indexes with int32/int64 only
    graph = b.finish([both, wrapped, mixed, picked])
    xs = [np.array([[5, 0, 3], [1, 4, 2]], np.uint32), np.array([1, 2 ** 63, 9], np.uint64)]
    model, code = emit_and_load(graph, tmp_path)
    assert "flat = x.reshape(6)" in code and "to(torch.uint64)" in code and "flat.to(torch.int64)" in code
    env = run_reference(graph, xs)
    for value, have in zip(graph.outputs, run_torch(model, xs)):
        np.testing.assert_array_equal(have, np.asarray(env[value]), err_msg=value.name)
    assert run_torch(model, xs)[1].tolist() == [0, 0, 14]


def test_torch_lacks_the_uint32_kernels_this_works_around():
    """If PyTorch gains CPU uint32 add, Note [unsigned in int64] can narrow its op list."""
    a = torch.tensor([1, 2], dtype=torch.uint32)
    with pytest.raises(NotImplementedError):
        a + a
