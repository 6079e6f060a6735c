"""Divided free dims (Note [divided dims] in session/dims/find.py): a U-Net pools its free image size by 2 and
upsamples it back (``h // 2``); torch's ``FloorDiv`` sets the second size two away, the SymDim carries ``div=2``
and both targets write it (torch: ``x.shape[2] // 2``; Keras: None dims and FreeShape's ``// 2``)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
from portx.ir import SymDim
from portx.passes.free_dims import _affine
from portx.targets import find_target


class UNet(nn.Module):
    """Two levels: conv, max-pool by 2, conv, nearest upsample by 2, concat with the skip, conv."""

    def __init__(self):
        super().__init__()
        self.down, self.mid, self.up = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1), \
            nn.Conv2d(8, 2, 3, padding=1)

    def forward(self, x):
        skip = torch.relu(self.down(x))
        y = torch.relu(self.mid(F.max_pool2d(skip, 2)))
        return self.up(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), skip], 1))


def _unet():
    torch.manual_seed(0)
    return UNet().eval()


def test_a_half_step_is_a_divided_symdim():
    dim = _affine(16, 17, "x_2", 32, 34, "pool")
    assert dim == SymDim("x_2", 1, 0, 16, 2) and str(dim) == "x_2//2" and dim.at(48) == 24
    assert SymDim("x_2", 1, 1, 16, 2).at(33) == 17 and str(SymDim("x_2", 1, 1, 16, 2)) == "(x_2+1)//2"
    assert SymDim("batch", 4, 0, 8) == SymDim("batch", 4, 0, 8, 1)  # every earlier constructor call holds


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_unet_keeps_its_image_size_free(to, tmp_path):
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    result = portx.convert(_unet(), to=to, example_inputs=(x,), dynamic=["x:2", "x:3"], grad=False,
                           out=tmp_path / "o")
    rows = {row["symbol"]: row for row in result.report["dynamic"]}
    assert rows["x_2"]["free"] and rows["x_3"]["free"] and rows["batch"]["free"], result.report["warnings"]
    assert rows["x_2"]["sites"] == [["x", 2]] and rows["x_3"]["sites"] == [["x", 3]]
    assert [c["size"] for c in rows["x_2"]["verified"]] == [32, 38]  # even sizes only: torch's cat needs them
    assert any("multiples of 2" in w for w in result.report["warnings"])
    for h, w in ((32, 32), (48, 64), (64, 64)):
        image = torch.randn(2, 3, h, w, generator=torch.Generator().manual_seed(h + w))
        got = find_target(to).run(result.model, [image.numpy()])[0]
        with torch.no_grad():
            want = _unet()(image).numpy()
        assert got.shape == want.shape == (2, 2, h, w) and np.allclose(got, want, atol=1e-5)
    written = (tmp_path / "o" / "model.py").read_text()
    if to == "keras-jax":  # None dims in the Input, and the pooled size read as x.shape[2] // 2
        assert "shape=(3, None, None)" in written and "[0, 2, 1, 0, 2]" in written
