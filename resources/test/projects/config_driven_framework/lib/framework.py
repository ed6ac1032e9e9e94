from pathlib import Path

import torch

import lib.nets


class Framework:
    """Everything built from configuration: the classes are looked up by name."""

    def __init__(self, model_opts, optimizer_opts, out_dir="outputs"):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.out_dir = out_dir
        model_def = getattr(lib.nets, model_opts["name"])
        self.model = model_def(**model_opts["args"]).to(self.device)
        optimizer_def = getattr(torch.optim, optimizer_opts["name"])
        self.optimizer = optimizer_def(self.model.parameters(), **optimizer_opts["args"])
        self.loss_fn = torch.nn.CrossEntropyLoss()

    def optimize(self, x, y):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x.to(self.device)), y.to(self.device))
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def save(self, epoch):
        torch.save(self.model.state_dict, Path(self.out_dir, f"model_{epoch}.pt"))  # expect: method-reference-not-called
        torch.save(self.optimizer.state_dict, Path(self.out_dir, f"optim_{epoch}.pt"))  # expect: method-reference-not-called

    def save_best(self):
        torch.save(
            {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()},
            Path(self.out_dir, "best.pt"),
        )
