import argparse

import torch
from torch import nn


class QNetwork(nn.Module):
    def __init__(self, n_obs=4, n_actions=2, n_atoms=51):
        super().__init__()
        self.n_actions, self.n_atoms = n_actions, n_atoms
        self.net = nn.Sequential(nn.Linear(n_obs, 120), nn.ReLU(), nn.Linear(120, n_actions * n_atoms))

    def forward(self, x):
        return self.net(x).view(len(x), self.n_actions, self.n_atoms)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--exp-name", default="c51")
    args = parser.parse_args()
    run_name = f"CartPole__{args.exp_name}"
    q_network = QNetwork()
    optimizer = torch.optim.Adam(q_network.parameters(), lr=2.5e-4)
    for step in range(1000):
        obs = torch.randn(32, 4)
        loss = -torch.log_softmax(q_network(obs), dim=-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model_path = f"runs/{run_name}/{args.exp_name}.model"
    torch.save({"model_weights": q_network.state_dict(), "args": vars(args)}, model_path)
    from rl_evals.c51_eval import evaluate

    evaluate(model_path, QNetwork)
