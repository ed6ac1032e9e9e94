import torch
from torch import optim
from torch.distributions import Normal

from policy import GaussianPolicy, SquashedPolicy
from returns import DiscountedReturns


class Reinforce:
    def __init__(self, n_inputs, hidden, n_actions, lr=1e-3, gamma=0.99):
        self.policy = GaussianPolicy(n_inputs, hidden, n_actions)
        self.squashed = SquashedPolicy(GaussianPolicy(n_inputs, hidden, n_actions))
        self.optimizer = optim.Adam(self.policy.parameters(), lr=lr)
        self.returns = DiscountedReturns(gamma)
        self.log_probs = []
        self.rewards = []

    def select_action(self, state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        mean, std = self.policy.forward(state)  # expect: call-forward-directly
        dist = Normal(mean, std)
        action = dist.sample()
        self.log_probs.append(dist.log_prob(action).sum())
        return action.squeeze(0).numpy()

    def finish_episode(self):
        returns = self.returns.forward(self.rewards)  # ok: not a module
        loss = -(torch.stack(self.log_probs) * returns).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.log_probs.clear()
        self.rewards.clear()
