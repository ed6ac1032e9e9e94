import torch

from model import TinyNet, build_optim


def test_resume_restores_optimizer_and_scheduler(tmp_path):
    model = TinyNet()
    optimizer, scheduler = build_optim(model, milestones=(3, 6))
    path = tmp_path / "checkpoint.pth"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "lr_scheduler": scheduler.state_dict()}, path)

    checkpoint = torch.load(path, weights_only=True)
    restored_model = TinyNet()
    restored_model.load_state_dict(checkpoint["model"])
    restored_optimizer = torch.optim.AdamW(restored_model.parameters(), lr=1e-3)
    restored_optimizer.load_state_dict(checkpoint["optimizer"])
    restored = torch.optim.lr_scheduler.MultiStepLR(restored_optimizer, milestones=[1], gamma=0.1)
    restored.load_state_dict(checkpoint["lr_scheduler"])
    assert restored.milestones == scheduler.milestones
    assert restored.get_last_lr() == [group["lr"] for group in restored_optimizer.param_groups]
