import argparse

import torch
import torch.nn.functional as F
from torch import nn


class QNetwork(nn.Module):
    def __init__(self, n_obs=4, n_actions=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_obs, 120), nn.ReLU(), nn.Linear(120, n_actions))

    def forward(self, x):
        return self.net(x)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--exp-name", default="dqn")
    parser.add_argument("--save-model", action="store_true")
    args = parser.parse_args()
    run_name = f"CartPole__{args.exp_name}"
    q_network = QNetwork()
    optimizer = torch.optim.Adam(q_network.parameters(), lr=2.5e-4)
    for step in range(1000):
        obs, target = torch.randn(32, 4), torch.randn(32)
        loss = F.mse_loss(q_network(obs).max(dim=1).values, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if args.save_model:
        model_path = f"runs/{run_name}/{args.exp_name}.model"
        torch.save(q_network.state_dict(), model_path)
        from rl_evals.dqn_eval import evaluate

        evaluate(model_path, QNetwork)
