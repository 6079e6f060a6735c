"""The emitted torch module trains unchanged inside a lightning.Trainer (CPU here; docs/tpu.md "TPU slices" shows the
accelerator="tpu" recipe): three SGD steps give the same losses and weights as a plain torch loop."""
import torch
import torch.nn.functional as F

from portx.passes.pipeline import run_passes
from portx.targets.codegen import import_by_path
from portx.targets.torch_xla.emitter import emit_torch
from tests.support.harness import lower_torch
from tests.support.tiny_llama import tiny_llama

STEPS = 3


def _plain_steps(net, ids, target):
    optimizer, losses = torch.optim.SGD(net.parameters(), lr=0.1), []
    net.train()
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = F.mse_loss(net(ids), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_emitted_module_fits_in_a_lightning_trainer_like_a_plain_loop(tmp_path):
    import lightning as L

    class Wrapped(L.LightningModule):
        def __init__(self, net):
            super().__init__()
            self.net, self.losses = net, []

        def training_step(self, batch, _):
            loss = F.mse_loss(self.net(batch[0]), batch[1])
            self.losses.append(loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    model, (ids,) = tiny_llama()
    emit_torch(run_passes(lower_torch(model, ids)[0], "torch-xla"), tmp_path)
    module = import_by_path(tmp_path / "model.py")
    target = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(1))
    plain = module.load_model()
    want = _plain_steps(plain, ids, target)
    wrapped = Wrapped(module.load_model())
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids, target), batch_size=2)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=STEPS, max_epochs=STEPS, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=tmp_path)
    trainer.fit(wrapped, data)
    assert len(wrapped.losses) == STEPS and max(abs(a - b) for a, b in zip(wrapped.losses, want)) <= 1e-6
    assert wrapped.losses[-1] < wrapped.losses[0]
    for (name, a), b in zip(plain.state_dict().items(), wrapped.net.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=name)
