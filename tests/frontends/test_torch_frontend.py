"""The PyTorch frontend: file formats, safe loading, scopes, folding, unsupported-op collection."""
import zipfile

import pytest
import torch
from torch import nn

import portx  # noqa: F401
from portx.errors import BadInput, UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from portx.frontends.input_spec import parse_input_spec
from portx.frontends.torch.files import load_torch_source
from portx.frontends.torch.live import from_module
from tests.support.unsupported import TORCH_OP, TORCH_OP_TOO, also_unsupported, unsupported


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x)) + torch.arange(2).float()


def test_scopes_follow_module_paths():
    graph = lower_exported(export_module(Small(), (torch.randn(1, 4),)))
    scopes = [n.scope for n in graph.nodes]
    assert "body.0" in scopes and "head" in scopes
    assert set(graph.params) >= {"body.0.weight", "head.weight"}


def test_constants_are_folded_by_torch_and_positions_computed_from_them():
    """arange runs in torch and is stored; what reads it (here a cast) stays an op (Note [run-time tables])."""
    graph = lower_exported(export_module(Small(), (torch.randn(1, 4),)))
    assert not any(n.op.name == "arange" for n in graph.nodes)
    folded = [a for k, a in graph.params.items() if a.shape == (2,) and "weight" not in k and "bias" not in k]
    assert folded and folded[0].tolist() == [0, 1]
    (cast,) = [n for n in graph.nodes if n.op.name == "cast"]
    assert graph.is_param(cast.inputs[0])


def test_pt2_round_trip(tmp_path):
    torch.export.save(torch.export.export(Small().eval(), (torch.randn(1, 4),)), tmp_path / "m.pt2")
    src = load_torch_source(tmp_path / "m.pt2")
    assert tuple(src.example_inputs[0].shape) == (1, 4)


def test_ts2ep_converter_private_api_is_pinned():
    """torch._export.converter.TS2EPConverter turns a TorchScript module into an ExportedProgram."""
    from torch._export.converter import TS2EPConverter

    model, x = Small().eval(), torch.randn(1, 4)
    for scripted in (torch.jit.trace(model, (x,)), torch.jit.script(model)):
        ep = TS2EPConverter(scripted, (x,)).convert()
        assert isinstance(ep, torch.export.ExportedProgram)
        torch.testing.assert_close(ep.module()(x), model(x))


def test_torchscript_needs_input_shapes(tmp_path):
    torch.jit.save(torch.jit.trace(Small().eval(), (torch.randn(1, 4),)), tmp_path / "m.pt")
    with pytest.raises(BadInput, match="TorchScript.*runs code"):
        load_torch_source(tmp_path / "m.pt", ["x:1x4"])
    with pytest.raises(BadInput, match="--input"):
        load_torch_source(tmp_path / "m.pt", trust_pickle=True)
    src = load_torch_source(tmp_path / "m.pt", ["x:1x4"], trust_pickle=True)
    assert lower_exported(src.program).inputs[0].type.shape == (1, 4)


def test_state_dict_is_refused_with_what_to_pass(tmp_path):
    torch.save(Small().state_dict(), tmp_path / "sd.pt")
    with pytest.raises(BadInput, match="state_dict .* torch.export.save"):
        load_torch_source(tmp_path / "sd.pt")


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_is_not_loaded_without_trust(tmp_path):
    marker = tmp_path / "pwned"
    with open(tmp_path / "evil.pt", "wb") as f:
        torch.save({"x": _Evil(str(marker))}, f)
    with pytest.raises(BadInput, match="--trust-pickle"):
        load_torch_source(tmp_path / "evil.pt")
    assert not marker.exists()


def test_pickled_module_loads_with_trust(tmp_path):
    torch.save(Small().eval(), tmp_path / "full.pt")
    with pytest.raises(BadInput, match="full pickle"):
        load_torch_source(tmp_path / "full.pt", ["x:1x4"])
    src = load_torch_source(tmp_path / "full.pt", ["x:1x4"], trust_pickle=True)
    assert isinstance(src.module, nn.Module)


@pytest.mark.parametrize("content", [b"", b"\x00garbage" * 10, "half"])
def test_unreadable_files(tmp_path, content):
    path = tmp_path / "m.pt2"
    if content == "half":
        torch.export.save(torch.export.export(Small().eval(), (torch.randn(1, 4),)), path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(content)
    with pytest.raises(BadInput, match="m.pt2"):
        load_torch_source(path)


def test_zip_of_another_kind_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "m.pt", "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(BadInput, match="m.pt"):
        load_torch_source(tmp_path / "m.pt")


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        return unsupported(self.a(x)) + unsupported(self.b(x)) + also_unsupported(x)


def test_all_unsupported_ops_are_listed_with_scopes():
    with pytest.raises(UnsupportedOps, match=rf"2 unsupported ops: {TORCH_OP} at .*\(x2\).*{TORCH_OP_TOO}") as info:
        lower_exported(export_module(Unsupported(), (torch.randn(2, 3),)))
    assert info.value.exit_code == 3


def test_live_module_requires_example_inputs():
    with pytest.raises(BadInput, match="example_inputs"):
        from_module(Small(), None)


@pytest.mark.parametrize("spec,want", [("x:1x3x8x8", ("x", (1, 3, 8, 8), "float32")),
                                       ("ids:2x16:int64", ("ids", (2, 16), "int64"))])
def test_input_spec(spec, want):
    assert parse_input_spec(spec) == want


@pytest.mark.parametrize("spec", ["x:1xax3", "x:1x3:float99", "::"])
def test_bad_input_spec(spec):
    with pytest.raises(BadInput, match="NAME:SHAPE"):
        parse_input_spec(spec)
