import torch


class AmpStepper:
    """Mixed-precision update: scaled backward, unscale, clip, step."""

    def __init__(self, model, optimizer, max_norm=1.0, enabled=True):
        self.model = model
        self.optimizer = optimizer
        self.max_norm = max_norm
        self.scaler = torch.amp.GradScaler("cuda", enabled=enabled)

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def step(self):
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
