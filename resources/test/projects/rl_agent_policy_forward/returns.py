import torch


class DiscountedReturns:
    """A plain helper object whose method happens to be called `forward`."""

    def __init__(self, gamma):
        self.gamma = gamma

    def forward(self, rewards):
        out, running = [], 0.0
        for r in reversed(rewards):
            running = r + self.gamma * running
            out.insert(0, running)
        returns = torch.tensor(out)
        return (returns - returns.mean()) / (returns.std() + 1e-8)
